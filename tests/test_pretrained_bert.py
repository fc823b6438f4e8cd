"""The ``bert-plays`` checkpoint's data split, and what chapter 3 says it learnt (loading, reproducing
and rebuilding it: ``test_pretrained_checkpoints.py``)."""

from __future__ import annotations

from attnbook import pretrained
from attnbook.pretrained.bert_plays import GENRES, genre_speeches


def test_genre_speeches_hold_out_validation_and_test_from_the_pretraining_text():
    data = genre_speeches()
    sizes = {part: len(data[part][0]) for part in ("train", "val", "test")}
    assert sizes == {"train": 13_791, "val": 1_000, "test": 2_000}
    assert set(data["test"][1].tolist()) == set(GENRES.values())
    lines = set(data["lines"])
    # a held-out speech's first line may recur elsewhere ("My lord?"), its whole text never does
    assert not any(speech in lines for speech in data["test"][0] + data["val"][0] if len(speech) > 80)
    assert len(data["lines"]) > 90_000


def test_pretraining_learnt_what_chapter_3_says():
    """Far below the word-frequency loss, and features a probe can use."""
    side = pretrained.info("bert-plays")
    assert side["metrics"]["mlm_loss"] < side["metrics"]["unigram_loss"] - 1.0
    assert side["metrics"]["probe_250"] > side["metrics"]["probe_250_random"] + 0.02
