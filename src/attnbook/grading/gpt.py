"""Checks for chapter 4's exercises (``solutions/04-gpt-bpe``): BPE, the language-model loss, sampling.

Each ``check_*`` compares the student's function with a private copy of the
reference in :mod:`attnbook.tokenizers` or :mod:`attnbook.gpt` and explains a
failure in words. Called without ``points`` it runs the visible cases and
raises on the first failure; with ``points`` it runs every case and returns
the points earned.

The parts, in the notebook's order: counting and merging pairs
(:func:`check_pairs`), training BPE (:func:`check_train_bpe`), encoding and
decoding (:func:`check_encode_decode`), the shifted next-token loss
(:func:`check_next_token_loss`), sampling with a temperature and top-k
(:func:`check_sample_next`) and perplexity (:func:`check_perplexity`).

A wrong answer is compared with the mistakes students make most, each computed
here from the reference's own pieces (a merge that takes overlapping pairs in
``aaa``, merges applied in the wrong order, targets that are not shifted, a
temperature applied after the softmax, ...), so that the message can name the
mistake.

Sampling is checked by statistics. Each case repeats a few rows of logits
thousands of times in one batch and counts the draws of every token. A token
whose probability is zero must never be drawn; for the others the count
``c`` of ``N`` draws must satisfy ``|c - N p| <= 6 sqrt(N p (1 - p)) + 2``, a
per-token binomial bound that a correct sampler breaks with probability below
``1e-8`` per token, while the mistakes named above miss it by tens of standard
deviations. The grader seeds every draw, so a grade never changes between runs.

>>> def merge(ids, pair, idx):  # takes overlapping occurrences in `aaa` too
...     starts = [i for i in range(len(ids) - 1) if (ids[i], ids[i + 1]) == pair]
...     out = list(ids)
...     for i in reversed(starts):
...         out[i:i + 2] = [idx]
...     return out
>>> def get_stats(ids):
...     counts = {}
...     for pair in zip(ids, ids[1:]):
...         counts[pair] = counts.get(pair, 0) + 1
...     return counts
>>> check_pairs(get_stats, merge)  # the visible cases have no runs such as `aaa`
All 4 visible checks passed.
>>> check_pairs(get_stats, merge, points=2)  # doctest: +ELLIPSIS
Some checks failed:
- merge, runs of one token: overlapping occurrences were merged: in `aaa` the pair (a, a) occurs twice ...
1.58
"""

from __future__ import annotations

import importlib.util
import math
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from .engine import Case, score_cases
from ._core import (
    CheckFailed,
    close,
    fresh_module,
    require_tensor,
    run_student,
)

__all__ = [
    "check_pairs",
    "check_train_bpe",
    "check_encode_decode",
    "check_next_token_loss",
    "check_sample_next",
    "check_perplexity",
    "perplexity_test_model",
]


def _fresh_tokenizers() -> types.SimpleNamespace:
    """Private copies of ``attnbook.tokenizers``' modules, loaded from their files.

    The modules import each other relatively, so they are loaded in order
    under a private package name that is registered in ``sys.modules`` only
    while they load (the same idea as :func:`_core.fresh_module`).
    """
    folder = Path(importlib.util.find_spec("attnbook.tokenizers").origin).parent
    package = "_attnbook_grading_copy.attnbook.tokenizers"
    loaded: dict[str, types.ModuleType] = {}
    names = ("pairs", "patterns", "training", "bpe")
    try:
        holder = types.ModuleType(package)
        holder.__path__ = [str(folder)]
        sys.modules[package] = holder
        for name in names:
            spec = importlib.util.spec_from_file_location(f"{package}.{name}", folder / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            loaded[name] = module
    finally:
        for name in (package, *(f"{package}.{n}" for n in names)):
            sys.modules.pop(name, None)
    return types.SimpleNamespace(**loaded)


_TOK = _fresh_tokenizers()
_ATT = fresh_module("attnbook.attention")
_POS = fresh_module("attnbook.positional")
_GPT = fresh_module("attnbook.gpt")
# The copy of attnbook.gpt imported its building blocks from the public modules, which a notebook could
# have patched before the checker was imported: point it at the private copies.
_GPT.causal_mask, _GPT.fused_attention = _ATT.causal_mask, _ATT.fused_attention
_GPT.scaled_dot_product_attention, _GPT.LearnedPositions = _ATT.scaled_dot_product_attention, _POS.LearnedPositions

N_BYTES = 256
_Pair = tuple[int, int]


def _available(paths: Sequence[str]) -> tuple[str, ...]:
    """The dotted names in ``paths`` whose top-level package is installed (optional libraries)."""
    return tuple(p for p in paths if importlib.util.find_spec(p.split(".", 1)[0]) is not None)


# Library shortcuts: tiktoken's Encoding would encode and decode with given ranks, and its
# educational module trains and encodes BPE.
_TIKTOKEN = ("tiktoken.Encoding", "tiktoken._educational.bpe_train", "tiktoken._educational.bpe_encode",
             "tiktoken._educational.SimpleBytePairEncoding")
_FORBIDDEN_PAIRS = ("attnbook.tokenizers.get_stats", "attnbook.tokenizers.merge",
                    "attnbook.tokenizers.pairs.get_stats", "attnbook.tokenizers.pairs.merge")
_FORBIDDEN_TRAIN = ("attnbook.tokenizers.train_bpe", "attnbook.tokenizers.train_bpe_reference",
                    "attnbook.tokenizers.training.train_bpe", "attnbook.tokenizers.training.train_bpe_reference",
                    "attnbook.tokenizers.best_pair", "attnbook.tokenizers.training.best_pair",
                    "attnbook.tokenizers.BPETokenizer")
_FORBIDDEN_CODEC = ("attnbook.tokenizers.encode_chunk", "attnbook.tokenizers.bpe.encode_chunk",
                    "attnbook.tokenizers.bpe._encode_chunk_heap", "attnbook.tokenizers.BPETokenizer")
_FORBIDDEN_LOSS = ("attnbook.gpt.next_token_loss", "attnbook.gpt.stream_loss")
_FORBIDDEN_SAMPLING = ("attnbook.gpt.next_token_probs", "attnbook.gpt.generate")
_FORBIDDEN_PERPLEXITY = ("attnbook.gpt.perplexity", "attnbook.gpt.stream_loss", "attnbook.gpt.next_token_loss")


def _first_message(fn: Callable, *args, **kwargs):
    """Run ``fn``; its result, or the message of the CheckFailed it raises."""
    try:
        return fn(*args, **kwargs), None
    except CheckFailed as err:
        return None, str(err)


def _as_int_list(result: object, what: str) -> list[int]:
    """``result`` as a list of Python ints, or a clear failure."""
    if isinstance(result, torch.Tensor):
        result = result.tolist()
    if not isinstance(result, (list, tuple)) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in result
    ):
        raise CheckFailed(f"{what} should be a list of ints, got {type(result).__name__}")
    return list(result)


# ======================================================= pairs (Part 1)


def _runs_case(seed: int, n: int, vocab: int, run: bool):
    """A list of ids; with ``run``, long runs of one id (``aaaa a``) inside it."""

    def make():
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(vocab, (n,), generator=g).tolist()
        if run:
            ids[3:8] = [ids[3]] * 5  # a run of five: three overlapping pairs
            ids[-3:] = [ids[-1]] * 3  # a run of three at the end
        return ids

    return make


def _stats_case(ids_maker):
    return lambda: ("stats", ids_maker())


def _merge_case(ids_maker, pick: int = 0):
    """Merge the ``pick``-th most frequent pair of the ids (ties to the smallest), as a trainer would."""

    def make():
        ids = ids_maker()
        stats = _TOK.pairs.get_stats(ids)
        pair = sorted(stats, key=lambda p: (-stats[p], p))[pick]
        return "merge", ids, pair, 1000 + pick

    return make


_SEEDS = [97, 97, 97, 98, 100, 97, 97, 97, 98, 97, 99]  # aaabdaaabac
_PAIRS_VISIBLE = [
    Case("get_stats", _stats_case(lambda: [1, 2, 3, 1, 2])),
    Case("get_stats", _stats_case(lambda: list(_SEEDS))),
    Case("merge", lambda: ("merge", [1, 2, 3, 1, 2], (1, 2), 4)),
    Case("merge", lambda: ("merge", [1, 2, 4, 1, 2, 1], (2, 4), 7)),
]
_PAIRS_HIDDEN = [
    Case("get_stats, runs of one token", _stats_case(lambda: [97, 97, 97])),
    Case("get_stats, runs of one token", _stats_case(_runs_case(401, 20, 4, True)), weight=2.0),
    Case("get_stats, edges", _stats_case(lambda: [5])),
    Case("get_stats, edges", _stats_case(lambda: [])),
    Case("get_stats", _stats_case(_runs_case(402, 30, 5, False))),
    Case("merge, runs of one token", lambda: ("merge", [97, 97, 97], (97, 97), 256)),
    Case("merge, runs of one token", lambda: ("merge", [97, 97, 97, 97, 97, 98], (97, 97), 256)),
    Case("merge, runs of one token", _merge_case(_runs_case(401, 20, 4, True)), weight=2.0),
    Case("merge, edges", lambda: ("merge", [3, 1, 2], (1, 2), 9)),
    Case("merge, edges", lambda: ("merge", [1, 2, 3], (1, 2), 9)),
    Case("merge, edges", lambda: ("merge", [4], (4, 4), 9)),
    Case("merge", _merge_case(_runs_case(402, 30, 5, False), pick=1)),
    Case("merge", lambda: ("merge", list(_SEEDS), (97, 98), 257)),
]


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
    rtl = list(reversed(_TOK.pairs.merge(list(reversed(ids)), pair[::-1], idx)))
    no_skip = []
    i = 0
    while i < n:
        if i + 1 < n and (ids[i], ids[i + 1]) == pair:
            no_skip.append(idx)
        else:
            no_skip.append(ids[i])
        i += 1
    first = list(ids)
    if starts:
        first[starts[0]:starts[0] + 2] = [idx]
    drops_last = []
    i = 0
    while i < n - 1:
        if (ids[i], ids[i + 1]) == pair:
            drops_last.append(idx)
            i += 2
        else:
            drops_last.append(ids[i])
            i += 1
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
    ]


def _check_pairs_case(get_stats: Callable, merge: Callable) -> Callable:
    def check(kind, *args):
        if kind == "stats":
            (ids,) = args
            before = list(ids)
            result = run_student(get_stats, ids, forbidden=_FORBIDDEN_PAIRS, what="get_stats")
            if ids != before:
                raise CheckFailed("get_stats changed ids in place")
            if not isinstance(result, dict):
                raise CheckFailed(f"get_stats should return a dict {{pair: count}}, got {type(result).__name__}")
            if any(not isinstance(k, tuple) or len(k) != 2 for k in result):
                raise CheckFailed("the keys of get_stats' dict should be pairs of ids, tuples (a, b)")
            got = {k: v for k, v in result.items() if v}
            expected = _TOK.pairs.get_stats(ids)
            if got == expected:
                return
            # counted like str.count, without overlap: as many as merge() would replace
            overlapping = {p: len(ids) - len(_TOK.pairs.merge(ids, p, -1)) for p in expected}
            if got == overlapping:
                raise CheckFailed("overlapping pairs must each count: `aaa` holds the pair (a, a) twice, at "
                                  "positions 0 and 1")
            if got == _count(zip(ids[::2], ids[1::2])):
                raise CheckFailed("only every other pair was counted: count the pair (ids[i], ids[i + 1]) at every "
                                  "position i")
            if got == _TOK.pairs.get_stats(ids[:-1]):
                raise CheckFailed("the last pair (ids[-2], ids[-1]) is missing")
            if ids and got == _TOK.pairs.get_stats(list(ids) + [ids[0]]):
                raise CheckFailed("the pair (last, first) was counted: the ids do not wrap around")
            if set(got) == set(expected):
                raise CheckFailed("the right pairs, but not their counts: each pair counts once per position "
                                  "where it occurs")
            raise CheckFailed("get_stats must count every adjacent pair (ids[i], ids[i + 1])")
        ids, pair, idx = args
        before = list(ids)
        result = run_student(merge, ids, pair, idx, forbidden=_FORBIDDEN_PAIRS, what="merge")
        if ids != before:
            raise CheckFailed("merge changed ids in place; build and return a new list")
        got = _as_int_list(result, "merge's result")
        expected = _TOK.pairs.merge(ids, pair, idx)
        if got == expected:
            return
        for message, variant in _merge_variants(ids, pair, idx):
            if got == variant:
                raise CheckFailed(message)
        raise CheckFailed("merge must replace each occurrence of the pair, from left to right, by idx and keep "
                          "every other token in order")

    return check


def _count(pairs) -> dict[_Pair, int]:
    out: dict[_Pair, int] = {}
    for p in pairs:
        out[p] = out.get(p, 0) + 1
    return out


def check_pairs(get_stats: Callable, merge: Callable, points: float | None = None) -> float | None:
    """Check ``get_stats(ids) -> {pair: count}`` and ``merge(ids, pair, idx) -> new ids``."""
    cases = _PAIRS_VISIBLE if points is None else _PAIRS_VISIBLE + _PAIRS_HIDDEN
    return score_cases(cases, _check_pairs_case(get_stats, merge), points)


# ===================================================== training (Part 2)

_CORPUS = (
    "the cat sat on the mat. the cat ate the rat. that rat sat on the hat of the cat.\n"
    "then the cat and the rat and the bat sat at the mat and ate.\n"
)
_UNICODE = "naïve café, naïve résumé, déjà vu: café au lait! 北京 北京 🙂🙂\n" * 3


def _train_variant(text: str, vocab_size: int, *, pick: str = "ref", ids=None, rewrite: bool = True,
                   first_id: int = N_BYTES, n_merges: int | None = None) -> dict[_Pair, int]:
    """BPE training as students get it wrong (the defaults: right)."""
    ids = list(text.encode("utf-8")) if ids is None else ids
    merges: dict[_Pair, int] = {}
    n = vocab_size - N_BYTES if n_merges is None else n_merges
    for k in range(n):
        stats = _TOK.pairs.get_stats(ids)
        if not stats:
            break
        if pick == "ref":
            pair = _TOK.training.best_pair(stats)
        elif pick == "first":
            pair = max(stats, key=stats.get)
        else:  # the largest pair among equal counts
            pair = max(stats, key=lambda p: (stats[p], p))
        merges[pair] = first_id + k
        if rewrite:
            ids = _TOK.pairs.merge(ids, pair, first_id + k)
    return merges


_TRAIN_VISIBLE = [
    Case("the worked example", lambda: ("aaabdaaabac", N_BYTES + 3)),
    Case("a short text", lambda: (_CORPUS, N_BYTES + 12)),
]
_TRAIN_HIDDEN = [
    Case("ties between pairs", lambda: ("cdcdabab", N_BYTES + 3)),
    Case("a longer text", lambda: (_CORPUS * 3, N_BYTES + 40), weight=2.0),
    Case("non-ASCII text (UTF-8 bytes)", lambda: (_UNICODE, N_BYTES + 15), weight=2.0),
    Case("no merges: vocab_size 256", lambda: ("hello", N_BYTES)),
    Case("stops when no pair is left", lambda: ("aaaa", N_BYTES + 10)),
]


def _diagnose_training(got: dict, text: str, vocab_size: int) -> str:
    expected = _TOK.training.train_bpe_reference(text, vocab_size)
    known = [
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


def _check_train_case(fn: Callable) -> Callable:
    def check(text, vocab_size):
        result, problem = _first_message(
            run_student, fn, text, vocab_size, forbidden=_FORBIDDEN_TRAIN, what="train_bpe")
        if problem is not None:
            if len(_TOK.training.train_bpe_reference(text, vocab_size)) < vocab_size - N_BYTES:
                problem += " (when no pair is left, the whole text is one token: stop early)"
            raise CheckFailed(problem)
        if not isinstance(result, dict):
            raise CheckFailed(f"train_bpe should return a dict {{(a, b): new_id}}, got {type(result).__name__}")
        if any(not isinstance(k, tuple) or len(k) != 2 for k in result):
            raise CheckFailed("the keys of the merges should be pairs of ids, tuples (a, b)")
        if dict(result) != _TOK.training.train_bpe_reference(text, vocab_size):
            raise CheckFailed(_diagnose_training(dict(result), text, vocab_size))

    return check


def check_train_bpe(fn: Callable, points: float | None = None) -> float | None:
    """Check ``train_bpe(text, vocab_size) -> {(a, b): new_id}`` against the reference trainer's merges."""
    cases = _TRAIN_VISIBLE if points is None else _TRAIN_VISIBLE + _TRAIN_HIDDEN
    return score_cases(cases, _check_train_case(fn), points)


# ================================================= encode and decode (Part 3)


def _merges(text: str, vocab_size: int) -> dict[_Pair, int]:
    return _TOK.training.train_bpe_reference(text, vocab_size)


def _vocab(merges) -> dict[int, bytes]:
    vocab = {i: bytes([i]) for i in range(N_BYTES)}
    for (a, b), idx in merges.items():
        vocab[idx] = vocab[a] + vocab[b]
    return vocab


def _encode_variant(text: str, merges, how: str) -> list[int]:
    """Encoding as students get it wrong."""
    ids = [ord(c) for c in text] if how == "ord" else list(text.encode("utf-8"))
    if how == "ord":
        return _TOK.bpe.encode_chunk(ids, merges)
    if how == "reversed":  # one pass over the merges, latest first
        for pair, idx in reversed(list(merges.items())):
            ids = _TOK.pairs.merge(ids, pair, idx)
        return ids
    if how == "by_pair":  # one pass over the merges sorted by the pair, not by rank
        for pair in sorted(merges):
            ids = _TOK.pairs.merge(ids, pair, merges[pair])
        return ids
    while len(ids) >= 2:
        stats = _TOK.pairs.get_stats(ids)
        known = [p for p in stats if p in merges]
        if not known:
            break
        if how == "highest":
            pair = max(known, key=merges.get)
        elif how == "count":  # the most frequent pair of the text, ties to the earliest merge
            pair = min(known, key=lambda p: (-stats[p], merges[p]))
        elif how == "count_first":  # the most frequent pair of the text, ties to the first seen
            pair = max(known, key=stats.get)
        else:  # "first": the leftmost pair that has a merge
            pair = known[0]
        ids = _TOK.pairs.merge(ids, pair, merges[pair])
    return ids


_ENCODE_MISTAKES = [
    ("reversed", "the merges were applied in the wrong order: apply them by rank, the earliest learned (lowest "
                 "id) first, because later merges are built from earlier ones"),
    ("count", "the pair to merge was chosen by its count in this text; choose by rank instead: the pair whose "
              "merge was learned earliest (lowest id)"),
    ("count_first", "the pair to merge was chosen by its count in this text; choose by rank instead: the pair "
                    "whose merge was learned earliest (lowest id)"),
    ("highest", "the merges were applied in the wrong order: among the pairs present, merge the one with the "
                "lowest id (learned earliest) first, not the highest"),
    ("first", "the pair to merge was chosen by its place in the text (leftmost first); choose by rank instead: "
              "the pair whose merge was learned earliest (lowest id)"),
    ("by_pair", "the merges were applied sorted by their pairs; apply them by rank, the lowest id first"),
    ("ord", "encoding must start from the UTF-8 bytes of the text (list(text.encode('utf-8'))), not from ord() "
            "of each character"),
]


def _encode_case(text: str, corpus: str, vocab_size: int):
    return lambda: ("encode", text, _merges(corpus, vocab_size))


def _decode_case(text: str, corpus: str, vocab_size: int, cut: int = 0):
    """Decode the reference encoding of ``text``; ``cut`` drops that many ids from the end."""

    def make():
        merges = _merges(corpus, vocab_size)
        ids = _TOK.bpe.encode_chunk(list(text.encode("utf-8")), merges)
        return "decode", ids[: len(ids) - cut], merges

    return make


_ROUND = "the rat sat on the cat's hat"
_CODEC_VISIBLE = [
    Case("encode", lambda: ("encode", "aaabdaaabac", _merges("aaabdaaabac", N_BYTES + 3))),
    Case("encode", _encode_case(_ROUND, _CORPUS, N_BYTES + 20)),
    Case("decode", _decode_case(_ROUND, _CORPUS, N_BYTES + 20)),
]
_CODEC_HIDDEN = [
    Case("encode: merges applied by rank", lambda: ("encode", "aaab", {(97, 98): 256, (97, 97): 257})),
    Case("encode: merges applied by rank", _encode_case("that bat ate the mat, then sat", _CORPUS * 3, N_BYTES + 40),
         weight=2.0),
    Case("encode: merges applied by rank", lambda: ("encode", "acbcba", {(98, 99): 256, (99, 98): 257, (97, 99): 258}),
         weight=2.0),
    Case("encode: merges applied by rank", lambda: ("encode", "aaaa b aaaa", {(97, 97): 256, (256, 97): 257,
                                                                              (256, 256): 258})),
    Case("encode: non-ASCII text", _encode_case("café au lait, 北京 🙂", _UNICODE, N_BYTES + 15), weight=2.0),
    Case("encode: edges", lambda: ("encode", "", _merges(_CORPUS, N_BYTES + 10))),
    Case("encode: edges", lambda: ("encode", "x", _merges(_CORPUS, N_BYTES + 10))),
    Case("encode: edges", lambda: ("encode", "the cat", {})),
    Case("decode: non-ASCII text", _decode_case("déjà vu 北京 🙂", _UNICODE, N_BYTES + 15), weight=2.0),
    Case("decode: a character cut in two", _decode_case("café 🙂", _UNICODE, N_BYTES + 3, cut=1)),
    Case("decode: edges", lambda: ("decode", [], _merges(_CORPUS, N_BYTES + 10))),
    Case("decode", _decode_case(_CORPUS, _CORPUS * 3, N_BYTES + 40)),
]


def _diagnose_decode(got: str, ids, merges) -> str:
    vocab = _vocab(merges)
    swapped = {i: bytes([i]) for i in range(N_BYTES)}
    for (a, b), idx in merges.items():
        swapped[idx] = swapped[b] + swapped[a]
    known = [
        ("each token was decoded on its own: a character can span two tokens; join the bytes of all tokens "
         "first, then decode UTF-8 once", "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)),
        ("the bytes became text with chr() of each byte; join them and decode them as UTF-8: "
         "b''.join(...).decode('utf-8', errors='replace')", "".join(chr(b) for i in ids for b in vocab[i])),
        ("the bytes of a merged token are its pair's bytes in order: vocab[idx] = vocab[a] + vocab[b]",
         b"".join(swapped[i] for i in ids).decode("utf-8", errors="replace")),
    ]
    for message, variant in known:
        if got == variant:
            return message
    return "decode(ids, merges) must give back the text: the bytes of every token joined, decoded as UTF-8"


def _check_codec_case(encode: Callable, decode: Callable) -> Callable:
    def check(kind, *args):
        if kind == "encode":
            text, merges = args
            saved = dict(merges)
            result = run_student(encode, text, merges, forbidden=_FORBIDDEN_CODEC + _available(_TIKTOKEN),
                                 what="encode")
            if merges != saved or list(merges) != list(saved):
                raise CheckFailed("encode changed the merges dictionary; leave it as it is")
            got = _as_int_list(result, "encode's result")
            expected = _TOK.bpe.encode_chunk(list(text.encode("utf-8")), merges)
            if got == expected:
                return
            for how, message in _ENCODE_MISTAKES:
                if got == _encode_variant(text, merges, how):
                    raise CheckFailed(message)
            if b"".join(_vocab(merges).get(i, b"?") for i in got) == text.encode("utf-8"):
                raise CheckFailed("the ids decode to the text, but they are not BPE's encoding: apply the merges "
                                  "by rank, the lowest id first, until no pair has a merge")
            raise CheckFailed("encode must start from the UTF-8 bytes and apply the merges by rank until no pair "
                              "has a merge")
        ids, merges = args
        saved = list(ids)
        try:
            result = run_student(decode, ids, merges, forbidden=_FORBIDDEN_CODEC + _available(_TIKTOKEN),
                                 what="decode")
        except CheckFailed as err:
            if "UnicodeDecodeError" in str(err):
                raise CheckFailed(
                    f"{err}. A token can end in the middle of a character: join the bytes of all tokens, then "
                    "decode them once with errors='replace'") from None
            raise
        if ids != saved:
            raise CheckFailed("decode changed ids in place")
        if not isinstance(result, str):
            raise CheckFailed(f"decode should return a str, got {type(result).__name__}")
        expected = b"".join(_vocab(merges)[i] for i in ids).decode("utf-8", errors="replace")
        if result != expected:
            if result == expected.replace("\ufffd", "") or result == b"".join(
                    _vocab(merges)[i] for i in ids).decode("utf-8", errors="ignore"):
                raise CheckFailed("a broken character must decode as the replacement character U+FFFD "
                                  "(errors='replace'), not vanish")
            raise CheckFailed(_diagnose_decode(result, ids, merges))

    return check


def check_encode_decode(encode: Callable, decode: Callable, points: float | None = None) -> float | None:
    """Check ``encode(text, merges) -> ids`` (merges by rank) and ``decode(ids, merges) -> str``."""
    cases = _CODEC_VISIBLE if points is None else _CODEC_VISIBLE + _CODEC_HIDDEN
    return score_cases(cases, _check_codec_case(encode, decode), points)


# ====================================================== the loss (Part 4)


def _loss_case(seed: int, B: int, T: int, V: int, dtype=torch.float32, scale: float = 2.0):
    def make():
        g = torch.Generator().manual_seed(seed)
        logits = (scale * torch.randn(B, T, V, generator=g)).to(dtype)  # (B, T, V)
        ids = torch.randint(V, (B, T), generator=g)  # (B, T)
        return logits, ids

    return make


_LOSS_VISIBLE = [Case("shapes and values", _loss_case(0, 2, 5, 7))]
_LOSS_HIDDEN = [
    Case("batch of one", _loss_case(501, 1, 9, 11)),
    Case("two tokens: one prediction", _loss_case(502, 3, 2, 5)),
    Case("float64 logits", _loss_case(503, 2, 6, 13, torch.float64)),
    Case("large vocabulary", _loss_case(504, 4, 8, 300), weight=2.0),
    Case("the gradient reaches the logits", lambda: (*_loss_case(505, 2, 7, 6)(), "grad"), weight=2.0),
]


def _loss_variants(logits: torch.Tensor, ids: torch.Tensor):
    V = logits.shape[-1]
    x = logits.detach().double()
    pred, target = x[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1)
    return [
        ("the targets are not shifted: the prediction at position t is scored against the token at t + 1, "
         "so compare logits[:, :-1] with ids[:, 1:]", F.cross_entropy(x.reshape(-1, V), ids.reshape(-1))),
        ("the shift goes the wrong way: the logits at position t predict the *next* token, so compare "
         "logits[:, :-1] with ids[:, 1:]", F.cross_entropy(x[:, 1:].reshape(-1, V), ids[:, :-1].reshape(-1))),
        ("the last position has nothing to predict: drop it (logits[:, :-1]) instead of wrapping around to the "
         "first token", F.cross_entropy(x.reshape(-1, V), ids.roll(-1, dims=1).reshape(-1))),
        ("the loss is summed; take the mean over the B * (T - 1) predictions",
         F.cross_entropy(pred, target, reduction="sum")),
        ("a softmax was applied before F.cross_entropy, which applies log-softmax itself: pass the raw logits",
         F.cross_entropy(torch.softmax(pred, -1), target)),
        ("F.nll_loss expects log-probabilities: use F.cross_entropy on the logits, or log_softmax first",
         F.nll_loss(torch.softmax(pred, -1), target)),
        ("F.nll_loss expects log-probabilities and a mean over the predictions: the loss is the mean of "
         "-log p(next token)", F.nll_loss(pred, target)),
        ("the loss should be in nats (natural logarithm), not bits", F.cross_entropy(pred, target) / math.log(2)),
        ("the logits and the targets are flattened in different orders: reshape both (B, T - 1, ...) arrays the "
         "same way", F.cross_entropy(pred, ids[:, 1:].t().reshape(-1))),
    ]


def _check_loss_case(fn: Callable) -> Callable:
    def check(logits, ids, *mode):
        grad = mode == ("grad",)
        logits = logits.clone().requires_grad_(grad)
        before_l, before_i = logits.detach().clone(), ids.clone()
        result = run_student(fn, logits, ids, forbidden=_FORBIDDEN_LOSS, what="next_token_loss")
        if isinstance(result, float):
            raise CheckFailed("next_token_loss should return a tensor (a float from .item() cannot be "
                              "back-propagated)")
        loss = require_tensor(result, "the result of next_token_loss")
        if not torch.equal(logits.detach(), before_l) or not torch.equal(ids, before_i):
            raise CheckFailed("next_token_loss changed logits or ids in place")
        if loss.dim() != 0:
            raise CheckFailed(f"next_token_loss should return one number (a 0-dim tensor), got shape "
                              f"{tuple(loss.shape)}: take the mean over every prediction")
        if loss.dtype != logits.dtype:
            raise CheckFailed(f"for {logits.dtype} logits the loss should be {logits.dtype} too")
        expected = _GPT.next_token_loss(logits.detach(), ids)
        if not close(loss.detach(), expected):
            for message, variant in _loss_variants(logits, ids):
                if close(loss.detach().double(), variant, torch.float32):
                    raise CheckFailed(message)
            raise CheckFailed("the loss differs from the mean cross-entropy of logits[:, :-1] against ids[:, 1:]")
        if grad:
            if not loss.requires_grad:
                raise CheckFailed("the loss is detached from the logits: loss.backward() must reach them")
            (g,) = torch.autograd.grad(loss, logits)
            ref = logits.detach().clone().requires_grad_(True)
            (g_ref,) = torch.autograd.grad(_GPT.next_token_loss(ref, ids), ref)
            if not close(g, g_ref):
                raise CheckFailed("the loss has the right value but the wrong gradient")

    return check


def check_next_token_loss(fn: Callable, points: float | None = None) -> float | None:
    """Check ``next_token_loss(logits (B, T, V), ids (B, T)) -> mean cross-entropy of the next token``."""
    cases = _LOSS_VISIBLE if points is None else _LOSS_VISIBLE + _LOSS_HIDDEN
    return score_cases(cases, _check_loss_case(fn), points)


# ================================================== sampling (Part 5)

_DRAWS = 8000  # draws per row of logits in one case
_Z = 6.0  # per-token bound in standard deviations


def _sampling_case(seed: int, rows: int, V: int, temperature: float, top_k: int | None, scale: float = 1.5):
    """``rows`` distinct rows of logits, each repeated ``_DRAWS`` times: (rows * _DRAWS, V)."""

    def make():
        g = torch.Generator().manual_seed(seed)
        distinct = scale * torch.randn(rows, V, generator=g)  # (rows, V), no ties
        return distinct, temperature, top_k, seed

    return make


_SAMPLE_VISIBLE = [
    Case("temperature 1", _sampling_case(11, 2, 8, 1.0, None)),
    Case("temperature 0.5", _sampling_case(12, 1, 8, 0.5, None)),
    Case("top-k", _sampling_case(13, 2, 10, 1.0, 3)),
]
_SAMPLE_HIDDEN = [
    Case("temperature 2", _sampling_case(601, 2, 12, 2.0, None)),
    Case("temperature and top-k together", _sampling_case(602, 2, 12, 0.7, 5), weight=2.0),
    Case("top-k, one row", _sampling_case(603, 1, 16, 1.3, 4)),
    Case("top_k = 1 is greedy", _sampling_case(604, 3, 9, 1.0, 1)),
    Case("top_k >= vocabulary keeps every token", _sampling_case(605, 1, 6, 1.0, 6)),
    Case("a seeded generator repeats the draw", lambda: (*_sampling_case(606, 2, 8, 0.8, 4)(), "repeat"),
         weight=2.0),
]


def _probs(logits: torch.Tensor, temperature: float, top_k: int | None) -> torch.Tensor:
    return _GPT.next_token_probs(logits.double(), temperature, top_k).double()


def _sampling_variants(distinct: torch.Tensor, temperature: float, top_k: int | None):
    """(message, probabilities (rows, V)) of the mistakes; multinomial renormalises, so do they."""
    V = distinct.shape[-1]
    x = distinct.double()
    k = top_k if top_k is not None and top_k < V else None

    def normalise(p):
        return p / p.sum(-1, keepdim=True)

    out = [("every draw is the most likely token: that is greedy decoding; draw with "
            "torch.multinomial(probs, 1) instead of taking the argmax", F.one_hot(x.argmax(-1), V).double())]
    if temperature != 1.0:
        out += [
            ("the distribution does not change with the temperature: divide the logits by the temperature "
             "*before* the softmax (dividing the probabilities after it changes nothing once they are "
             "renormalised)", _probs(x, 1.0, top_k)),
            ("the logits were multiplied by the temperature: divide them, so that a temperature below 1 sharpens "
             "the distribution and one above 1 flattens it", _probs(x * temperature, 1.0, top_k)),
        ]
    if k is not None:
        p = torch.softmax(x / temperature, -1)
        kept = p >= p.topk(k, -1).values[..., -1:]
        smallest = p <= (-p).topk(k, -1).values.neg()[..., -1:]
        out += [
            ("top_k is ignored: only the top_k most likely tokens may be drawn", _probs(x, temperature, None)),
            ("after keeping the top k, the probabilities were renormalised with a second softmax, which gives the "
             "dropped tokens weight again: divide the kept probabilities by their sum, or set the other logits to "
             "-inf before a single softmax", torch.softmax(p * kept, -1)),
            ("top_k kept the k *least* likely tokens: keep the k largest logits", normalise(p * smallest)),
            ("all kept tokens are drawn equally often: draw them in proportion to their probabilities",
             normalise(kept.double())),
        ]
        if k > 1:
            out.append((f"top_k keeps the wrong number of tokens: exactly top_k = {k} tokens may be drawn, here "
                        "one fewer", _probs(x, temperature, k - 1)))
        out.append((f"top_k keeps the wrong number of tokens: exactly top_k = {k} tokens may be drawn, here "
                    "one more", _probs(x, temperature, k + 1)))
    out.append(("all tokens are drawn equally often: draw them in proportion to softmax(logits / temperature)",
                torch.full_like(x, 1.0 / V)))
    return out


def _fits(counts: torch.Tensor, probs: torch.Tensor, n: int) -> bool:
    """Whether draws ``counts`` (rows, V) of ``n`` each are consistent with ``probs`` (rows, V)."""
    if bool(((probs == 0) & (counts > 0)).any()):
        return False
    mean = n * probs
    sd = (n * probs * (1 - probs)).sqrt()
    return bool(((counts - mean).abs() <= _Z * sd + 2).all())


def _draw(fn: Callable, logits: torch.Tensor, temperature, top_k, seed: int, global_seed: int) -> torch.Tensor:
    """One call of the student's sampler with a seeded generator; the notebook's random state is kept."""
    before = logits.clone()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(global_seed)
        result = run_student(fn, logits, temperature, top_k, torch.Generator().manual_seed(seed),
                             forbidden=_FORBIDDEN_SAMPLING, what="sample_next")
    if not torch.equal(logits, before):
        raise CheckFailed("sample_next changed the logits in place (for example with div_); compute on new tensors")
    ids = require_tensor(result, "the result of sample_next")
    if ids.dim() == 2 and ids.shape[-1] == 1:
        ids = ids[:, 0]  # (B, 1), as torch.multinomial returns it, is fine too
    if tuple(ids.shape) != (logits.shape[0],):
        raise CheckFailed(f"sample_next should return one id per row of logits, shape (B,), got {tuple(ids.shape)}")
    if ids.is_floating_point() or ids.dtype == torch.bool:
        raise CheckFailed(f"sample_next should return integer token ids (torch.long), got {ids.dtype}")
    if bool(((ids < 0) | (ids >= logits.shape[-1])).any()):
        raise CheckFailed("sample_next returned ids outside 0 .. V - 1")
    return ids.long()


def _check_sampling_case(fn: Callable) -> Callable:
    def check(distinct, temperature, top_k, seed, *mode):
        rows, V = distinct.shape
        logits = distinct.repeat_interleave(_DRAWS, dim=0)  # (rows * N, V): row r repeated N times
        ids = _draw(fn, logits, temperature, top_k, seed, seed + 1)
        if mode == ("repeat",):
            again = _draw(fn, logits, temperature, top_k, seed, seed + 2)
            if not torch.equal(ids, again):
                raise CheckFailed("two calls with generators seeded alike gave different draws: pass generator "
                                  "to torch.multinomial (..., generator=generator)")
        counts = F.one_hot(ids.view(rows, _DRAWS), V).sum(1).double()  # (rows, V)
        expected = _probs(distinct, temperature, top_k)
        if _fits(counts, expected, _DRAWS):
            return
        for message, variant in _sampling_variants(distinct, temperature, top_k):
            if _fits(counts, variant, _DRAWS):
                raise CheckFailed(message)
        if top_k is not None and bool(((expected == 0) & (counts > 0)).any()):
            raise CheckFailed("tokens outside the top k were drawn: only the top_k most likely tokens may be drawn")
        raise CheckFailed("the draws do not follow softmax(logits / temperature) restricted to the top_k largest "
                          "logits")

    return check


def check_sample_next(fn: Callable, points: float | None = None) -> float | None:
    """Check ``sample_next(logits (B, V), temperature, top_k, generator) -> ids (B,)`` by the counts of its draws."""
    cases = _SAMPLE_VISIBLE if points is None else _SAMPLE_VISIBLE + _SAMPLE_HIDDEN
    return score_cases(cases, _check_sampling_case(fn), points)


# ================================================== perplexity (Part 6)


def perplexity_test_model(seed: int = 0, *, vocab_size: int = 12, block_size: int = 8) -> torch.nn.Module:
    """A small random GPT whose predictions are far from uniform (its weights are large), in eval mode.

    The global random state is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        cfg = _GPT.GPTConfig(vocab_size=vocab_size, block_size=block_size, n_layer=2, n_head=2, n_embd=16)
        model = _GPT.GPT(cfg)
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() > 1:
                    p.normal_(0.0, 0.6)
    return model.eval()


def _ppl_case(seed: int, n_tokens: int, block_size: int = 8, vocab_size: int = 12):
    def make():
        g = torch.Generator().manual_seed(seed)
        data = torch.randint(vocab_size, (n_tokens,), generator=g)
        return perplexity_test_model(seed, vocab_size=vocab_size, block_size=block_size), data

    return make


_PPL_VISIBLE = [Case("a stream of whole windows", _ppl_case(21, 8 * 5 + 1))]
_PPL_HIDDEN = [
    Case("a last, shorter window", _ppl_case(701, 8 * 4 + 4), weight=2.0),
    Case("a stream shorter than the context", _ppl_case(702, 6)),
    Case("two tokens: one prediction", _ppl_case(703, 2)),
    Case("another context length", _ppl_case(704, 5 * 9 + 3, block_size=5, vocab_size=20), weight=2.0),
]


@torch.no_grad()
def _token_nll(model, data: torch.Tensor, block_size: int, *, stride: int | None = None, shift: bool = True):
    """Negative log-likelihood of each predicted token, and each window's, as the windows are cut."""
    stride = block_size if stride is None else stride
    per_window = []
    for start in range(0, data.numel() - 1, stride):
        x = data[start:start + block_size]
        y = data[start + 1:start + block_size + 1]
        x = x[: y.numel()]
        if shift is False:
            y = x
        if x.numel() == 0:
            break
        logits, _ = model(x[None])
        per_window.append(F.cross_entropy(logits[0].double(), y, reduction="none"))
    return per_window


def _diagnose_perplexity(value: float, model, data: torch.Tensor) -> str:
    T = model.config.block_size
    windows = _token_nll(model, data, T)
    nll = torch.cat(windows)
    mean = nll.mean().item()
    full = [w for w in windows if w.numel() == T] or windows
    known = [
        ("returned the mean loss; perplexity is its exponential, exp(mean negative log-likelihood)", mean),
        ("perplexity is exp(mean loss) with the loss in nats; 2 ** loss needs the loss in bits", 2 ** mean),
        ("each predicted token must count once: averaging the mean loss of each window gives the short last "
         "window too much weight", math.exp(torch.stack([w.mean() for w in windows]).mean().item())),
        ("the tokens of the last, shorter window are missing: every token after the first is predicted exactly "
         "once", math.exp(torch.cat(full).mean().item())),
        ("the targets must be the next tokens: the model's prediction at position t is scored against the token "
         "at t + 1", math.exp(torch.cat(_token_nll(model, data, T, shift=False)).mean().item())),
        ("perplexity is the exponential of the mean negative log-likelihood (a geometric mean), not one over the "
         "mean probability", 1.0 / nll.neg().exp().mean().item()),
        ("the windows skip tokens: window j reads data[j*T : (j+1)*T] and predicts data[j*T+1 : (j+1)*T+1], so "
         "that every token after the first is predicted exactly once",
         math.exp(torch.cat(_token_nll(model, data, T, stride=T + 1)).mean().item())),
    ]
    for message, variant in known:
        if math.isfinite(variant) and abs(value - variant) <= 1e-4 * max(1.0, abs(variant)):
            return message
    return ("the perplexity differs from exp(mean negative log-likelihood of every token after the first, each "
            "predicted from the tokens before it in its window)")


def _check_perplexity_case(fn: Callable) -> Callable:
    def check(model, data):
        before = data.clone()
        result = run_student(fn, model, data, forbidden=_FORBIDDEN_PERPLEXITY, what="perplexity")
        if not torch.equal(data, before):
            raise CheckFailed("perplexity changed data in place")
        if isinstance(result, torch.Tensor) and result.numel() == 1:
            result = result.item()
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            raise CheckFailed(f"perplexity should return a number (a Python float), got {type(result).__name__}")
        value = float(result)
        expected = _GPT.perplexity(model, data)
        if not math.isfinite(value) or abs(value - expected) > 1e-4 * max(1.0, expected):
            raise CheckFailed(_diagnose_perplexity(value, model, data))

    return check


def check_perplexity(fn: Callable, points: float | None = None) -> float | None:
    """Check ``perplexity(model, data) -> float`` on small random GPTs, against ``attnbook.gpt.perplexity``."""
    cases = _PPL_VISIBLE if points is None else _PPL_VISIBLE + _PPL_HIDDEN
    return score_cases(cases, _check_perplexity_case(fn), points)


