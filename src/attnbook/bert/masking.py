"""Masked language modelling: which tokens to hide, what to put there, and the loss.

``mask_tokens`` follows BERT's recipe (Devlin et al. 2018,
https://arxiv.org/abs/1810.04805, section 3.1 and appendix C.2): each
non-special token is *chosen* with probability 15 %; a chosen token becomes
``[MASK]`` 80 % of the time, a random non-special token 10 % of the time, and
stays itself 10 % of the time. The model must predict the original token at
every chosen position and only there: ``labels`` hold it there and ``-100``
(ignored by the loss) everywhere else. The 10 % + 10 % keep the model from
learning that only ``[MASK]`` positions matter, since ``[MASK]`` never appears
when the model is fine-tuned.

``mlm_loss`` is the mean cross-entropy over the chosen positions only, and
``uniform_mlm_loss`` what it is for a model that has learnt nothing yet: one
whose logits are all equal spreads its bet evenly over the vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
import torch.nn.functional as F

from attnbook._checks import number_in, positive_int, token_ids

__all__ = ["IGNORE_INDEX", "mask_tokens", "mlm_loss", "uniform_mlm_loss"]

IGNORE_INDEX = -100  # a label equal to this is skipped by the loss (PyTorch's and Hugging Face's default)


def mask_tokens(
    ids: torch.Tensor,
    special_ids: Iterable[int],
    vocab_size: int,
    generator: torch.Generator | None = None,
    mlm_probability: float = 0.15,
    *,
    mask_id: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking of a batch of ids: returns ``(inputs, labels)``, both shaped like ``ids``.

    ``special_ids`` (``[PAD]``, ``[CLS]``, ``[SEP]``, ... ; ``mask_id`` is
    added to them) are never chosen; the random replacements are drawn
    uniformly from the ids in ``0 .. vocab_size - 1`` that are not special.
    ``generator`` makes the draw reproducible; ``ids`` is not modified.

    >>> g = torch.Generator().manual_seed(0)
    >>> ids = torch.tensor([[2, 10, 11, 12, 13, 3, 0]])  # [CLS] ... [SEP] [PAD]
    >>> inputs, labels = mask_tokens(ids, [0, 2, 3], vocab_size=20, generator=g,
    ...                              mlm_probability=0.5, mask_id=4)
    >>> inputs                                          # 11, 12, 13 chosen, all three -> [MASK]
    tensor([[ 2, 10,  4,  4,  4,  3,  0]])
    >>> labels                                          # the originals where chosen, -100 elsewhere
    tensor([[-100, -100,   11,   12,   13, -100, -100]])
    """
    ids = token_ids("ids", ids, vocab_size=positive_int("vocab_size", vocab_size))
    number_in("mlm_probability", mlm_probability, 0.0, 1.0, "(]")
    if not isinstance(mask_id, int) or not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id must be an id in 0 .. {vocab_size - 1}, got {mask_id!r}")
    special = sorted({int(i) for i in special_ids} | {mask_id})
    if special[0] < 0 or special[-1] >= vocab_size:
        raise ValueError(f"special_ids must be ids in 0 .. {vocab_size - 1}, got {special}")
    ordinary = torch.ones(vocab_size, dtype=torch.bool)
    ordinary[special] = False
    ordinary_ids = ordinary.nonzero().squeeze(1).to(ids.device)  # (n_ordinary,): candidates for replacement
    if len(ordinary_ids) == 0:
        raise ValueError("every id is special: there is no token to draw random replacements from")

    device = generator.device if generator is not None else ids.device
    chosen_u = torch.rand(ids.shape, generator=generator, device=device).to(ids.device)
    action_u = torch.rand(ids.shape, generator=generator, device=device).to(ids.device)
    pick = torch.randint(len(ordinary_ids), ids.shape, generator=generator, device=device).to(ids.device)

    maskable = ordinary.to(ids.device)[ids]  # (B, T): True on ordinary tokens
    chosen = maskable & (chosen_u < mlm_probability)  # 15 % of the ordinary tokens
    to_mask = chosen & (action_u < 0.8)  # of those, 80 % -> [MASK]
    to_random = chosen & (action_u >= 0.8) & (action_u < 0.9)  # 10 % -> a random ordinary token
    # the remaining 10 % of the chosen stay as they are (but still carry a label)
    inputs = torch.where(to_mask, torch.full_like(ids, mask_id), ids)
    inputs = torch.where(to_random, ordinary_ids[pick], inputs)
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE_INDEX))
    return inputs, labels


def mlm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the positions whose label is not ``-100``.

    ``logits`` (B, T, V), ``labels`` (B, T). A batch with no chosen position
    has no loss to average: that is an error here rather than a NaN.

    >>> logits = torch.zeros(1, 3, 4)                    # uniform predictions over V = 4
    >>> round(mlm_loss(logits, torch.tensor([[-100, 2, -100]])).item(), 4)  # ln 4
    1.3863
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() != 3:
        got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a floating (B, T, V) tensor, got {got}")
    labels = token_ids("labels", labels)
    if labels.shape != logits.shape[:2]:
        raise ValueError(f"labels must have shape (B, T) = {tuple(logits.shape[:2])}, got {tuple(labels.shape)}")
    if not bool((labels != IGNORE_INDEX).any()):
        raise ValueError("labels are all -100: no position was chosen, so there is no loss to average")
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=IGNORE_INDEX)  # (B*T, V)


def uniform_mlm_loss(vocab_size: int) -> float:
    """The MLM loss, in nats, of a model whose logits are all equal: ``ln V``, whatever share is masked.

    Equal logits give every one of the ``V`` ids the probability ``1 / V``, so
    each chosen position costs ``-ln(1 / V) = ln V``; ``mlm_loss`` averages over
    the chosen positions, so how many were chosen does not change the mean. An
    untrained BERT, whose logits are near zero, starts close to it.

    >>> round(uniform_mlm_loss(4), 4)                    # as mlm_loss of zero logits over V = 4
    1.3863
    >>> round(uniform_mlm_loss(30522), 2)                # BERT-base's vocabulary
    10.33
    """
    positive_int("vocab_size", vocab_size)
    return math.log(vocab_size)
