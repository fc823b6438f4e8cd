"""Part 7: ``encode_word(word, vocab, unk_token="[UNK]") -> list of pieces``, WordPiece's greedy
longest-match-first, compared with :func:`attnbook.tokenizers.wordpiece.encode_word` word by word.

The vocabularies are built so that the mistakes show: words where the
shortest match, a continuation looked up without ``##``, an ``[UNK]`` for one
piece only, or a search that backtracks give other pieces.

>>> words, vocab, unk = check_wordpiece_encode.visible[0].make()
>>> words[:2], vocab["##able"]
(['unaffable', 'playing'], 9)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection

from .._core import run_student
from .._shared import available
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ._common import WP

BASE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "una", "##ff", "##a", "##able", "##aff", "##f", "a",
        "play", "p", "##l", "##ay", "##ing", "##in", "##g", "pl", "##s", "s", "##i", "##n"]


def _case(words: list[str], extra: tuple[str, ...] = (), unk: str = "[UNK]", drop: tuple[str,
          ...] = ()) -> Callable[[], tuple]:
    def make():
        tokens = [t for t in BASE if t not in drop] + list(extra)
        if unk not in tokens:
            tokens.append(unk)
        return list(words), {t: i for i, t in enumerate(tokens)}, unk

    return make


def _greedy(word: str, vocab: Collection[str], unk: str, *, longest: bool = True, hashes: bool = True,
            whole_word_unk: bool = True) -> list[str]:
    """WordPiece with one of its rules switched off: each ``False`` is a mistake students make.

    ``longest=False`` takes the shortest match; ``hashes=False`` looks continuations up (and returns
    them) without ``##``; ``whole_word_unk=False`` makes only the unmatched character unknown.
    """
    known = vocab if hashes else {t.removeprefix("##") for t in vocab}
    pieces, start = [], 0
    while start < len(word):
        ends = range(len(word), start, -1) if longest else range(start + 1, len(word) + 1)
        for end in ends:
            piece = word[start:end] if start == 0 or not hashes else "##" + word[start:end]
            if piece in known:
                pieces.append(piece)
                start = end
                break
        else:
            if whole_word_unk:
                return [unk]
            pieces.append(unk)
            start += 1
    return pieces


MISTAKES = (
    ("the shortest match was taken: WordPiece takes the longest piece in the vocabulary at each step",
     {"longest": False}),
    ("the ## prefix is missing: a piece that continues a word is looked up, and returned, as ##piece",
     {"hashes": False}),
    ("only the piece that matched nothing became unknown: if any part of a word cannot be matched, the whole "
     "word is [UNK] (a single unk_token)", {"whole_word_unk": False}),
)


def _check(fn: Callable) -> Callable:
    def check_one(words, vocab, unk):
        for word in words:
            result = run_student(fn, word, dict(vocab), unk, what="encode_word")
            if not isinstance(result, list) or not all(isinstance(p, str) for p in result):
                raise CheckFailed(f"encode_word should return a list of str pieces, got {type(result).__name__}")
            want = WP.encode_word(word, vocab, unk)
            if result == want:
                continue
            if want == [unk] and unk != "[UNK]" and result == ["[UNK]"]:
                raise CheckFailed("an unknown word should give [unk_token], the unk_token passed in, not always "
                                  "'[UNK]'")
            spelled = "".join(p.removeprefix("##") for p in result) == word and all(p in vocab for p in result)
            fallback = ("WordPiece is greedy: it takes the longest piece and never goes back to try a shorter one, "
                        "so a word that greedy matching cannot finish is [UNK]" if want == [unk] and spelled else
                        "a word that cannot be spelled with the vocabulary should give [unk_token]" if want == [unk]
                        else "the pieces differ from greedy longest-match-first with ## continuations")
            raise first_match(result, ((message, _greedy(word, vocab, unk, **rules)) for message, rules in MISTAKES),
                              fallback, matches=operator.eq)

    return check_one


check_wordpiece_encode = Part(
    name="check_wordpiece_encode",
    visible=(
        Case("longest match first", _case(["unaffable", "playing", "a", "plays"])),
        Case("unknown words, unk_token '<oov>'", _case(["unsafe", "zebra", "plays"], unk="<oov>")),
    ),
    check=_check,
    forbidden=("attnbook.tokenizers.wordpiece.encode_word", "attnbook.tokenizers.wordpiece.WordPieceTokenizer")
    + available(("tokenizers.Tokenizer", "tokenizers.models.WordPiece")),
)
