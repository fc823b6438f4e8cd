"""Tokenization: characters, and byte-pair encoding (BPE) learned from text.

Modules, small to large:

- :mod:`.char` -- :class:`CharTokenizer`, one token per character.
- :mod:`.pairs` -- :func:`get_stats` and :func:`merge`, the two ideas BPE is
  made of.
- :mod:`.patterns` -- the GPT-2 and GPT-4 regex split patterns.
- :mod:`.training` -- :func:`train_bpe_reference` (plain, rescans after every
  merge: the teaching version and test oracle) beside :func:`train_bpe`
  (unique chunks, incremental counts, a heap; same merges). The tie-breaking
  rule is documented there.
- :mod:`.bpe` -- :class:`BPETokenizer`: train, encode, decode, save, load,
  ``to_tiktoken()``; :func:`gpt2_byte_decoder`, GPT-2's byte table, to read
  Hugging Face's byte-level tokens; :func:`bytes_per_token`, the compression
  of texts against the vocabulary size; :func:`split_special`, a text cut at
  the special tokens allowed in it.
- :mod:`.wordpiece` -- :class:`WordPieceTokenizer`, BERT's: words split by
  greedy longest match into ``##`` pieces.

>>> tok = BPETokenizer("gpt2").train("low lower lowest " * 20, 256 + 5)
>>> tok.decode(tok.encode("lowest")) == "lowest"
True
"""

from .bpe import BPETokenizer, bytes_per_token, encode_chunk, gpt2_byte_decoder, split_special
from .char import CharTokenizer
from .pairs import get_stats, merge
from .patterns import GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, split_text
from .training import best_pair, count_chunks, train_bpe, train_bpe_reference
from .wordpiece import WordPieceTokenizer

__all__ = [
    "CharTokenizer",
    "get_stats",
    "merge",
    "GPT2_SPLIT_PATTERN",
    "GPT4_SPLIT_PATTERN",
    "split_text",
    "best_pair",
    "count_chunks",
    "train_bpe_reference",
    "train_bpe",
    "encode_chunk",
    "BPETokenizer",
    "bytes_per_token",
    "gpt2_byte_decoder",
    "split_special",
    "WordPieceTokenizer",
]
