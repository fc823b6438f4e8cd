"""Checks for chapter 6's exercises (``solutions/06-vit``): patches, the ViT's embedding and block, rollout, MAE, DETR.

One module per graded part, in the notebook's order: :mod:`.patches`
(``check_patchify``), :mod:`.embedding` (``check_vit_embedding``: patch
embedding, class token, positions), :mod:`.block` (``check_pre_norm_block``),
:mod:`.rollout` (``check_attention_rollout``), :mod:`.masking`
(``check_random_masking``, by bookkeeping and statistics) and :mod:`.matching`
(``check_matching``: DETR's matching cost and the Hungarian assignment), then
three reasoning parts: :mod:`.tokens` (``check_vit_tokens``: the sequence length
and attention size of an image, predicted), :mod:`.concepts`
(``check_vit_concepts``: choices on the class token, the patch size's cost and
MAE's encoder) and :mod:`.ablation` (``check_position_ablation``: choices on a
figure of the class token under a patch shuffle, with and without positions;
their keys are the instructor's hidden cases). Each implementation part
compares the student's object with a private copy of :mod:`attnbook.vit`
(:mod:`._common`) and names the mistakes students make most (patches cut
column-major or channels first, the class token appended or left without a
position, post-norm, rollout without the identity or the renormalisation,
masking that keeps the wrong share or loses the restore order, a row-wise
argmin for matching, the class token forgotten in a count).
"""

from .ablation import check_position_ablation
from .block import check_pre_norm_block
from .concepts import check_vit_concepts
from .embedding import check_vit_embedding
from .masking import check_random_masking
from .matching import check_matching
from .patches import check_patchify
from .rollout import check_attention_rollout
from .tokens import check_vit_tokens

__all__ = [
    "check_patchify",
    "check_vit_embedding",
    "check_pre_norm_block",
    "check_attention_rollout",
    "check_random_masking",
    "check_matching",
    "check_vit_tokens",
    "check_vit_concepts",
    "check_position_ablation",
]
