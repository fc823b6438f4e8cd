"""Byte-level BPE tokenizer: train, encode, decode, save, load, export to tiktoken.

Over :class:`~attnbook.tokenizers.CharTokenizer` it adds a vocabulary learned
from data: it starts from the 256 byte values, so *any* text encodes (no
unknown characters), and learned merges make frequent strings one token, so
the same text needs far fewer tokens. Optional regex pre-splitting (GPT-2 or
GPT-4 pattern) keeps merges inside words, numbers and punctuation runs.

**Encoding** a chunk applies the learned merges by rank, lowest (earliest
learned) first, until no adjacent pair has a merge (:func:`encode_chunk`).
Results are cached per distinct chunk, so a text costs one regex pass plus a
dictionary lookup per chunk. Encoding by rank reproduces exactly the state the
trainer reached, and gives the same ids as OpenAI's ``tiktoken`` loaded with
the learned ranks (:meth:`BPETokenizer.to_tiktoken`; the tests check it).

**File format** (:meth:`BPETokenizer.save`): one JSON object, written with
one merge per line::

    {"format": "attnbook-bpe", "version": 1,
     "pattern": "<regex or null>",
     "special_tokens": ["<|endoftext|>"],
     "merges": [
      [97, 97],
      [97, 98]
     ]}

The ``k``-th merge (from 0) creates id ``256 + k``; special tokens take the
ids after the last merge, in the order listed.

References: Sennrich et al. (2016); Radford et al. (2019), section 2.2;
OpenAI ``tiktoken``; the ``minbpe`` lecture code by A. Karpathy.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import reduce
from operator import iadd
from typing import TYPE_CHECKING, Literal

import regex

from .pairs import Pair, get_stats, merge
from .patterns import _compile, resolve_pattern
from .training import N_BYTES, to_utf8, train_bpe

if TYPE_CHECKING:  # pragma: no cover
    import tiktoken

__all__ = ["BPETokenizer", "bytes_per_token", "encode_chunk", "gpt2_byte_decoder", "split_special"]

FORMAT_NAME = "attnbook-bpe"
FORMAT_VERSION = 1
_CACHE_LIMIT = 1 << 18  # distinct chunks remembered by one tokenizer


def gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's byte-to-unicode table read backwards: the printable character that stands for each byte -> the byte.

    GPT-2 and Hugging Face's ``ByteLevel`` store token bytes as printable
    characters: printable bytes stand for themselves, the 68 others for
    ``chr(256 + n)`` in byte order. ``bytes(table[c] for c in token)`` gives a
    token's bytes.

    >>> table = gpt2_byte_decoder()
    >>> len(table), table["A"], table["Ġ"], bytes(table[c] for c in "Ġthe")   # Ġ = chr(288): a space
    (256, 65, 32, b' the')
    """
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + n): b for n, b in enumerate(others)}


def encode_chunk(ids: list[int], merges: Mapping[Pair, int]) -> list[int]:
    """Apply ``merges`` to ``ids`` by rank: the earliest-learned merge first.

    Repeat: among the adjacent pairs, take the one with the lowest new id; stop
    when no pair has a merge. The ranks matter, not the order in the text.

    >>> merges = {(97, 97): 256, (97, 98): 257, (256, 257): 258}
    >>> encode_chunk(list(b"aaabdaaabac"), merges)
    [258, 100, 258, 97, 99]
    >>> encode_chunk(list(b"aaab"), {(97, 98): 256, (97, 97): 257})  # ab first
    [257, 256]
    """
    while len(ids) >= 2:
        stats = get_stats(ids)
        pair = min(stats, key=lambda p: merges.get(p, float("inf")))
        if pair not in merges:
            break
        ids = merge(ids, pair, merges[pair])
    return ids


def _encode_chunk_heap(ids: list[int], merges: Mapping[Pair, int]) -> list[int]:
    """Same result as :func:`encode_chunk`, in O(n log n) instead of O(n^2).

    ``ids`` is used as a linked list (``nxt``/``prv`` hold the neighbours,
    merged-away positions become ``-1``) and a heap holds ``(rank, position)``
    for every adjacent pair that has a merge. Equal ranks pop left to right,
    which is :func:`merge`'s non-overlapping left-to-right rule. A popped
    entry is stale, and skipped, when its position was merged away or its
    right neighbour changed (the pair's rank no longer matches). The rank of
    a merge *is* the id it creates.

    >>> _encode_chunk_heap(list(b"aaabdaaabac"), {(97, 97): 256, (97, 98): 257, (256, 257): 258})
    [258, 100, 258, 97, 99]
    """
    n = len(ids)
    get = merges.get
    heap = [(rank, i) for i, rank in enumerate(map(get, zip(ids, ids[1:], strict=False))) if rank is not None]
    if not heap:
        return list(ids)
    heapq.heapify(heap)
    ids = list(ids)
    nxt = list(range(1, n + 1))  # nxt[i] == n: no right neighbour
    prv = list(range(-1, n - 1))  # prv[i] == -1: no left neighbour
    while heap:
        rank, i = heapq.heappop(heap)
        left = ids[i]
        if left < 0:
            continue
        j = nxt[i]
        if j == n or get((left, ids[j])) != rank:
            continue
        ids[i] = rank
        ids[j] = -1
        k = nxt[i] = nxt[j]
        if k < n:
            prv[k] = i
            r = get((rank, ids[k]))
            if r is not None:
                heapq.heappush(heap, (r, i))
        h = prv[i]
        if h >= 0:
            r = get((ids[h], rank))
            if r is not None:
                heapq.heappush(heap, (r, h))
    return [t for t in ids if t >= 0]


def split_special(text: str, specials: Collection[str]) -> list[str]:
    """``text`` cut at every occurrence of the strings ``specials``, each kept as a piece of its own.

    Even positions hold the ordinary text between them (possibly empty), odd
    positions the special strings found, left to right; where two start at
    the same place the longer wins. :meth:`BPETokenizer.encode` cuts the text
    so when special tokens are allowed, then encodes each ordinary piece on
    its own: no merge crosses a special token.

    >>> split_special("hi<|endoftext|>yo<|endoftext|>", ["<|endoftext|>"])
    ['hi', '<|endoftext|>', 'yo', '<|endoftext|>', '']
    >>> split_special("<|end|> text", [])  # nothing allowed: all of it is text
    ['<|end|> text']
    """
    if not specials:
        return [text]
    alternatives = "|".join(regex.escape(s) for s in sorted(specials, key=len, reverse=True))
    return regex.split(f"({alternatives})", text)


class BPETokenizer:
    """Byte-level BPE with optional regex pre-splitting and special tokens.

    What it adds over :class:`~attnbook.tokenizers.CharTokenizer`: a
    vocabulary *learned* from text (merges of frequent pairs), built on the
    256 byte values so that any string encodes, and fewer tokens per text.

    >>> tok = BPETokenizer().train("aaabdaaabac", 256 + 3)
    >>> tok.merges
    {(97, 97): 256, (97, 98): 257, (256, 257): 258}
    >>> tok.encode("aaabdaaabac")
    [258, 100, 258, 97, 99]
    >>> tok.decode([258, 100]), tok.vocab[258]
    ('aaabd', b'aaab')

    With a split pattern merges never cross chunk boundaries, and special
    tokens are recognised only when asked for:

    >>> tok = BPETokenizer("gpt2", special_tokens=["<|endoftext|>"])
    >>> tok = tok.train("the cat, the hat, the bat", 256 + 4)
    >>> [tok.decode([i]) for i in tok.encode("the hat")]  # learned: at, he, the
    ['the', ' ', 'h', 'at']
    >>> tok.encode("<|endoftext|>", allowed_special="all")
    [259]
    """

    def __init__(self, pattern: str | None = None, special_tokens: Iterable[str] = ()) -> None:
        """``pattern``: ``None`` (no pre-split), ``"gpt2"``, ``"gpt4"`` or a regex.

        ``special_tokens``: strings such as ``"<|endoftext|>"`` that get ids of
        their own after the merges and are never learned from the text.
        """
        self.pattern: str | None = resolve_pattern(pattern)
        if isinstance(special_tokens, str):
            raise TypeError("special_tokens must be a list of str, not a single str")
        specials = list(special_tokens)
        for s in specials:
            if not isinstance(s, str) or not s:
                raise ValueError(f"special tokens must be non-empty strings, got {s!r}")
        if len(set(specials)) != len(specials):
            raise ValueError(f"special tokens must be distinct, got {specials}")
        self._specials = specials
        self.merges: dict[Pair, int] = {}
        self._rebuild()

    # --- building ---------------------------------------------------------

    def train(self, text: str, vocab_size: int) -> BPETokenizer:
        """Learn merges from ``text`` until the vocabulary has ``vocab_size`` tokens.

        ``vocab_size`` counts the 256 bytes, the merges and the special tokens.
        Uses the fast trainer :func:`~attnbook.tokenizers.train_bpe` (same
        merges as the reference trainer). Returns ``self``.
        """
        if isinstance(vocab_size, int) and not isinstance(vocab_size, bool):
            if vocab_size < N_BYTES + len(self._specials):
                raise ValueError(f"vocab_size must be at least {N_BYTES} bytes + {len(self._specials)} "
                                 f"special tokens = {N_BYTES + len(self._specials)}, got {vocab_size}")
            vocab_size -= len(self._specials)
        self.merges = train_bpe(text, vocab_size, self.pattern)
        self._rebuild()
        return self

    @classmethod
    def from_merges(cls, merges: Mapping[Pair, int], pattern: str | None = None,
                    special_tokens: Iterable[str] = ()) -> BPETokenizer:
        """A tokenizer with given merges (``{(a, b): 256 + k}`` in rank order)."""
        tok = cls(pattern, special_tokens)
        tok.merges = _check_merges(merges)  # set merges only this way: derived tables follow
        tok._rebuild()
        return tok

    def _rebuild(self) -> None:
        """Recompute everything derived from the merges and special tokens."""
        table = [bytes([i]) for i in range(N_BYTES)]
        for a, b in self.merges:
            table.append(table[a] + table[b])
        first_special = len(table)
        self.special_tokens: dict[str, int] = {s: first_special + k for k, s in enumerate(self._specials)}
        table.extend(s.encode("utf-8") for s in self._specials)
        self._table = table
        self.vocab: dict[int, bytes] = dict(enumerate(table))  # the bytes of every token
        self._cache: dict[str, list[int]] = {}
        self._findall = _compile(self.pattern).findall if self.pattern is not None else _whole

    # --- properties ---------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Bytes + merges + special tokens."""
        return len(self._table)

    def mergeable_ranks(self) -> dict[bytes, int]:
        """``{token bytes: id}`` for bytes and merges: tiktoken's view of the vocabulary."""
        return {t: i for i, t in enumerate(self._table[: N_BYTES + len(self.merges)])}

    # --- encoding -----------------------------------------------------------

    def encode(self, text: str, allowed_special: Literal["all", "none"] | Collection[str] = "none") -> list[int]:
        """Token ids of ``text``.

        ``allowed_special`` says which special tokens are recognised in the
        text: ``"none"`` (default; they encode as ordinary text), ``"all"``,
        or a collection of them.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        to_utf8(text)  # clear error for lone surrogates
        if allowed_special == "none":
            allowed: list[str] = []
        elif allowed_special == "all":
            allowed = list(self._specials)
        elif isinstance(allowed_special, str):
            raise ValueError(f'allowed_special must be "all", "none" or a collection of special tokens, '
                             f"got the string {allowed_special!r}")
        else:
            allowed = list(allowed_special)
            unknown = [s for s in allowed if s not in self.special_tokens]
            if unknown:
                raise ValueError(f"allowed_special names tokens that are not special tokens: {unknown}")
        if not allowed:
            return self._encode_ordinary(text)
        ids: list[int] = []
        for k, part in enumerate(split_special(text, allowed)):
            if k % 2:  # the special strings found
                ids.append(self.special_tokens[part])
            elif part:
                ids.extend(self._encode_ordinary(part))
        return ids

    def _encode_ordinary(self, text: str) -> list[int]:
        chunks = self._findall(text)
        cache = self._cache
        try:  # the common case once a text's chunks have been seen
            return reduce(iadd, map(cache.__getitem__, chunks), [])
        except KeyError:
            pass
        encoded = {chunk: self._encode_bytes(chunk.encode("utf-8"))
                   for chunk in set(chunks).difference(cache)}
        if len(cache) + len(encoded) <= _CACHE_LIMIT:
            cache.update(encoded)
            table = cache
        else:  # too many distinct chunks to remember: use them for this text only
            table = {**cache, **encoded}
        # reduce(iadd, ...) extends one list with every chunk's ids in C.
        return reduce(iadd, map(table.__getitem__, chunks), [])

    def _encode_bytes(self, data: bytes) -> list[int]:
        # The heap version beats encode_chunk's simple loop even on short
        # words, and long chunks (no split pattern) need it.
        return _encode_chunk_heap(list(data), self.merges)

    # --- decoding -----------------------------------------------------------

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes that ``ids`` stand for."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        ids = list(ids)
        if ids:
            try:
                low, high = min(ids), max(ids)
            except TypeError:
                raise TypeError("ids must be a sequence of ints") from None
            if low < 0 or high >= len(self._table):
                bad = next(i for i in ids if not 0 <= i < len(self._table))
                raise ValueError(f"id {bad} is outside the vocabulary (0..{len(self._table) - 1})")
        try:
            return b"".join(map(self._table.__getitem__, ids))
        except TypeError:
            raise TypeError("ids must be a sequence of ints") from None

    def decode(self, ids: Iterable[int]) -> str:
        """The text that ``ids`` stand for.

        A sequence cut in the middle of a multi-byte character decodes its
        broken end as U+FFFD, the replacement character.
        """
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    # --- files and other libraries -----------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Write the tokenizer to ``path`` (the JSON format in the module docstring)."""
        head = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "pattern": self.pattern,
                "special_tokens": self._specials}
        lines = [json.dumps(head, ensure_ascii=False)[:-1] + ',\n "merges": [']
        lines.append(",\n".join(f"  [{a}, {b}]" for a, b in self.merges))
        lines.append(" ]}\n")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) if self.merges else lines[0] + "]}\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> BPETokenizer:
        """Read a tokenizer written by :meth:`save`."""
        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} is not an {FORMAT_NAME} file (invalid JSON: {exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
            raise ValueError(f"{path} is not an {FORMAT_NAME} file")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"{path} has format version {data.get('version')!r}; "
                             f"this code reads version {FORMAT_VERSION}")
        pairs = data.get("merges", [])
        if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise ValueError(f"{path}: every merge must be a pair of ids")
        merges = {(p[0], p[1]): N_BYTES + k for k, p in enumerate(pairs)}
        if len(merges) != len(pairs):
            raise ValueError(f"{path}: a merge is listed twice")
        return cls.from_merges(merges, data.get("pattern"), data.get("special_tokens", []))

    def to_tiktoken(self, name: str = "attnbook-bpe") -> tiktoken.Encoding:
        """A ``tiktoken.Encoding`` with the same ranks, pattern and special tokens.

        Without a split pattern the whole text is one chunk, as here.
        """
        import tiktoken

        return tiktoken.Encoding(
            name=name,
            pat_str=self.pattern if self.pattern is not None else r"[\s\S]+",
            mergeable_ranks=self.mergeable_ranks(),
            special_tokens=dict(self.special_tokens),
        )

    def __repr__(self) -> str:
        pattern = next((k for k, v in _NAMES.items() if v == self.pattern), None) or self.pattern
        return (f"BPETokenizer(pattern={pattern!r}, vocab_size={self.vocab_size}, "
                f"merges={len(self.merges)}, special_tokens={self._specials})")


def bytes_per_token(train_text: str, texts: Mapping[str, str], vocab_sizes: Sequence[int],
                    pattern: str | None = "gpt2") -> dict[str, list[float]]:
    """Bytes per token of each of ``texts`` under BPE trained on ``train_text``, one value per vocabulary size.

    Training only adds merges, so one run at the largest size gives every
    smaller vocabulary too: a vocabulary of ``V`` tokens is the 256 bytes and
    the first ``V - 256`` merges. Each text is encoded with each of them and
    its UTF-8 length divided by its number of tokens (1.0 with no merges; the
    higher, the shorter the sequence). A text the merges were not learned
    from compresses less, and one in another language far less.

    >>> curves = bytes_per_token("low lower lowest " * 20, {"seen": "lower lowest", "new": "fast"}, [256, 258, 262])
    >>> {name: [round(r, 2) for r in ratios] for name, ratios in curves.items()}
    {'seen': [1.0, 1.5, 2.4], 'new': [1.0, 1.0, 1.33]}
    """
    sizes = [int(V) for V in vocab_sizes]
    if not sizes or min(sizes) < N_BYTES:
        raise ValueError(f"vocab_sizes must hold sizes of at least {N_BYTES} (the bytes), got {list(vocab_sizes)}")
    merges = list(train_bpe(train_text, max(sizes), pattern).items())
    curves: dict[str, list[float]] = {name: [] for name in texts}
    for V in sizes:
        tokenizer = BPETokenizer.from_merges(dict(merges[: V - N_BYTES]), pattern)
        for name, text in texts.items():
            n_tokens = len(tokenizer.encode(text))
            if n_tokens == 0:
                raise ValueError(f"the text {name!r} is empty: it has no tokens to measure")
            curves[name].append(len(text.encode("utf-8")) / n_tokens)
    return curves


def _whole(text: str) -> list[str]:
    return [text] if text else []


def _check_merges(merges: Mapping[Pair, int]) -> dict[Pair, int]:
    """Merges must give ids 256, 257, ... in order, built from earlier ids."""
    checked: dict[Pair, int] = {}
    for k, (pair, idx) in enumerate(merges.items()):
        expected = N_BYTES + k
        if idx != expected:
            raise ValueError(f"merge number {k} {pair} must create id {expected}, got {idx}")
        if (not isinstance(pair, tuple) or len(pair) != 2
                or not all(isinstance(t, int) and 0 <= t < idx for t in pair)):
            raise ValueError(f"merge {pair!r} -> {idx} must join two ids below {idx}")
        checked[pair] = idx
    return checked


_NAMES = {"gpt2": resolve_pattern("gpt2"), "gpt4": resolve_pattern("gpt4")}
