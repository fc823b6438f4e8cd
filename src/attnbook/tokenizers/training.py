"""Training byte-level BPE: the plain algorithm beside the fast one.

Both trainers start from UTF-8 bytes (ids ``0..255``), optionally cut the text
into chunks with a split pattern (see :mod:`attnbook.tokenizers.patterns`), and
repeat ``vocab_size - 256`` times: find the most frequent adjacent pair, give
it the next free id, merge it everywhere. They return the merges as an
ordered dictionary ``{(a, b): new_id}``; the order is the *rank* used when
encoding.

:func:`train_bpe_reference` is the teaching version: after every merge it
counts all pairs again over the whole text (``get_stats``) and rewrites every
chunk (``merge``). It is short and obviously right, and it is the oracle the
tests compare the fast trainer with -- but each merge costs a pass over the
whole text.

:func:`train_bpe` gives the same merges much faster, with three ideas:

1. **Unique chunks with counts.** Shakespeare's five million characters cut
   (GPT-2 pattern) into 1.35 million chunks but only 35 thousand *distinct*
   ones; a chunk that occurs ``f`` times is stored once, its pairs count ``f``.
2. **Incremental counts.** Merging ``(a, b)`` only changes the pairs touching
   each occurrence: ``(x, a)`` and ``(b, y)`` disappear, ``(x, Z)`` and
   ``(Z, y)`` appear. An index from each pair to the chunks that contain it
   says which chunks to visit, so nothing else is rescanned.
3. **A heap with lazy invalidation** finds the most frequent pair. A count
   that grows is pushed as a new entry; a count that shrinks leaves its old,
   too-high entry in place, and that entry is corrected (pushed again with the
   live count) only if it reaches the top.

Without a split pattern the whole text is one chunk, so every merge still
walks that chunk: ideas 1 and 2 need pre-splitting to pay off.

**Tie-breaking rule** (both trainers): the pair with the highest count wins;
among equal counts the smallest pair wins, comparing the first id and then
the second (:func:`best_pair`). This is what lets the fast trainer reproduce
the reference merge for merge, and it reproduces the Wikipedia walk-through
``aaabdaaabac -> ZabdZabac -> ZYdZYac -> XdXac``. Training stops early when
no pair is left (every chunk is a single token).

References: Gage, *A New Algorithm for Data Compression* (1994); Sennrich et
al., *Neural Machine Translation of Rare Words with Subword Units* (2016);
the word-count formulation follows Hugging Face ``tokenizers``' ``BpeTrainer``.
"""

from __future__ import annotations

import gc
import heapq
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from attnbook._checks import an_int

from .pairs import Pair, get_stats, merge
from .patterns import split_text

__all__ = ["best_pair", "train_bpe_reference", "train_bpe", "count_chunks"]

N_BYTES = 256  # the base vocabulary: one token per byte value


def _check_train_args(text: object, vocab_size: object) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    vocab_size = an_int("vocab_size", vocab_size)
    if vocab_size < N_BYTES:
        raise ValueError(f"vocab_size must be at least {N_BYTES} (one token per byte), got {vocab_size}")


def to_utf8(text: str) -> bytes:
    """Encode ``text`` as UTF-8, with a clear error for unencodable strings.

    >>> to_utf8("né")
    b'n\\xc3\\xa9'
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"text cannot be encoded as UTF-8 ({exc.reason} at position {exc.start}); "
                         "it probably contains a lone surrogate") from None


def best_pair(stats: dict[Pair, int]) -> Pair:
    """The pair to merge next: the highest count, ties to the smallest pair.

    >>> best_pair({(97, 98): 2, (256, 97): 2, (98, 100): 1})
    (97, 98)
    """
    return min(stats, key=lambda pair: (-stats[pair], pair))


def train_bpe_reference(text: str, vocab_size: int, pattern: str | None = None) -> dict[Pair, int]:
    """Learn ``vocab_size - 256`` merges by rescanning the text after each one.

    The plain algorithm, for reading and for checking the fast trainer.

    >>> merges = train_bpe_reference("aaabdaaabac", 256 + 3)
    >>> merges  # Z = aa, Y = ab, X = ZY
    {(97, 97): 256, (97, 98): 257, (256, 257): 258}
    """
    _check_train_args(text, vocab_size)
    to_utf8(text)
    chunks = [list(chunk.encode("utf-8")) for chunk in split_text(text, pattern)]
    merges: dict[Pair, int] = {}
    for idx in range(N_BYTES, vocab_size):
        stats: dict[Pair, int] = {}
        for ids in chunks:
            get_stats(ids, stats)
        if not stats:  # every chunk is a single token: nothing left to merge
            break
        pair = best_pair(stats)
        chunks = [merge(ids, pair, idx) for ids in chunks]
        merges[pair] = idx
    return merges


def count_chunks(text: str, pattern: str | None = None) -> Counter[str]:
    """How often each distinct chunk occurs: the input of the fast trainer.

    >>> count_chunks("to be or not to be", "gpt2").most_common(2)
    [(' be', 2), ('to', 1)]
    """
    return Counter(split_text(text, pattern))


def train_bpe(text: str, vocab_size: int, pattern: str | None = None) -> dict[Pair, int]:
    """Learn the same merges as :func:`train_bpe_reference`, incrementally.

    >>> train_bpe("aaabdaaabac", 256 + 3)
    {(97, 97): 256, (97, 98): 257, (256, 257): 258}
    """
    _check_train_args(text, vocab_size)
    to_utf8(text)
    counts = count_chunks(text, pattern)
    with _gc_paused():
        words = [list(chunk.encode("utf-8")) for chunk in counts]
        return _train_on_words(words, list(counts.values()), vocab_size - N_BYTES)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector: training makes millions of small tuples
    and lists, none in a cycle, and each collection would walk all of them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _train_on_words(words: list[list[int]], freqs: list[int], num_merges: int) -> dict[Pair, int]:
    """Run the merge loop on distinct chunks ``words`` occurring ``freqs`` times.

    ``words`` is rewritten in place. Invariants between merges:

    - ``stats[p]`` is the count of pair ``p`` over all chunks, each chunk
      counted ``freq`` times (pairs whose count fell to 0 may linger as 0);
    - every chunk that contains ``p`` is listed in ``where[p]`` (it may also
      list chunks that no longer do: visiting them changes nothing);
    - every pair with a positive count has a heap entry ``(-c, p)`` with
      ``c >= stats[p]``. Counts that grow are pushed at once; counts that
      shrink are left alone and corrected when their entry reaches the top.
      So an entry that matches the live count when popped is the true
      maximum, ties going to the smaller pair -- :func:`best_pair`'s rule.
    """
    stats: dict[Pair, int] = defaultdict(int)
    where: dict[Pair, set[int]] = defaultdict(set)
    for i, (word, freq) in enumerate(zip(words, freqs, strict=True)):
        for pair in zip(word, word[1:], strict=False):
            stats[pair] += freq
            where[pair].add(i)
    heap = [(-count, pair) for pair, count in stats.items()]
    heapq.heapify(heap)

    merges: dict[Pair, int] = {}
    idx = N_BYTES
    while len(merges) < num_merges and heap:
        neg_count, pair = heapq.heappop(heap)
        count = stats.get(pair, 0)
        if count != -neg_count:  # stale entry: the count fell since it was pushed
            if count > 0:
                heapq.heappush(heap, (-count, pair))
            continue
        merges[pair] = idx
        grown: set[Pair] = set()
        for i in where.pop(pair):
            _merge_word(words, i, pair, idx, freqs[i], stats, where, grown)
        del stats[pair]  # every occurrence is gone
        for new in grown:
            heapq.heappush(heap, (-stats[new], new))
        idx += 1
    return merges


def _merge_word(words: list[list[int]], i: int, pair: Pair, idx: int, freq: int,
                stats: dict[Pair, int], where: dict[Pair, set[int]], grown: set[Pair]) -> None:
    """Merge ``pair`` into ``idx`` in ``words[i]`` and update the pair counts.

    Same left-to-right, non-overlapping scan as :func:`merge`. For an
    occurrence ``x a b y`` -> ``x Z y`` the pairs ``(x, a)`` and ``(b, y)``
    lose ``freq`` and ``(x, Z)``, ``(Z, y)`` gain it (``(a, b)`` itself is
    dropped by the caller). When the next occurrence follows directly
    (``a b a b``), its own left side accounts for the pair in between, so the
    right side is skipped to count it once. New pairs go into ``grown`` (to be
    pushed on the heap) and into the index ``where``.
    """
    word = words[i]
    a, b = pair
    n = len(word)
    out: list[int] = []
    j = 0
    while j < n:
        if word[j] == a and j + 1 < n and word[j + 1] == b:
            if j:  # left neighbour: (x, a) becomes (x', Z), x' maybe a Z itself
                stats[word[j - 1], a] -= freq
                new = (out[-1], idx)
                stats[new] += freq
                grown.add(new)
                where[new].add(i)
            if j + 2 < n and not (word[j + 2] == a and j + 3 < n and word[j + 3] == b):
                right = word[j + 2]
                stats[b, right] -= freq
                new = (idx, right)
                stats[new] += freq
                grown.add(new)
                where[new].add(i)
            out.append(idx)
            j += 2
        else:
            out.append(word[j])
            j += 1
    words[i] = out
