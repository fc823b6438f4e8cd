"""Part 2: ``mask_tokens(ids, special_ids, vocab_size, generator=None, mlm_probability=0.15, *, mask_id)
-> (inputs, labels)``, checked by counting over 200k tokens.

Deterministic rules are checked exactly: special tokens are never chosen,
``labels`` hold the original token where chosen and ``-100`` elsewhere, and
nothing changes outside the chosen positions. Proportions are checked against
their binomial spread: a count ``c`` of ``n`` trials with probability ``p``
must satisfy ``|c - n p| <= 6 sqrt(n p (1 - p)) + 2``, which a correct answer
breaks with probability below ``1e-8``, whatever way it draws. The grader
seeds every draw, so a grade never changes between runs.

>>> ids, special, vocab, mask_id, p, seed, mode = check_mask_tokens.visible[0].make()
>>> ids.numel() >= 100_000, p, mode  # p None: mlm_probability left out
(True, None, '')
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_pair, require_shape, require_unchanged, snapshot
from ._common import IGNORE

Z = 6.0
DEFAULT_P = 0.15  # mask_tokens' mlm_probability when the call leaves it out


def _case(seed: int, B: int, T: int, vocab: int, special: tuple[int, ...], mask_id: int, p: float | None = 0.15,
          mode: str = "", masked_share: float = 0.0) -> Callable[[], tuple]:
    """(B, T) ids: [CLS] at 0, [SEP] in the middle and at the end, padding after a random length.

    ``p=None``: the call leaves ``mlm_probability`` out, and its default, 0.15, is checked. A ``mask_id``
    that is not in ``special`` is drawn among the ordinary ids, and must never be chosen all the same;
    ``masked_share``: that share of the tokens is ``mask_id`` already (never chosen either).
    """

    def make():
        g = torch.Generator().manual_seed(seed)
        pad, cls, sep = special[0], special[1], special[2]
        ordinary = torch.tensor([i for i in range(vocab) if i not in special])
        ids = ordinary[torch.randint(len(ordinary), (B, T), generator=g)]
        if masked_share:
            ids[torch.rand((B, T), generator=g) < masked_share] = mask_id
        if T >= 4:
            ids[:, 0], ids[:, T // 2], ids[:, -1] = cls, sep, sep
            lengths = torch.randint(T // 2 + 1, T + 1, (B,), generator=g)
            ids[torch.arange(T) >= lengths[:, None]] = pad  # padding at the end
        if mode == "strided":
            ids = ids.t().contiguous().t()  # the same values, column-major
        return ids, list(special), vocab, mask_id, p, seed, mode

    return make


def _within(count: float, n: float, p: float) -> bool:
    return abs(count - n * p) <= Z * (n * p * (1 - p)) ** 0.5 + 2


def _call(fn: Callable, ids: torch.Tensor, special: list[int], vocab: int, mask_id: int, p: float | None,
          seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    before = snapshot(ids)
    rate = () if p is None else (p,)  # None: mlm_probability left to its default
    result = run_student(fn, ids, list(special), vocab, torch.Generator().manual_seed(seed), *rate, mask_id=mask_id,
                         what="mask_tokens")
    require_unchanged(before, ids, message="mask_tokens changed ids in place: build new tensors (ids.clone())")
    inputs, labels = require_pair(result, "mask_tokens", ("inputs", "labels"))
    for x, name in ((inputs, "inputs"), (labels, "labels")):
        require_shape(x, tuple(ids.shape), f"{name} should have the shape of ids (B, T)")
        if x.is_floating_point() or x.dtype == torch.bool:
            raise CheckFailed(f"{name} should hold integer token ids (torch.long), got {x.dtype}")
    return inputs.long(), labels.long()


def _check_rules(ids: torch.Tensor, special: list[int], inputs: torch.Tensor, labels: torch.Tensor,
                 mask_id: int | None = None) -> torch.Tensor:
    """The exact rules; returns the chosen positions (B, T)."""
    is_special = torch.isin(ids, torch.tensor(special))
    chosen = labels != IGNORE
    if not bool(chosen.any()):
        raise CheckFailed("no position was chosen: labels are -100 everywhere")
    if bool(chosen.all()):
        raise CheckFailed("every token has a label: labels must be -100 at the positions not chosen, so that they "
                          "carry no loss")
    if not bool(chosen[is_special].any()) and not torch.equal(inputs[~chosen], ids[~chosen]):
        raise CheckFailed("tokens that were not chosen were changed: the 80/10/10 replacement applies only to the "
                          "chosen 15 %, every other token stays as it is")
    if bool(chosen[is_special].any()) or not torch.equal(inputs[is_special], ids[is_special]):
        if mask_id is not None and bool(chosen[ids == mask_id].any()) \
                and not bool(chosen[is_special & (ids != mask_id)].any()):
            raise CheckFailed("a [MASK] token (mask_id) among the ids was chosen: mask_id is special too, whether "
                              "special_ids lists it or not")
        raise CheckFailed("special tokens ([CLS], [SEP], [PAD], ...) were chosen or changed: only the "
                          "non-special tokens may be chosen for masking")
    if not torch.equal(labels[chosen], ids[chosen]):
        raise CheckFailed("at a chosen position the label must be the original token (what the model must "
                          "predict), not the [MASK] id or the replacement")
    if bool(chosen[~is_special].all()):
        raise CheckFailed("every token has a label: labels must be -100 at the positions not chosen, so that they "
                          "carry no loss")
    if not torch.equal(inputs[~chosen], ids[~chosen]):
        raise CheckFailed("tokens that were not chosen were changed: the 80/10/10 replacement applies only to the "
                          "chosen 15 %, every other token stays as it is")
    return chosen


def _check_proportions(ids: torch.Tensor, special: list[int], vocab: int, mask_id: int, p: float | None,
                       inputs: torch.Tensor, chosen: torch.Tensor
                       ) -> None:
    """``p=None``: the call left ``mlm_probability`` out, and the share chosen must be its default, 0.15."""
    n_ordinary = int((~torch.isin(ids, torch.tensor(special))).sum())
    n_chosen = int(chosen.sum())
    if p is None and not _within(n_chosen, n_ordinary, DEFAULT_P):
        raise CheckFailed(f"mlm_probability left out, the share of non-special tokens chosen is "
                          f"{n_chosen / n_ordinary:.3f}: mlm_probability defaults to {DEFAULT_P}")
    p = DEFAULT_P if p is None else p
    if not _within(n_chosen, n_ordinary, p):
        raise CheckFailed(f"the share of non-special tokens chosen is {n_chosen / n_ordinary:.3f}, not "
                          "mlm_probability: choose each non-special token with probability mlm_probability")
    new, old = inputs[chosen], ids[chosen]
    replaced = new[(new != mask_id) & (new != old)]
    if bool(torch.isin(replaced, torch.tensor(special)).any()):
        raise CheckFailed("a random replacement was a special token: draw random tokens from the non-special "
                          "vocabulary only")
    ordinary_vocab = vocab - len(set(special) | {mask_id})
    n_masked = int((new == mask_id).sum())
    n_kept = int((new == old).sum())
    shares = f"{n_masked / n_chosen:.2f}/{len(replaced) / n_chosen:.2f}/{n_kept / n_chosen:.2f}"
    if not (_within(n_masked, n_chosen, 0.8) and _within(n_kept, n_chosen, 0.1 + 0.1 / ordinary_vocab)):
        raise CheckFailed(f"of the chosen tokens, {shares} became [MASK] / a random token / stayed: it should be "
                          "80 % / 10 % / 10 %")
    counts = torch.bincount(replaced, minlength=vocab).double()
    allowed = torch.ones(vocab, dtype=torch.bool)
    allowed[list(set(special) | {mask_id})] = False
    n, q = len(replaced), 1.0 / ordinary_vocab  # the originals are uniform, so the visible draws are too
    spread = (n * q * (1 - q)) ** 0.5
    if n and bool(((counts[allowed] - n * q).abs() > Z * spread + 2 + 0.02 * n * q).any()):
        raise CheckFailed("the random tokens are not drawn uniformly from the non-special vocabulary")


def _check(fn: Callable) -> Callable:
    def check_one(ids, special, vocab, mask_id, p, seed, mode):
        inputs, labels = _call(fn, ids, special, vocab, mask_id, p, seed)
        stated = sorted(set(special) | {mask_id})  # mask_id is special, in special_ids or not
        chosen = _check_rules(ids, stated, inputs, labels, mask_id)
        if mode in ("", "strided"):
            _check_proportions(ids, stated, vocab, mask_id, p, inputs, chosen)
        elif mode == "repeat":
            again = _call(fn, ids, special, vocab, mask_id, p, seed)
            if not (torch.equal(again[0], inputs) and torch.equal(again[1], labels)):
                raise CheckFailed("two calls with generators seeded alike gave different masks: draw every random "
                                  "number with the generator (torch.rand(..., generator=generator))")
            other = _call(fn, ids, special, vocab, mask_id, p, seed + 1)
            if torch.equal(other[1], labels):
                raise CheckFailed("the masks do not depend on the generator: draw with it, and do not reseed")

    return check_one


SPECIAL = (0, 2, 3, 1, 4)  # [PAD] [CLS] [SEP] [UNK] [MASK]
check_mask_tokens = Part(
    name="check_mask_tokens",
    visible=(
        Case("mlm_probability left out: 15 % chosen, 80/10/10",
             _case(1, 400, 500, 60, SPECIAL, 4, p=None, masked_share=0.02)),
        Case("mlm_probability 0.4, [MASK] not in special_ids, [MASK] among the ids",
             _case(2, 100, 200, 40, (0, 2, 3, 1), 4, p=0.4, masked_share=0.02)),
        Case("a seeded generator repeats the draw", _case(3, 4, 32, 30, SPECIAL, 4, mode="repeat")),
    ),
    check=_check,
    forbidden=("attnbook.bert.masking.mask_tokens",),
)
