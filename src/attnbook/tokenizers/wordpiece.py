"""WordPiece, BERT's tokenizer: words split greedily into the longest known pieces.

What it adds over :class:`~attnbook.tokenizers.BPETokenizer`: text is first
cut into *words* (on whitespace and around every punctuation mark, lowercased
with accents stripped for an "uncased" model), and a piece that continues a
word is spelled with a ``##`` prefix, so ``"playing"`` may become
``["play", "##ing"]``. Encoding does not replay merges: it takes, from the
left, the *longest* vocabulary entry that matches (:func:`encode_word`); if
some part of a word matches nothing, the whole word becomes ``[UNK]``. (A
byte-level BPE never needs an unknown token; WordPiece does.)

**Training** (:meth:`WordPieceTokenizer.train`) starts from every character
(word-initial and ``##`` forms) and merges, one pair at a time, the adjacent
pair with the highest score. ``score="frequency"`` (the default) is BPE's
``count(ab)``, which is what Hugging Face's ``WordPieceTrainer`` does too;
``score="likelihood"`` is ``count(ab) / (count(a) count(b))``, the likelihood
gain of the original WordPiece (Schuster & Nakajima 2012) as Hugging Face's
course describes it. The likelihood score prefers pairs whose parts rarely
occur apart, so on a small corpus it spends the vocabulary on rare words
(``"consummat"``) before common ones (``"even"``). Ties go to the pair seen
first. Only encoding makes a tokenizer WordPiece; training is a choice.

The ids equal those of Hugging Face ``tokenizers``' ``WordPiece`` model with
the BERT normalizer and pre-tokenizer, given the same vocabulary (tested).

References: Wu et al., *Google's Neural Machine Translation System* (2016),
https://arxiv.org/abs/1609.08144, section 4.1; Devlin et al. (2018),
https://arxiv.org/abs/1810.04805, section 3; Schuster & Nakajima, *Japanese
and Korean Voice Search* (ICASSP 2012).
"""

from __future__ import annotations

import heapq
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping

import regex

from .pairs import merge

__all__ = ["SPECIAL_TOKENS", "encode_word", "WordPieceTokenizer"]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0 .. 4 of a trained vocabulary
_ASCII_PUNCT = r"!-/:-@\[-`{-~"  # BERT counts every ASCII non-alphanumeric symbol as punctuation
_WORDS = regex.compile(rf"[^\s\p{{P}}{_ASCII_PUNCT}]+|[\p{{P}}{_ASCII_PUNCT}]")
_CJK = regex.compile(r"([\u4E00-\u9FFF\u3400-\u4DBF\U00020000-\U0002A6DF\U0002A700-\U0002CEAF"
                     r"\uF900-\uFAFF\U0002F800-\U0002FA1F])")


def encode_word(word: str, vocab: Mapping[str, int] | set[str], unk_token: str = "[UNK]",
                max_chars: int = 100) -> list[str]:
    """Greedy longest-match-first: the pieces of one word, or ``[unk_token]``.

    From the current start, take the longest prefix of the rest of the word
    that is in ``vocab`` (written ``##...`` unless it starts the word), and
    go on after it. If no prefix matches -- or the word is longer than
    ``max_chars`` -- the whole word is unknown.

    >>> vocab = {"un", "##aff", "##able", "##a", "##ff", "a"}
    >>> encode_word("unaffable", vocab)
    ['un', '##aff', '##able']
    >>> encode_word("unknowable", vocab)
    ['[UNK]']
    """
    if len(word) > max_chars:
        return [unk_token]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):  # longest first
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:  # nothing matched from here: the word cannot be spelled
            return [unk_token]
    return pieces


class WordPieceTokenizer:
    """BERT's WordPiece tokenizer: ``train``, ``encode``, ``decode``, ``encode_pair``.

    ``vocab`` (a list of tokens, id = position) builds a tokenizer directly,
    for example from a BERT ``vocab.txt``; it must contain the five special
    tokens. ``lowercase=True`` is an "uncased" model (lowercase, accents
    stripped).

    >>> tok = WordPieceTokenizer().train(["the player played", "players play", "she stayed"] * 5, 30)
    >>> tok.tokenize("She plays")
    ['she', 'play', '##s']
    >>> tok.tokenize("Stayer!")            # "!" was never seen, so it is unknown
    ['st', '##aye', '##r', '[UNK]']
    >>> tok.decode(tok.encode("the players"))
    'the players'
    >>> tok.encode_pair("play", "the")     # [CLS] play [SEP] the [SEP]
    ([2, 24, 3, 27, 3], [0, 0, 0, 1, 1])
    """

    def __init__(self, vocab: Iterable[str] | None = None, *, lowercase: bool = True,
                 max_input_chars_per_word: int = 100) -> None:
        self.lowercase = lowercase
        self.max_input_chars_per_word = max_input_chars_per_word
        self._set_vocab(list(SPECIAL_TOKENS) if vocab is None else list(vocab))

    def _set_vocab(self, tokens: list[str]) -> None:
        if len(set(tokens)) != len(tokens):
            raise ValueError("vocab must not repeat a token")
        missing = [t for t in SPECIAL_TOKENS if t not in tokens]
        if missing:
            raise ValueError(f"vocab must contain the special tokens {list(SPECIAL_TOKENS)}; missing {missing}")
        self.id_to_token = tokens
        self.vocab = {t: i for i, t in enumerate(tokens)}

    # -- sizes and special ids -------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return len(self.id_to_token)

    pad_id = property(lambda self: self.vocab["[PAD]"])
    unk_id = property(lambda self: self.vocab["[UNK]"])
    cls_id = property(lambda self: self.vocab["[CLS]"])
    sep_id = property(lambda self: self.vocab["[SEP]"])
    mask_id = property(lambda self: self.vocab["[MASK]"])

    @property
    def special_ids(self) -> list[int]:
        """Ids of [PAD] [UNK] [CLS] [SEP] [MASK] (what :func:`attnbook.bert.mask_tokens` never chooses)."""
        return [self.vocab[t] for t in SPECIAL_TOKENS]

    # -- text -> words -> pieces -> ids ---------------------------------------

    def normalize(self, text: str) -> str:
        """BERT's normalizer: drop control characters, spaces around CJK, lowercase and strip accents."""
        text = "".join(
            " " if c.isspace() else c
            for c in text
            if not (c == "\0" or c == "\ufffd" or (unicodedata.category(c) in ("Cc", "Cf") and not c.isspace()))
        )
        text = _CJK.sub(r" \1 ", text)
        if self.lowercase:
            text = unicodedata.normalize("NFD", text.lower())
            text = "".join(c for c in text if unicodedata.category(c) != "Mn")  # accents off
        return text

    def pre_tokenize(self, text: str) -> list[str]:
        """The words of ``text``: runs of non-space, non-punctuation characters, and each punctuation mark.

        >>> WordPieceTokenizer().pre_tokenize("Don't stop, Café!")
        ['don', "'", 't', 'stop', ',', 'cafe', '!']
        """
        return _WORDS.findall(self.normalize(text))

    def tokenize(self, text: str) -> list[str]:
        """The WordPiece tokens (strings) of ``text``."""
        return [
            piece
            for word in self.pre_tokenize(text)
            for piece in encode_word(word, self.vocab, "[UNK]", self.max_input_chars_per_word)
        ]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no [CLS]/[SEP]; see :meth:`encode_pair`)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return [self.vocab[piece] for piece in self.tokenize(text)]

    def encode_pair(self, a: str, b: str | None = None) -> tuple[list[int], list[int]]:
        """BERT's input for one sentence or a pair: ``([CLS] a [SEP] b [SEP], segment ids)``.

        Segment ids are 0 up to and including the first [SEP], then 1.
        """
        ids = [self.cls_id, *self.encode(a), self.sep_id]
        segments = [0] * len(ids)
        if b is not None:
            tail = [*self.encode(b), self.sep_id]
            ids += tail
            segments += [1] * len(tail)
        return ids, segments

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        """Pieces joined back: ``##`` pieces glued to the one before, words separated by spaces."""
        special = set(SPECIAL_TOKENS) if skip_special_tokens else set()
        out = ""
        for i in ids:
            if not isinstance(i, int) or not 0 <= i < self.vocab_size:
                raise ValueError(f"ids must be ints in 0 .. {self.vocab_size - 1}, got {i!r}")
            token = self.id_to_token[i]
            if token in special:
                continue
            out += token[2:] if token.startswith("##") and out else (" " + token if out else token)
        return out

    # -- training --------------------------------------------------------------

    def train(self, texts: Iterable[str], vocab_size: int, *, score: str = "frequency") -> WordPieceTokenizer:
        """Learn a vocabulary of ``vocab_size`` tokens from ``texts`` (see the module docstring); returns self.

        The vocabulary is the five special tokens, then every character seen
        (word-initial, then ``##`` forms, each sorted), then the merged pieces
        in the order learned. Training stops early if no pair is left.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of strings (a list of sentences), not one str")
        if score not in ("frequency", "likelihood"):
            raise ValueError(f"score must be 'frequency' or 'likelihood', got {score!r}")
        counts = Counter(w for t in texts for w in self.pre_tokenize(t))
        words = [[w[0], *("##" + c for c in w[1:])] for w in counts]  # each word as its characters
        freq = list(counts.values())
        alphabet = sorted({w[0] for w in words}) + sorted({u for w in words for u in w[1:]})
        tokens = list(SPECIAL_TOKENS) + [u for u in alphabet if u not in SPECIAL_TOKENS]
        if not isinstance(vocab_size, int) or vocab_size < len(tokens):
            raise ValueError(
                f"vocab_size must be at least {len(tokens)} (5 special tokens + {len(alphabet)} characters "
                f"seen), got {vocab_size!r}"
            )
        known, pieces = set(tokens), _learn_pieces(words, freq, score)
        while len(tokens) < vocab_size and (piece := next(pieces, None)) is not None:
            if piece not in known:  # two merges can spell the same piece
                tokens.append(piece)
                known.add(piece)
        self._set_vocab(tokens)
        return self


def _learn_pieces(words: list[list[str]], freq: list[int], score: str) -> Iterator[str]:
    """Merge the best pair again and again, yielding each new piece (the caller stops it).

    ``words`` are lists of units (``["p", "##l", "##a", "##y"]``) and
    ``freq`` how often each word occurs. Counts of units and adjacent pairs
    are kept up to date as words are rewritten, touching only the words that
    hold the merged pair. The frequency score uses a heap whose stale entries
    are skipped when popped; the likelihood score changes with every unit
    count, so it is found by a scan.
    """
    unit_count: Counter[str] = Counter()
    pair_count: Counter[tuple[str, str]] = Counter()
    where: defaultdict[tuple[str, str], set[int]] = defaultdict(set)  # pair -> words that hold it
    first_seen: dict[tuple[str, str], int] = {}  # ties go to the pair seen first
    heap: list[tuple[int, int, tuple[str, str]]] = []  # (-count, first seen, pair), stale entries included

    changed: set[tuple[str, str]] = set()  # pairs whose count moved since the last heap update

    def add(i: int, sign: int) -> None:  # count word i in (+1) or out (-1)
        units, f = words[i], sign * freq[i]
        for u in units:
            unit_count[u] += f
        for p in zip(units, units[1:], strict=False):
            pair_count[p] += f
            changed.add(p)
            if sign > 0:
                where[p].add(i)
                first_seen.setdefault(p, len(first_seen))
            elif pair_count[p] <= 0:
                del pair_count[p]

    for i in range(len(words)):
        add(i, +1)
    while pair_count:
        if score == "frequency":
            for p in changed & pair_count.keys():
                heapq.heappush(heap, (-pair_count[p], first_seen[p], p))
        changed.clear()
        if score == "frequency":
            while -heap[0][0] != pair_count.get(heap[0][2], 0):
                heapq.heappop(heap)  # stale: that pair's count has changed since
            a, b = heap[0][2]
        else:
            a, b = max(
                pair_count,
                key=lambda p: (pair_count[p] / (unit_count[p[0]] * unit_count[p[1]]), -first_seen[p]),
            )
        new = a + b[2:]  # the continuation's "##" dropped
        for i in where.pop((a, b)):
            add(i, -1)
            words[i] = merge(words[i], (a, b), new)
            add(i, +1)
        pair_count.pop((a, b), None)
        yield new
