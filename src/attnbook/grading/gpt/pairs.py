"""Part 1: counting adjacent pairs (``get_stats``) and merging one pair (``merge``).

>>> def merge(ids, pair, idx):  # the digits of the pair also match inside longer ids
...     text = " ".join(map(str, ids)).replace(f"{pair[0]} {pair[1]}", str(idx))
...     return [int(i) for i in text.split()]
>>> check_pairs(_count_pairs, merge)  # the hidden cases hold ids whose digits run together
All 5 visible checks passed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable

import torch

from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_int_list, require_unchanged, snapshot
from ._common import TOK, Pair, require_pair_dict, text_merge

__all__ = ["check_pairs"]


def _runs_case(seed: int, n: int, vocab: int, run: bool) -> Callable[[], tuple]:
    """A list of ids; with ``run``, long runs of one id (``aaaa a``) inside it."""

    def make():
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(vocab, (n,), generator=g).tolist()
        if run:
            ids[3:8] = [ids[3]] * 5  # a run of five: three overlapping pairs
            ids[-3:] = [ids[-1]] * 3  # a run of three at the end
        return ids

    return make


def _stats(ids_maker):
    return lambda: ("stats", ids_maker())


def _merge_case(ids_maker: Callable[[], tuple], pick: int = 0) -> Callable[[], tuple]:
    """Merge the ``pick``-th most frequent pair of the ids (ties to the smallest), as a trainer would."""

    def make():
        ids = ids_maker()
        stats = TOK.pairs.get_stats(ids)
        pair = sorted(stats, key=lambda p: (-stats[p], p))[pick]
        return "merge", ids, pair, 1000 + pick

    return make


def _merge(ids, pair, idx):
    return lambda: ("merge", list(ids), pair, idx)


_SEEDS = [97, 97, 97, 98, 100, 97, 97, 97, 98, 97, 99]  # aaabdaaabac
VISIBLE = (
    Case("get_stats", _stats(lambda: [1, 2, 3, 1, 2])),
    Case("get_stats", _stats(lambda: list(_SEEDS))),
    Case("merge", _merge([1, 2, 3, 1, 2], (1, 2), 4)),
    Case("merge", _merge([1, 2, 4, 1, 2, 1], (2, 4), 7)),
    Case("merge, runs of one token", _merge([97, 97, 97], (97, 97), 256)),  # the statement's `aaa` -> `Za`
)


def _merge_variants(ids, pair, idx):
    """The wrong merges students write, computed here: (message, result)."""
    n = len(ids)
    starts = [i for i in range(n - 1) if (ids[i], ids[i + 1]) == pair]
    every = list(ids)
    for i in reversed(starts):  # every occurrence, overlapping ones eat each other
        every[i:i + 2] = [idx]
    zz, skip = [], False  # every start becomes idx, the tokens in between vanish
    for i in range(n):
        if i in starts:
            zz.append(idx)
            skip = True
        elif skip:
            skip = False
        else:
            zz.append(ids[i])
    rtl = list(reversed(TOK.pairs.merge(list(reversed(ids)), pair[::-1], idx)))
    no_skip = [idx if i in starts else ids[i] for i in range(n)]
    first = list(ids)
    if starts:
        first[starts[0]:starts[0] + 2] = [idx]
    drops_last, i = [], 0
    while i < n - 1:  # the loop stops one short: a last token outside a pair is never appended
        drops_last.append(idx if i in starts else ids[i])
        i += 2 if i in starts else 1
    overlap = ("overlapping occurrences were merged: in `aaa` the pair (a, a) occurs twice but only the first "
               "two a can merge, so `aaa` becomes `Za`; scan from left to right and jump over both tokens of a "
               "merged pair")
    return [
        (overlap, every),
        (overlap, zz),
        ("occurrences were taken from the right: `aaa` must become `Za`, not `aZ`; scan from left to right", rtl),
        ("after a merge the scan must jump over both tokens of the pair (i += 2); here the second token was "
         "looked at again", no_skip),
        ("only the first occurrence was merged: replace every occurrence of the pair", first),
        ("the last token is lost when it is not part of a merged pair", drops_last),
        ("merge treated the ids as text: in a string of joined ids the digits of the pair also match inside "
         "longer ids (`1 2` inside `11 2`); compare the ids themselves, in a list", text_merge(ids, pair, idx,
                                                                                            padded=False)),
        ("merge replaced the pair with str.replace on joined ids, which misses an occurrence right after "
         "another one (`a b a b`: the separator between them is used up); walk through the list of ids instead",
         text_merge(ids, pair, idx, padded=True)),
    ]


def _count_pairs(ids_or_pairs: list[int] | Iterable[Pair]) -> dict[Pair, int]:
    """Counts of the adjacent pairs of a list of ids, or of an iterator of pairs."""
    pairs = zip(ids_or_pairs, ids_or_pairs[1:], strict=False) if isinstance(ids_or_pairs, list) else ids_or_pairs
    out: dict[Pair, int] = {}
    for p in pairs:
        out[p] = out.get(p, 0) + 1
    return out


def _diagnose_stats(got: dict, ids: list) -> str:
    expected = TOK.pairs.get_stats(ids)
    overlapping = {p: len(ids) - len(TOK.pairs.merge(ids, p, -1)) for p in expected}  # like str.count
    known = [
        ("overlapping pairs must each count: `aaa` holds the pair (a, a) twice, at positions 0 and 1", overlapping),
        ("only every other pair was counted: count the pair (ids[i], ids[i + 1]) at every position i",
         _count_pairs(zip(ids[::2], ids[1::2], strict=False))),
        ("the last pair (ids[-2], ids[-1]) is missing", TOK.pairs.get_stats(ids[:-1])),
    ]
    if ids:
        known.append(("the pair (last, first) was counted: the ids do not wrap around",
                      TOK.pairs.get_stats(list(ids) + [ids[0]])))
    for message, variant in known:
        if got == variant:
            return message
    if set(got) == set(expected):
        return "the right pairs, but not their counts: each pair counts once per position where it occurs"
    return "get_stats must count every adjacent pair (ids[i], ids[i + 1])"


def _check(get_stats: Callable, merge: Callable) -> Callable:
    def check(kind, *args):
        if kind == "stats":
            (ids,) = args
            before = snapshot(ids)
            result = run_student(get_stats, ids, what="get_stats")
            require_unchanged(before, ids, message="get_stats changed ids in place")
            got = {k: v for k, v in require_pair_dict(result, "get_stats", "count").items() if v}
            if got != TOK.pairs.get_stats(ids):
                raise CheckFailed(_diagnose_stats(got, ids))
            return
        ids, pair, idx = args
        before = snapshot(ids)
        result = run_student(merge, ids, pair, idx, what="merge")
        require_unchanged(before, ids, message="merge changed ids in place; build and return a new list")
        merged = require_int_list(result, "merge's result")
        if merged == TOK.pairs.merge(ids, pair, idx):
            return
        raise first_match(merged, _merge_variants(ids, pair, idx), "merge must replace each occurrence of the pair, "
                          "from left to right, by idx and keep every other token in order", matches=operator.eq)

    return check


FORBIDDEN = (  # where they are defined: the worker's copy stubs them there, so that every alias fails
    "attnbook.tokenizers.pairs.get_stats", "attnbook.tokenizers.pairs.merge",
    # encode_chunk with the one merge {pair: idx} is merge(ids, pair, idx)
    "attnbook.tokenizers.bpe.encode_chunk", "attnbook.tokenizers.bpe._encode_chunk_heap",
    "attnbook.tokenizers.bpe.BPETokenizer",
)

check_pairs = Part(name="check_pairs", visible=VISIBLE, check=_check, forbidden=FORBIDDEN)
