"""What every model config shares through attnbook._config.PresetConfig: presets, copies, dicts, errors."""

import pytest

from attnbook.bert import BertConfig
from attnbook.gpt import GPTConfig
from attnbook.imagegpt import ImageGPTConfig
from attnbook.rnn import Seq2SeqConfig
from attnbook.transformer import TransformerConfig
from attnbook.vit import ViTConfig

# (config class, a preset, the fields that preset still needs, a field and a value its checks refuse)
CONFIGS = [
    (Seq2SeqConfig, "tiny", dict(src_vocab_size=12, tgt_vocab_size=9), ("hidden_size", 0)),
    (TransformerConfig, "tiny", dict(src_vocab_size=12, tgt_vocab_size=9), ("d_model", 0)),
    (BertConfig, "cpu-tiny", dict(), ("hidden_size", 0)),
    (GPTConfig, "gpt-nano", dict(vocab_size=65), ("n_layer", 0)),
    (ImageGPTConfig, "digits-8x8", dict(), ("n_layer", 0)),
    (ViTConfig, "cpu-digits", dict(), ("patch_size", 3)),
]
IDS = [c[0].__name__ for c in CONFIGS]


@pytest.mark.parametrize("cls, name, needed, bad", CONFIGS, ids=IDS)
def test_preset_sets_its_fields_and_takes_overrides(cls, name, needed, bad):
    cfg = cls.preset(name, **needed)
    for field, value in {**cls.presets[name], **needed}.items():
        assert getattr(cfg, field) == value
    field, value = bad[0], getattr(cfg, bad[0]) * 2  # an override wins over the preset's value
    assert getattr(cls.preset(name, **needed, **{field: value}), field) == value


@pytest.mark.parametrize("cls, name, needed, bad", CONFIGS, ids=IDS)
def test_to_dict_round_trips_and_replace_copies(cls, name, needed, bad):
    cfg = cls.preset(name, **needed)
    assert cls(**cfg.to_dict()) == cfg
    field, _ = bad
    copy = cfg.replace(**{field: getattr(cfg, field) * 2})
    assert getattr(copy, field) == 2 * getattr(cfg, field) and copy is not cfg
    assert cfg == cls.preset(name, **needed)  # the original is untouched


@pytest.mark.parametrize("cls, name, needed, bad", CONFIGS, ids=IDS)
def test_replace_validates_again(cls, name, needed, bad):
    field, value = bad
    with pytest.raises(ValueError, match=field):
        cls.preset(name, **needed).replace(**{field: value})


@pytest.mark.parametrize("cls, name, needed, bad", CONFIGS, ids=IDS)
def test_unknown_preset_lists_the_known_ones(cls, name, needed, bad):
    with pytest.raises(ValueError, match=f"unknown preset 'nope'; choose one of .*'{name}'"):
        cls.preset("nope", **needed)


@pytest.mark.parametrize("cls, name, needed, bad", [c for c in CONFIGS if c[2]],
                         ids=[i for i, c in zip(IDS, CONFIGS, strict=True) if c[2]])
def test_a_preset_missing_a_required_field_names_it(cls, name, needed, bad):
    first, *rest = needed
    with pytest.raises(ValueError, match=f"preset '{name}' needs {first}=..."):
        cls.preset(name, **{k: needed[k] for k in rest})
