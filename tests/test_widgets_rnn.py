"""Chapter 1's alignment explorer and its helpers build and redraw without a display or a kernel."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from attnbook.data import CharVocab
from attnbook.plots import alignment_step
from attnbook.rnn import Seq2Seq, Seq2SeqConfig
from attnbook.widgets import alignment_explorer

PNG = b"\x89PNG"


@pytest.fixture
def translator():
    torch.manual_seed(0)
    src_vocab = CharVocab("abcdefghijklmnopqrstuvwxyz -,")
    tgt_vocab = CharVocab("abcdefghijklmnopqrstuvwxyzäöüß")
    cfg = Seq2SeqConfig.preset("tiny", src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab))
    return Seq2Seq(cfg), src_vocab, tgt_vocab


def test_alignment_explorer_steps_and_retranslates(translator):
    model, src_vocab, tgt_vocab = translator
    box = alignment_explorer(model, "twenty-one", src_vocab, tgt_vocab, max_len=8)
    c = box.controls
    first = bytes(box.image.value)
    assert first.startswith(PNG)
    assert 0 <= c["step"].max <= 7  # one step per output character, at most max_len
    assert "twenty-one" in box.children[2].value  # the status line names the source

    if c["step"].max > 0:
        c["step"].value = c["step"].max
        assert bytes(box.image.value).startswith(PNG) and bytes(box.image.value) != first
    before = bytes(box.image.value)
    c["text"].value = "nine hundred"
    assert bytes(box.image.value) != before
    assert c["step"].value <= c["step"].max
    assert "nine hundred" in box.children[2].value

    c["text"].value = "   "  # nothing to translate: a message, no error
    assert "type" in box.children[2].value


def test_alignment_explorer_clamps_step_for_shorter_output(translator):
    model, src_vocab, tgt_vocab = translator
    box = alignment_explorer(model, "abc", src_vocab, tgt_vocab, max_len=6)
    c = box.controls
    c["step"].value = c["step"].max
    c["text"].value = "abcd"  # a new translation: the slider stays inside its new range
    assert 0 <= c["step"].value <= c["step"].max
    assert bytes(box.image.value).startswith(PNG)


def test_alignment_explorer_rejects_models_without_attention(translator):
    _, src_vocab, tgt_vocab = translator
    plain = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab),
                                         attention=None))
    with pytest.raises(TypeError, match="attention"):
        alignment_explorer(plain, "abc", src_vocab, tgt_vocab)
    with pytest.raises(TypeError, match="Seq2Seq"):
        alignment_explorer(torch.nn.Linear(2, 2), "abc", src_vocab, tgt_vocab)


def test_alignment_step_draws_the_chosen_row():
    w = torch.softmax(torch.randn(4, 6), dim=-1)
    fig = alignment_step(w, x_labels="abcdef", y_labels="wxyz", step=2)
    bars = [float(p.get_height()) for p in fig.axes[0].patches]
    assert bars == pytest.approx(w[2].tolist())
    image = fig.axes[1].images[0].get_array()
    assert image.mask[3].all() and not image.mask[:3].any()  # rows after the step are blank
    assert "xy" in fig.axes[0].get_title()  # the output so far: w x y
    plt.close(fig)


@pytest.mark.parametrize("step", [-1, 4, 1.0, True])
def test_alignment_step_rejects_bad_steps(step):
    with pytest.raises(ValueError, match="step"):
        alignment_step(torch.full((4, 3), 1 / 3), x_labels="abc", y_labels="wxyz", step=step)
