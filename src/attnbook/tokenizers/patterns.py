"""Regex pre-splitting: cut text into chunks that BPE may never merge across.

A byte-level BPE trained on raw text happily learns tokens such as ``"e. T"``
or ``"dog!"``, spending vocabulary on accidents of punctuation. GPT-2 first
splits text with a regular expression -- contractions, runs of letters with
an optional leading space, runs of digits, runs of other symbols, whitespace
-- and learns merges only *inside* those chunks. GPT-4's ``cl100k_base``
pattern refines this: contractions in any case, numbers in groups of at most
three digits, and newlines kept apart from other whitespace.

The patterns need ``\\p{L}`` (any letter) and ``\\p{N}`` (any number), which the
standard library's :mod:`re` lacks, so they are compiled with the third-party
:mod:`regex` module (the one tiktoken uses in Python as well).

References: Radford et al., *Language Models are Unsupervised Multitask
Learners* (2019), section 2.2; the patterns as published in OpenAI's
``tiktoken`` (``r50k_base``/``gpt2`` and ``cl100k_base``).
"""

from __future__ import annotations

from functools import lru_cache

import regex

__all__ = ["GPT2_SPLIT_PATTERN", "GPT4_SPLIT_PATTERN", "SPLIT_PATTERNS", "resolve_pattern", "split_text"]

#: GPT-2's split pattern (also ``r50k_base``/``p50k_base``).
GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: GPT-4's split pattern (``cl100k_base``).
GPT4_SPLIT_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
)

#: Names accepted wherever a pattern is expected.
SPLIT_PATTERNS = {"gpt2": GPT2_SPLIT_PATTERN, "gpt4": GPT4_SPLIT_PATTERN, "cl100k": GPT4_SPLIT_PATTERN}


def resolve_pattern(pattern: str | None) -> str | None:
    """Turn a pattern name (``"gpt2"``, ``"gpt4"``/``"cl100k"``) into its regex.

    ``None`` (no pre-splitting) and any other string (a custom regex) pass
    through unchanged; a custom regex must compile.

    >>> resolve_pattern("gpt2") == GPT2_SPLIT_PATTERN
    True
    >>> resolve_pattern(None) is None
    True
    """
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be None, a name in {sorted(SPLIT_PATTERNS)} or a regex str, "
                        f"got {type(pattern).__name__}")
    pattern = SPLIT_PATTERNS.get(pattern, pattern)
    try:
        _compile(pattern)
    except regex.error as exc:
        raise ValueError(f"pattern {pattern!r} is neither a known name {sorted(SPLIT_PATTERNS)} "
                         f"nor a valid regex: {exc}") from None
    return pattern


@lru_cache(maxsize=16)
def _compile(pattern: str) -> regex.Pattern:
    return regex.compile(pattern)


def split_text(text: str, pattern: str | None) -> list[str]:
    """Split ``text`` into the chunks that BPE works inside.

    The chunks always join back to the original text. With ``pattern=None``
    the whole text is a single chunk.

    >>> split_text("Hello world, it's 2024!", "gpt2")
    ['Hello', ' world', ',', ' it', "'s", ' 2024', '!']
    >>> split_text("Hello world, it's 2024!", "gpt4")
    ['Hello', ' world', ',', ' it', "'s", ' ', '202', '4', '!']
    >>> split_text("ab  c", None)
    ['ab  c']
    """
    pattern = resolve_pattern(pattern)
    if pattern is None:
        return [text] if text else []
    return _compile(pattern).findall(text)
