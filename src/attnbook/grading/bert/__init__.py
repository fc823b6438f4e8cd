"""Checks for chapter 3's exercises (``solutions/03-bert``): BERT's input, masking, losses, fine-tuning.

One module per graded part, in the notebook's order: the input ids, segment
ids and embeddings (:mod:`.embeddings`, ``check_bert_embeddings``), the
masking of tokens (:mod:`.masking`, ``check_mask_tokens``), the MLM loss
(:mod:`.loss`, ``check_mlm_loss``), next-sentence pairs (:mod:`.nsp`,
``check_nsp_pairs``), the ``[CLS]`` classifier with its pooler
(:mod:`.classifier`, ``check_cls_classifier``), freezing all but the top
layers (:mod:`.freezing`, ``check_freeze_all_but_top``) and WordPiece
encoding (:mod:`.wordpiece`, ``check_wordpiece_encode``); then three parts
that ask for reasoning: an untrained model's MLM loss, predicted before it is
measured (:mod:`.predict`, ``check_initial_mlm_loss``), why the masking recipe
and next-sentence pairs are what they are (:mod:`.reasons`,
``check_masking_reasons``), and what shuffling a sentence does with and
without position embeddings, read from an ablation's figure (:mod:`.ablation`,
``check_positions_ablation``); the last two are answered by letter
(:mod:`attnbook.grading.reasoning`), their keys hidden. Each other part compares the
student's code with a private copy of :mod:`attnbook.bert` or
:mod:`attnbook.tokenizers.wordpiece` and names the mistakes students make
most (special tokens masked, 80/10/10 applied to every token, random
replacements drawn from the specials, a loss over all positions, segment ids
off by one, a pooler that reads the mean, a head frozen too, the shortest
match).

>>> def encode_word(word, vocab, unk_token="[UNK]"):  # the shortest match first
...     pieces, start = [], 0
...     while start < len(word):
...         for end in range(start + 1, len(word) + 1):
...             piece = word[start:end] if start == 0 else "##" + word[start:end]
...             if piece in vocab:
...                 pieces.append(piece)
...                 start = end
...                 break
...         else:
...             return [unk_token]
...     return pieces
>>> check_wordpiece_encode(encode_word)
Traceback (most recent call last):
...
attnbook.grading.errors.CheckFailed: the shortest match was taken: WordPiece takes the longest piece ...
"""

from .ablation import check_positions_ablation
from .classifier import check_cls_classifier
from .embeddings import check_bert_embeddings
from .freezing import check_freeze_all_but_top
from .loss import check_mlm_loss
from .masking import check_mask_tokens
from .nsp import check_nsp_pairs
from .predict import check_initial_mlm_loss
from .reasons import check_masking_reasons
from .wordpiece import check_wordpiece_encode

__all__ = [
    "check_bert_embeddings",
    "check_mask_tokens",
    "check_mlm_loss",
    "check_nsp_pairs",
    "check_cls_classifier",
    "check_freeze_all_but_top",
    "check_wordpiece_encode",
    "check_initial_mlm_loss",
    "check_masking_reasons",
    "check_positions_ablation",
]
