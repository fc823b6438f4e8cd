"""Part 2: training BPE (``train_bpe(text, vocab_size) -> {(a, b): new_id}``) against the reference trainer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ._common import LIBRARIES, N_BYTES, TOK, Pair, first_message, require_pair_dict

__all__ = ["check_train_bpe"]

CORPUS = (
    "the cat sat on the mat. the cat ate the rat. that rat sat on the hat of the cat.\n"
    "then the cat and the rat and the bat sat at the mat and ate.\n"
)
UNICODE = "naïve café, naïve résumé, déjà vu: café au lait! 北京 北京 🙂🙂\n" * 3


def _train_variant(text: str, vocab_size: int, *, pick: str = "ref", ids: list[int] | None = None, rewrite: bool = True,
                   first_id: int = N_BYTES, n_merges: int | None = None) -> dict[Pair, int]:
    """BPE training as students get it wrong (the defaults: right)."""
    ids = list(text.encode("utf-8")) if ids is None else ids
    merges: dict[Pair, int] = {}
    n = vocab_size - N_BYTES if n_merges is None else n_merges
    for k in range(n):
        stats = TOK.pairs.get_stats(ids)
        if not stats:
            break
        if pick == "ref":
            pair = TOK.training.best_pair(stats)
        elif pick == "first":
            pair = max(stats, key=stats.get)
        else:  # the largest pair among equal counts
            pair = max(stats, key=lambda p: (stats[p], p))
        merges[pair] = first_id + k
        if rewrite:
            ids = TOK.pairs.merge(ids, pair, first_id + k)
    return merges


VISIBLE = (
    Case("the worked example", lambda: ("aaabdaaabac", N_BYTES + 3)),
    Case("a short text", lambda: (CORPUS, N_BYTES + 12)),
)


def _diagnose(got: dict, text: str, vocab_size: int) -> str:
    expected = TOK.training.train_bpe_reference(text, vocab_size)
    known: list[tuple[str, dict[str, Any]]] = [
        ("among pairs with the same count the smallest pair must win (compare the first ids, then the second): "
         "max(stats, key=stats.get) keeps the pair seen first instead; use "
         "min(stats, key=lambda p: (-stats[p], p))", dict(pick="first")),
        ("among pairs with the same count the smallest pair must win, not the largest", dict(pick="largest")),
        ("the working sequence was not rewritten after a merge, so the same counts were used again: "
         "ids = merge(ids, pair, idx) before counting again", dict(rewrite=False)),
        ("training must start from the UTF-8 bytes of the text (list(text.encode('utf-8'))), not from "
         "ord() of each character", dict(ids=[ord(c) for c in text])),
        ("vocab_size counts the 256 byte tokens: learn vocab_size - 256 merges",
         dict(n_merges=vocab_size - N_BYTES - 1)),
        ("vocab_size counts the 256 byte tokens: learn vocab_size - 256 merges",
         dict(n_merges=vocab_size - N_BYTES + 1)),
        ("vocab_size counts the 256 byte tokens: learn vocab_size - 256 merges, not vocab_size",
         dict(n_merges=vocab_size)),
    ]
    for message, kwargs in known:
        try:
            if got == _train_variant(text, vocab_size, **kwargs):
                return message
        except ValueError:
            continue
    ids = sorted(got.values())
    if got and ids != list(range(N_BYTES, N_BYTES + len(ids))):
        return "the k-th merge (from 0) must create the id 256 + k: ids 256, 257, ... in order"
    if len(got) != len(expected):
        return "learn vocab_size - 256 merges (fewer only when no pair is left to merge)"
    return ("the merges differ from BPE's: at each step merge the most frequent pair (ties to the smallest pair) "
            "and give it the next id")


def _check(fn: Callable) -> Callable:
    def check(text, vocab_size):
        expected = TOK.training.train_bpe_reference(text, vocab_size)
        result, problem = first_message(run_student, fn, text, vocab_size, what="train_bpe")
        if problem is not None:
            if len(expected) < vocab_size - N_BYTES:
                problem += " (when no pair is left, the whole text is one token: stop early)"
            raise CheckFailed(problem)
        got = require_pair_dict(result, "train_bpe", "new_id")
        if got != expected:
            raise CheckFailed(_diagnose(got, text, vocab_size))

    return check


FORBIDDEN = (
    "attnbook.tokenizers.training.train_bpe", "attnbook.tokenizers.training.train_bpe_reference",
    "attnbook.tokenizers.training._train_on_words", "attnbook.tokenizers.training.best_pair",
    "attnbook.tokenizers.bpe.BPETokenizer",
) + LIBRARIES

check_train_bpe = Part(name="check_train_bpe", visible=VISIBLE, check=_check, forbidden=FORBIDDEN)
