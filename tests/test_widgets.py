"""The explorers of attnbook.widgets build and redraw without a display or a kernel."""

import subprocess
import sys

import pytest
import torch

from attnbook.data import CharVocab
from attnbook.transformer import Transformer, TransformerConfig
from attnbook.widgets import attention_explorer, positional_encoding_explorer, translation_attention

PNG = b"\x89PNG"


@pytest.fixture
def translator():
    torch.manual_seed(0)
    src_vocab = CharVocab("abcdefghijklmnopqrstuvwxyz 0123456789")
    tgt_vocab = CharVocab("0123456789-")
    cfg = TransformerConfig.preset(
        "tiny", src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), num_decoder_layers=2
    )
    return Transformer(cfg), src_vocab, tgt_vocab


def test_import_needs_no_display():
    code = "import matplotlib; import attnbook.widgets; print(matplotlib.get_backend())"
    env = {"PATH": "/usr/bin:/bin", "MPLBACKEND": ""}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr


def test_translation_attention_shapes(translator):
    model, src_vocab, tgt_vocab = translator
    out = translation_attention(model, "3 march 2001", src_vocab, tgt_vocab, max_len=6)
    S, T = len("3 march 2001"), len(out["written"])
    assert 1 <= T <= 6
    assert out["weights"]["encoder"][0].shape == (1, 2, S, S)
    assert out["weights"]["cross"][1].shape == (1, 2, T, S)
    assert out["weights"]["decoder"][0].shape == (1, 2, T, T)
    assert len(out["decoder_in"]) == T and out["decoder_in"][0] == "<bos>"
    assert out["source"][1] == "␣"  # spaces are shown visibly
    rows = out["weights"]["cross"][0][0].sum(-1)  # (nh, T)
    assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)


def test_translation_attention_rejects_empty_text(translator):
    model, src_vocab, tgt_vocab = translator
    with pytest.raises(ValueError, match="text"):
        translation_attention(model, "", src_vocab, tgt_vocab)


def test_attention_explorer_updates(translator):
    model, src_vocab, tgt_vocab = translator
    box = attention_explorer(model, "3 march 2001", src_vocab, tgt_vocab, max_len=6)
    c = box.controls
    first = bytes(box.image.value)
    assert first.startswith(PNG)

    c["head"].value = "mean of heads"
    assert bytes(box.image.value).startswith(PNG) and bytes(box.image.value) != first

    c["kind"].value = "encoder self-attention"
    assert c["layer"].max == 0  # the encoder has one layer, the decoder two
    c["kind"].value = "decoder self-attention (masked)"
    c["layer"].value = 1
    assert c["layer"].max == 1
    before = bytes(box.image.value)
    c["text"].value = "12 may 1999"
    assert bytes(box.image.value) != before
    assert "12 may 1999" in box.children[2].value  # the status line names the source

    c["text"].value = "   "  # nothing to translate: a message, no error
    assert "type" in box.children[2].value


def test_attention_explorer_rejects_other_models():
    with pytest.raises(TypeError, match="Transformer"):
        attention_explorer(torch.nn.Linear(2, 2), "x", CharVocab("x"), CharVocab("x"))


def test_positional_encoding_explorer_updates():
    box = positional_encoding_explorer(max_len=32, d_model=16)
    c = box.controls
    first = bytes(box.image.value)
    assert first.startswith(PNG)
    assert "P[10, 0]" in box.children[1].value

    c["dimension"].value = 15
    c["d_model"].value = 8  # fewer dimensions: the chosen one is clamped into range
    assert c["dimension"].max == 7 and c["dimension"].value == 7
    c["position"].value = 3
    assert bytes(box.image.value) != first
    assert box.children[1].value.startswith("P[3, 7]")


@pytest.mark.parametrize("kwargs", [dict(d_model=7), dict(max_len=1), dict(d_model="16")])
def test_positional_encoding_explorer_rejects_bad_sizes(kwargs):
    with pytest.raises(ValueError):
        positional_encoding_explorer(**kwargs)
