"""What chapter 4's parts share: private copies of the references, library names, small conversions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._core import private_modules
from .._shared import available
from ..errors import CheckFailed

# The checks' own copies of the references: a notebook that patched the public modules changes nothing here.
TOK, GPT = private_modules("attnbook.tokenizers", "attnbook.gpt")

N_BYTES = 256
Pair = tuple[int, int]


# Libraries that would do a BPE part's whole job: tiktoken's Encoding (and its Rust core) encodes and decodes
# with given ranks, its educational module trains and encodes; Hugging Face tokenizers trains and encodes BPE.
LIBRARIES = available((
    "tiktoken.Encoding", "tiktoken.core.Encoding", "tiktoken._tiktoken.CoreBPE",
    "tiktoken._educational.bpe_train", "tiktoken._educational.bpe_encode",
    "tiktoken._educational.train_simple_encoding", "tiktoken._educational.SimpleBytePairEncoding",
    "tokenizers.Tokenizer", "tokenizers.models.BPE", "tokenizers.trainers.BpeTrainer",
    "tokenizers.ByteLevelBPETokenizer", "tokenizers.CharBPETokenizer", "tokenizers.SentencePieceBPETokenizer",
    "tokenizers.implementations.ByteLevelBPETokenizer", "tokenizers.implementations.CharBPETokenizer",
    "tokenizers.implementations.SentencePieceBPETokenizer",
))


def first_message(fn: Callable, *args: object, **kwargs: object) -> tuple[object, str | None]:
    """Run ``fn``; its result, or the message of the CheckFailed it raises."""
    try:
        return fn(*args, **kwargs), None
    except CheckFailed as err:
        return None, str(err)


def require_pair_dict(result: object, what: str, values: str) -> dict:
    """``result`` as a dict keyed by pairs of ids, or a failure saying what ``what`` returns."""
    if not isinstance(result, dict):
        raise CheckFailed(f"{what} should return a dict {{(a, b): {values}}}, got {type(result).__name__}")
    if any(not isinstance(k, tuple) or len(k) != 2 for k in result):
        raise CheckFailed(f"the keys of {what}'s dict should be pairs of ids, tuples (a, b)")
    return dict(result)


def text_merge(ids: Sequence[int], pair: Pair, idx: int, *, padded: bool) -> list[int] | None:
    """``merge`` written with ``str.replace`` on the ids joined by spaces (``None`` if that cannot be read back).

    Unpadded, the digits of the pair also match inside longer ids (``1 2`` in
    ``11 2``); padded with spaces, an occurrence right after another one is
    missed (the space between them was used up).

    >>> text_merge([11, 2, 1, 2], (1, 2), 9, padded=False), text_merge([1, 2, 1, 2], (1, 2), 9, padded=True)
    ([19, 9], [9, 1, 2])
    """
    pad = " " if padded else ""
    joined = pad + " ".join(map(str, ids)) + pad
    out = joined.replace(f"{pad}{pair[0]} {pair[1]}{pad}", f"{pad}{idx}{pad}")
    try:
        return [int(piece) for piece in out.split()]
    except ValueError:
        return None
