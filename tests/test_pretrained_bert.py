"""The ``bert-plays`` checkpoint: it loads, reproduces its sidecar, beats a random encoder, rebuilds."""

from __future__ import annotations

import pytest
import torch

from attnbook import pretrained
from attnbook.pretrained.__main__ import main
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


def test_the_checkpoint_reproduces_its_sidecar():
    side = pretrained.info("bert-plays")
    model = pretrained.load("bert-plays")
    got = pretrained.recipe("bert-plays").evaluate(model, side["config"], torch.device("cpu"))
    for name, tolerance in side["tolerance"].items():
        assert got[name] == pytest.approx(side["metrics"][name], abs=tolerance), name
    # what pretraining learnt: far below the word-frequency loss, and features a probe can use
    assert side["metrics"]["mlm_loss"] < side["metrics"]["unigram_loss"] - 1.0
    assert side["metrics"]["probe_250"] > side["metrics"]["probe_250_random"] + 0.02


def test_the_build_command_runs_end_to_end(tmp_path):
    assert main(["build", "bert-plays", "--smoke", "--out", str(tmp_path)]) == 0
    side = pretrained.info("bert-plays", tmp_path)
    assert side["smoke"] and side["notes"]["steps"] == 5
    assert pretrained.load("bert-plays", folder=tmp_path).config.vocab_size == len(side["config"]["vocab"])
