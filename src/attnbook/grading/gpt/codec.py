"""Part 3: ``encode(text, merges) -> ids`` (merges by rank) and ``decode(ids, merges) -> str``."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from .._core import run_student
from ..engine import Case, Part, by_kind, first_match
from ..errors import CheckFailed
from ..steps import require_int_list, require_unchanged, snapshot
from ._common import LIBRARIES, N_BYTES, TOK, Pair, text_merge
from .training import CORPUS

__all__ = ["check_encode_decode"]


def _merges(text: str, vocab_size: int) -> dict[Pair, int]:
    return TOK.training.train_bpe_reference(text, vocab_size)


def _vocab(merges: dict[Pair, int]) -> dict[int, bytes]:
    vocab = {i: bytes([i]) for i in range(N_BYTES)}
    for (a, b), idx in merges.items():
        vocab[idx] = vocab[a] + vocab[b]
    return vocab


def _encode_variant(text: str, merges: dict[Pair, int], how: str) -> list[int] | None:
    """Encoding as students get it wrong."""
    ids = [ord(c) for c in text] if how == "ord" else list(text.encode("utf-8"))
    if how == "ord":
        return TOK.bpe.encode_chunk(ids, merges)
    if how in ("reversed", "by_pair", "text", "padded"):  # one pass over the merges in some order
        by_rank = sorted(merges, key=merges.__getitem__)  # the order they were learned in
        order = {"reversed": list(merges)[::-1], "by_pair": sorted(merges)}.get(how, by_rank)
        for pair in order:
            if how in ("text", "padded"):  # str.replace on the ids joined by spaces
                merged = text_merge(ids, pair, merges[pair], padded=how == "padded")
                if merged is None:
                    return None
                ids = merged
            else:
                ids = TOK.pairs.merge(ids, pair, merges[pair])
        return ids
    while len(ids) >= 2:
        stats = TOK.pairs.get_stats(ids)
        known = [p for p in stats if p in merges]
        if not known:
            break
        if how == "count_all":  # the most frequent pair of all, merged if it has a merge, else the end
            pair = min(stats, key=lambda p: (-stats[p], merges.get(p, math.inf)))
            if pair not in merges:
                break
        elif how == "highest":
            pair = max(known, key=merges.__getitem__)
        elif how == "count":  # the most frequent pair of the text, ties to the earliest merge
            pair = min(known, key=lambda p: (-stats[p], merges[p]))
        elif how == "count_first":  # the most frequent pair of the text, ties to the first seen
            pair = max(known, key=stats.get)
        else:  # "first": the leftmost pair that has a merge
            pair = known[0]
        ids = TOK.pairs.merge(ids, pair, merges[pair])
    return ids


_TEXT = ("the ids were merged as text: in a string of joined ids the digits of a pair also match inside longer ids "
         "(`1 2` inside `11 2`); merge lists of ids, not strings")
ENCODE_MISTAKES = [
    # highest before reversed: on the statement's `aabcab` both give the same ids
    ("highest", "the merges were applied in the wrong order: among the pairs present, merge the one with the "
                "lowest id (learned earliest) first, not the highest"),
    ("reversed", "the merges were applied in the wrong order: apply them by rank, the earliest learned (lowest "
                 "id) first, because later merges are built from earlier ones"),
    ("count", "the pair to merge was chosen by its count in this text; choose by rank instead: the pair whose "
              "merge was learned earliest (lowest id)"),
    ("count_first", "the pair to merge was chosen by its count in this text; choose by rank instead: the pair "
                    "whose merge was learned earliest (lowest id)"),
    ("count_all", "the pair to merge was chosen by its count in this text; choose by rank instead: among the "
                  "pairs that have a merge, the one learned earliest (lowest id)"),
    ("first", "the pair to merge was chosen by its place in the text (leftmost first); choose by rank instead: "
              "the pair whose merge was learned earliest (lowest id)"),
    ("by_pair", "the merges were applied sorted by their pairs; apply them by rank, the lowest id first"),
    ("ord", "encoding must start from the UTF-8 bytes of the text (list(text.encode('utf-8'))), not from ord() "
            "of each character"),
    ("text", _TEXT),
    ("padded", "the ids were merged with str.replace on joined ids, which misses an occurrence right after "
               "another one (`a b a b`: the separator between them is used up); merge lists of ids, not strings"),
]


def _encode(text: str, corpus: str, vocab_size: int) -> Callable[[], tuple]:
    return lambda: ("encode", text, _merges(corpus, vocab_size))


def _decode(text: str, corpus: str, vocab_size: int, cut: int = 0) -> Callable[[], tuple]:
    """Decode the reference encoding of ``text``; ``cut`` drops that many ids from the end."""

    def make():
        merges = _merges(corpus, vocab_size)
        ids = TOK.bpe.encode_chunk(list(text.encode("utf-8")), merges)
        return "decode", ids[: len(ids) - cut], merges

    return make


_ROUND = "the rat sat on the cat's hat"
_SPLIT = {(100, 195): 256}  # d and the first of the two bytes of é (195, 169): é is split over two tokens
VISIBLE = (  # the statement's examples, then a round trip
    Case("encode", lambda: ("encode", "aaabdaaabac", _merges("aaabdaaabac", N_BYTES + 3))),
    # by rank ca, then ab: [97, 257, 256, 98]; by count ab first, leftmost aa first, highest id aa first
    Case("encode: merges applied by rank", lambda: ("encode", "aabcab", {(99, 97): 256, (97, 98): 257,
                                                                        (97, 97): 258})),
    Case("encode: non-ASCII text", lambda: ("encode", "dé", dict(_SPLIT))),  # [256, 169], not from ord()
    # ab, cd, then abcd: one token is left, and no pair (a loop that looks for one anyway fails)
    Case("encode: the text merges into one token", lambda: ("encode", "abcd", {(97, 98): 256, (99, 100): 257,
                                                                               (256, 257): 258})),
    Case("encode", _encode(_ROUND, CORPUS, N_BYTES + 20)),
    Case("decode", _decode(_ROUND, CORPUS, N_BYTES + 20)),
    # 'dé \ufffd': é spans two tokens, and 240, 159 begin the four bytes of 🙂 and stop there
    Case("decode: non-ASCII text, a character cut in two", lambda: ("decode", [256, 169, 32, 240, 159],
                                                                     dict(_SPLIT))),
)


def _diagnose_decode(got: str, ids: list[int], merges: dict[Pair, int]) -> str:
    vocab = _vocab(merges)
    swapped = {i: bytes([i]) for i in range(N_BYTES)}
    for (a, b), idx in merges.items():
        swapped[idx] = swapped[b] + swapped[a]
    joined = b"".join(vocab[i] for i in ids)
    known = [
        ("a broken character must decode as the replacement character U+FFFD (errors='replace'), not vanish",
         joined.decode("utf-8", errors="ignore")),
        ("each token was decoded on its own: a character can span two tokens; join the bytes of all tokens "
         "first, then decode UTF-8 once", "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)),
        ("an id below 256 is one byte, bytes([i]), not the character chr(i): join the bytes of all tokens and "
         "decode them as UTF-8 once, b''.join(...).decode('utf-8', errors='replace')",
         "".join(chr(b) for b in joined)),
        ("the bytes of a merged token are its pair's bytes in order: vocab[idx] = vocab[a] + vocab[b]",
         b"".join(swapped[i] for i in ids).decode("utf-8", errors="replace")),
    ]
    if got == joined.decode("utf-8", errors="replace").replace("\ufffd", ""):
        return known[0][0]
    for message, variant in known:
        if got == variant:
            return message
    return "decode(ids, merges) must give back the text: the bytes of every token joined, decoded as UTF-8"


def _check_encode(encode: Callable, text: str, merges: dict) -> None:
    saved = list(merges.items())
    got = require_int_list(run_student(encode, text, merges, what="encode"), "encode's result")
    if list(merges.items()) != saved:
        raise CheckFailed("encode changed the merges dictionary; leave it as it is")
    if got == TOK.bpe.encode_chunk(list(text.encode("utf-8")), merges):
        return
    decodes = b"".join(_vocab(merges).get(i, b"?") for i in got) == text.encode("utf-8")
    fallback = ("the ids decode to the text, but they are not BPE's encoding: apply the merges by rank, the lowest "
                "id first, until no pair has a merge" if decodes else
                "encode must start from the UTF-8 bytes and apply the merges by rank until no pair has a merge")
    raise first_match(got, ((message, lambda how=how: _encode_variant(text, merges, how))
                            for how, message in ENCODE_MISTAKES), fallback, matches=operator.eq)


def _check_decode(decode: Callable, ids: list, merges: dict) -> None:
    before = snapshot(ids)
    try:
        result = run_student(decode, ids, merges, what="decode")
    except CheckFailed as err:
        if "UnicodeDecodeError" in str(err):
            raise err.hinted(". A token can end in the middle of a character: join the bytes of all tokens, "
                             "then decode them once with errors='replace'") from None
        raise
    require_unchanged(before, ids, message="decode changed ids in place")
    if not isinstance(result, str):
        raise CheckFailed(f"decode should return a str, got {type(result).__name__}")
    if result != b"".join(_vocab(merges)[i] for i in ids).decode("utf-8", errors="replace"):
        raise CheckFailed(_diagnose_decode(result, ids, merges))


_check = by_kind(encode=_check_encode, decode=_check_decode)


FORBIDDEN = (
    "attnbook.tokenizers.bpe.encode_chunk", "attnbook.tokenizers.bpe._encode_chunk_heap",
    "attnbook.tokenizers.bpe.BPETokenizer",
) + LIBRARIES

check_encode_decode = Part(name="check_encode_decode", visible=VISIBLE, check=_check,
                           forbidden=FORBIDDEN)
