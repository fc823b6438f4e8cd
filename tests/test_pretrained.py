"""The trained-model registry: files, sidecars, checksums and errors (each real checkpoint has its own tests)."""

from __future__ import annotations

import json
import sys
import types

import pytest
import torch
from torch import nn

from attnbook import pretrained
from attnbook.pretrained import PretrainedError, Recipe, Trained
from attnbook.pretrained._build import build
from attnbook.pretrained._store import FOLDER, sha256_of

X = torch.linspace(-1, 1, 32).unsqueeze(1)  # (32, 1)
Y = 3 * X + 1


def _make(config: dict) -> nn.Module:
    return nn.Linear(1, config["width"])


def _train(settings) -> Trained:
    torch.manual_seed(settings.seed)
    model = _make({"width": 1})
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    for _ in range(5 if settings.smoke else 200):
        opt.zero_grad()
        nn.functional.mse_loss(model(X), Y).backward()
        opt.step()
    return Trained(model, {"width": 1}, {"steps": 5 if settings.smoke else 200})


def _evaluate(model: nn.Module, config: dict, device) -> dict[str, float]:
    with torch.no_grad():
        return {"mse": float(nn.functional.mse_loss(model(X.to(device)), Y.to(device)))}


@pytest.fixture
def toy(monkeypatch):
    """A registered recipe ``toy`` (a line fit in a fraction of a second)."""
    module = types.ModuleType("toy_recipe")
    module.RECIPE = Recipe("toy", "a line fit", "32 points of y = 3x + 1", _make, _train, _evaluate,
                           tolerance={"mse": 1e-3})
    monkeypatch.setitem(sys.modules, "toy_recipe", module)
    monkeypatch.setitem(pretrained._MODULES, "toy", "toy_recipe")
    return module.RECIPE


def test_build_writes_weights_and_a_full_sidecar(toy, tmp_path):
    side = build("toy", tmp_path, torch.device("cpu"))
    on_disk = json.loads((tmp_path / "toy.json").read_text())
    assert on_disk == side
    for key in ("command", "commit", "machine", "started", "wall_seconds", "cpu_seconds", "data", "config",
                "metrics", "sha256", "bytes", "dtype"):
        assert key in side, key
    assert side["command"] == "python -m attnbook.pretrained build toy"
    assert side["sha256"] == sha256_of(tmp_path / "toy.safetensors")
    assert side["metrics"]["mse"] < 1e-3  # it trained
    assert not (tmp_path / "toy.pt").exists() and not list(tmp_path.glob(".toy*"))  # no temporary left


def test_load_gives_the_stored_model_in_eval_mode(toy, tmp_path):
    build("toy", tmp_path, torch.device("cpu"))
    model = pretrained.load("toy", folder=tmp_path)
    assert not model.training
    assert _evaluate(model, {}, "cpu")["mse"] == pytest.approx(pretrained.info("toy", tmp_path)["metrics"]["mse"],
                                                               abs=1e-4)
    # float16 storage: weights come back as float32, rounded to half precision
    weight = model.weight.detach()
    assert weight.dtype == torch.float32 and torch.equal(weight, weight.half().float())


def test_smoke_and_seed_are_part_of_the_command(toy, tmp_path):
    side = build("toy", tmp_path, torch.device("cpu"), smoke=True, seed=3)
    assert side["command"] == "python -m attnbook.pretrained build toy --smoke --seed 3"
    assert side["smoke"] is True and side["notes"] == {"steps": 5}


def test_a_changed_file_fails_its_checksum_with_a_rebuild_hint(toy, tmp_path):
    build("toy", tmp_path, torch.device("cpu"))
    weights = tmp_path / "toy.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(PretrainedError, match=r"sha256.*python -m attnbook.pretrained build toy"):
        pretrained.load("toy", folder=tmp_path)


def test_a_missing_file_says_how_to_rebuild(toy, tmp_path):
    with pytest.raises(PretrainedError, match=r"never built.*build toy"):
        pretrained.load("toy", folder=tmp_path)
    build("toy", tmp_path, torch.device("cpu"))
    (tmp_path / "toy.safetensors").unlink()
    with pytest.raises(PretrainedError, match=r"no weights .*build toy"):
        pretrained.load("toy", folder=tmp_path)


def test_unknown_names_are_refused_before_any_work(tmp_path):
    with pytest.raises(PretrainedError, match="no checkpoint named 'nope'; the registry has"):
        pretrained.info("nope")
    from attnbook.pretrained.__main__ import main

    with pytest.raises(PretrainedError, match="nope"):
        main(["build", "nope", "--out", str(tmp_path)])
    assert not list(tmp_path.iterdir())


def test_cli_builds_and_verifies(toy, tmp_path, monkeypatch, capsys):
    from attnbook.pretrained import __main__ as cli

    assert cli.main(["build", "toy", "--smoke", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "toy.safetensors").is_file()
    assert cli.verify("toy", tmp_path) == []
    side = json.loads((tmp_path / "toy.json").read_text())
    side["metrics"]["mse"] += 1.0  # a sidecar that claims what the weights do not do
    (tmp_path / "toy.json").write_text(json.dumps(side))
    assert "mse" in cli.verify("toy", tmp_path)[0]


def test_the_registry_stays_small_and_has_no_pickles():
    files = list(FOLDER.iterdir())
    assert sum(f.stat().st_size for f in files) < 25e6
    assert not [f.name for f in files if f.suffix not in (".safetensors", ".json")]


@pytest.mark.parametrize("name", pretrained.names())
def test_every_registered_checkpoint_is_committed_with_a_matching_checksum(name):
    side = pretrained.info(name)
    assert side["sha256"] == sha256_of(FOLDER / f"{name}.safetensors")
    assert not side["smoke"], f"{name} was built with --smoke"
    assert side["commit"] != "unknown"
