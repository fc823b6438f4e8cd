"""What several of chapter 2's parts share: private references, token ids, the post-norm blocks' variants.

The checks compare the student's objects with private copies of
:mod:`attnbook.attention`, :mod:`attnbook.positional` and
:mod:`attnbook.transformer` (:data:`REF`, :data:`POS`, :data:`TR`), so that a
notebook that patches the public modules changes nothing here. What other
chapters share with this one (random inputs, blocks built beside a reference)
is in :mod:`attnbook.grading._shared`.

>>> ids = token_ids(0, 2, 5, pad_id=0, lengths=(5, 3))
>>> tuple(ids.shape), ids[1, 3:].tolist(), bool((ids[0] != 0).all())
((2, 5), [0, 0], True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .._core import private_modules
from .._shared import MHA_PROBLEM, sublayer_problem

REF, POS, TR = private_modules("attnbook.attention", "attnbook.positional", "attnbook.transformer")

# torch's own attention kernels, refused in the worker while an attention part is judged
ATTENTION_KERNELS = (
    "scaled_dot_product_attention",
    "_scaled_dot_product_attention_math",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_native_multi_head_attention",
)


def token_ids(seed: int, B: int, S: int, pad_id: int, vocab: int = 9,
              lengths: tuple[int, ...] | None = None) -> torch.Tensor:
    """(B, S) token ids with no pad_id among the real tokens, padded after ``lengths``."""
    g = torch.Generator().manual_seed(seed)
    real = [t for t in range(vocab) if t != pad_id]
    ids = torch.tensor(real)[torch.randint(len(real), (B, S), generator=g)]  # (B, S)
    if lengths is None:
        lengths = tuple(torch.randint(1, S + 1, (B,), generator=g).tolist())
    for b, n in enumerate(lengths):
        ids[b, n:] = pad_id
    return ids


# ------------------------------------------------------------------ the blocks (Parts 7 to 9)


def sublayers(x: torch.Tensor, subs: Sequence[Callable], norms: Sequence[Callable], mode: str = "post") -> torch.Tensor:
    """Residual connections with LayerNorm around the sublayers ``subs``, as the paper has them (``"post"``) or not."""
    for f, norm in zip(subs, norms, strict=True):
        if mode == "post":
            x = norm(x + f(x))  # the paper: LN(x + Sublayer(x))
        elif mode == "pre":
            x = x + f(norm(x))  # GPT-2, ViT
        elif mode == "no_residual":
            x = norm(f(x))
        else:  # "norm_inside"
            x = x + norm(f(x))
    return x


MODE_MESSAGES = {
    "pre": "looks like pre-norm, x + Sublayer(LayerNorm(x)): this block is post-norm as in the paper, "
           "x = LayerNorm(x + Sublayer(x)), the residual added before the norm",
    "no_residual": "the residual connection is missing: add the sublayer's input back, LayerNorm(x + Sublayer(x))",
    "norm_inside": "LayerNorm must normalise the sum x + Sublayer(x), not the sublayer's output alone",
}
FFN_PROBLEM = "ffn does not match the feed-forward network fc2(relu(fc1(x)))"


def encoder_sublayer_problem(module: torch.nn.Module, ref: torch.nn.Module, x: torch.Tensor,
                             mask: torch.Tensor | None) -> str | None:
    """:func:`sublayer_problem` for an encoder block: its ``self_attn`` and ``ffn`` beside the reference's."""
    return sublayer_problem(module, (
        ("self_attn", ref.self_attn, (x,), {} if mask is None else {"mask": mask},
         MHA_PROBLEM.format(name="self_attn")),
        ("ffn", ref.ffn, (x,), {}, FFN_PROBLEM),
    ))
