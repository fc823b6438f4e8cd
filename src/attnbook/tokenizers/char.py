"""Character-level tokenization: one token per distinct character.

The simplest tokenizer there is, and the baseline for BPE: the vocabulary is
the sorted set of characters seen in the training text (84 for Shakespeare),
every character is one token, and a character never seen cannot be encoded.
"""

from __future__ import annotations

from collections.abc import Iterable

from attnbook._checks import distinct_characters

__all__ = ["CharTokenizer"]


class CharTokenizer:
    """Map each character of a fixed alphabet to an id, and back.

    The baseline: no training beyond listing the characters, one token per
    character. Its sibling :class:`~attnbook.tokenizers.BPETokenizer` learns
    longer tokens and covers every string through bytes.

    >>> tok = CharTokenizer.from_text("hello world")
    >>> tok.vocab_size, tok.itos[0], tok.itos[1]
    (8, ' ', 'd')
    >>> tok.encode("hello")
    [3, 2, 4, 4, 5]
    >>> tok.decode([3, 2, 4, 4, 5])
    'hello'
    """

    def __init__(self, chars: Iterable[str]) -> None:
        """``chars`` lists the alphabet; the id of a character is its position."""
        itos = distinct_characters("chars", chars)
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {c: i for i, c in enumerate(itos)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The tokenizer whose alphabet is the sorted set of characters in ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return cls(sorted(set(text)))

    @property
    def vocab_size(self) -> int:
        """The number of distinct tokens."""
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        """The id of each character of ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        try:
            return [self.stoi[c] for c in text]
        except KeyError as exc:
            raise ValueError(f"character {exc.args[0]!r} is not in the vocabulary of "
                             f"{self.vocab_size} characters") from None

    def decode(self, ids: Iterable[int]) -> str:
        """The text whose characters have the ids ``ids``."""
        ids = _as_int_list(ids)
        bad = [i for i in ids if not 0 <= i < len(self.itos)]
        if bad:
            raise ValueError(f"id {bad[0]} is outside the vocabulary (0..{len(self.itos) - 1})")
        return "".join(self.itos[i] for i in ids)

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"


def _as_int_list(ids: object) -> list[int]:
    """Accept a list/tuple of ints, or anything with ``.tolist()`` (tensor, array)."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, int):
        raise TypeError("ids must be a sequence of ints, got a single int")
    if not isinstance(ids, Iterable):
        raise TypeError(f"ids must be a sequence of ints, got {type(ids).__name__}")
    values = list(ids)
    for i in values:
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"ids must be ints, got {type(i).__name__} ({i!r})")
    return values
