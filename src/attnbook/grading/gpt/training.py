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


def _train_variant(text: str, vocab_size: int, *, ids: list[int] | None = None, rewrite: bool = True,
                   first_id: int = N_BYTES, n_merges: int | None = None) -> dict[Pair, int]:
    """BPE training as students get it wrong (the defaults: right); a tie broken another way is
    :func:`_tie_broken`'s."""
    ids = list(text.encode("utf-8")) if ids is None else ids
    merges: dict[Pair, int] = {}
    n = vocab_size - N_BYTES if n_merges is None else n_merges
    for k in range(n):
        stats = TOK.pairs.get_stats(ids)
        if not stats:
            break
        pair = TOK.training.best_pair(stats)
        merges[pair] = first_id + k
        if rewrite:
            ids = TOK.pairs.merge(ids, pair, first_id + k)
    return merges


VISIBLE = (
    Case("the worked example", lambda: ("aaabdaaabac", N_BYTES + 3)),
    Case("a short text", lambda: (CORPUS, N_BYTES + 12)),
    Case("non-ASCII text (UTF-8 bytes)", lambda: ("é é", N_BYTES + 1)),  # é is the two bytes 195, 169
    Case("stops when no pair is left", lambda: ("abab", N_BYTES + 5)),  # one token after two merges
)
VISIBLE_ARGS = [case.make() for case in VISIBLE]  # where a message may name the pairs


def _tie_broken(got: dict, text: str, vocab_size: int) -> str | None:
    """The merges agree with BPE's until a step where pairs tie for the highest count and another tied pair than
    the smallest was merged: what happened there, in words (None if that is not where they part).

    The pairs are named for a visible case only: a hidden case's text stays hidden.

    >>> print(_tie_broken({(97, 97): 256, (256, 97): 257, (257, 98): 258}, "aaabdaaabac", 259))
    merge 1 (id 257) joined the pair (256, 97), but (97, 98) should be joined there: both occur 2 times, and \
among pairs with the same count the smallest pair must win (compare the first ids, then the second); the pair \
joined is the largest of the tied pairs and the tied pair that occurs first in the working sequence
    """
    by_id = {idx: pair for pair, idx in got.items()}
    ids = list(text.encode("utf-8"))
    for k in range(vocab_size - N_BYTES):
        stats = TOK.pairs.get_stats(ids)
        if not stats:
            return None
        right, theirs = TOK.training.best_pair(stats), by_id.get(N_BYTES + k)
        if theirs != right:
            if theirs is None or stats.get(theirs) != stats[right]:
                return None
            tied = [p for p in dict.fromkeys(zip(ids, ids[1:], strict=False)) if stats[p] == stats[right]]
            facts = [fact for fact, holds in (("the largest of the tied pairs", theirs == max(tied)),
                                              ("the tied pair that occurs first in the working sequence",
                                               theirs == tied[0])) if holds]
            how = f"; the pair joined is {' and '.join(facts)}" if facts else ""
            rule = ("among pairs with the same count the smallest pair must win (compare the first ids, then "
                    "the second)")
            if (text, vocab_size) in VISIBLE_ARGS:
                return (f"merge {k} (id {N_BYTES + k}) joined the pair {theirs}, but {right} should be joined "
                        f"there: both occur {stats[right]} times, and {rule}{how}")
            return (f"at merge {k} (id {N_BYTES + k}) several pairs shared the highest count and another than the "
                    f"smallest was joined: {rule}{how}")
        ids = TOK.pairs.merge(ids, right, N_BYTES + k)
    return None


def _diagnose(got: dict, text: str, vocab_size: int) -> str:
    expected = TOK.training.train_bpe_reference(text, vocab_size)
    known: list[tuple[str, dict[str, Any]]] = [
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
    tie = _tie_broken(got, text, vocab_size)
    if tie is not None:
        return tie
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
