"""The architecture diagram: labelled with the package's names, drawn for both norm placements."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from attnbook.diagrams import token_tasks_diagram, transformer_diagram
from attnbook.transformer import Transformer, TransformerConfig


def texts(fig):
    return [t.get_text() for t in fig.axes[0].texts]


def test_post_norm_diagram_has_every_labelled_box():
    fig = transformer_diagram(num_encoder_layers=2, num_decoder_layers=3)
    labels = texts(fig)
    for expected in [
        "src_embed · √d_model",
        "tgt_embed · √d_model",
        "+ SinusoidalPositions (src_pos)",
        "+ SinusoidalPositions (tgt_pos)",
        "EncoderBlock × 2",
        "DecoderBlock × 3",
        "MultiHeadAttention (self)",
        "masked self-attention (causal)",
        "cross-attention (MultiHeadAttention)",
        "memory (B, S, d_model)",
        "head (Linear)",
        "softmax",
    ]:
        assert expected in labels, expected
    # post-norm: one add & LayerNorm per sublayer (2 in the encoder, 3 in the decoder), no final norm
    assert sum(label.startswith("add & LayerNorm") for label in labels) == 5
    assert sum(label.startswith("FeedForward") for label in labels) == 2
    assert not any("encoder_norm" in label for label in labels)
    plt.close(fig)


def test_pre_norm_diagram_puts_the_norm_first_and_ends_with_one():
    fig = transformer_diagram(1, 1, norm_first=True)
    labels = texts(fig)
    assert labels.count("add") == 5
    assert "LayerNorm (encoder_norm)" in labels and "LayerNorm (decoder_norm)" in labels
    # in each block the norm is drawn (bottom to top) before the sublayer it feeds
    y = {t.get_text(): t.get_position()[1] for t in fig.axes[0].texts if t.get_position()[0] > 5}
    assert y["LayerNorm (norm2)"] < y["cross-attention (MultiHeadAttention)"] < y["LayerNorm (norm3)"]
    plt.close(fig)


def test_diagram_names_are_the_model_attribute_names():
    """The module names written in the boxes are attributes of the Transformer it stands for."""
    fig = transformer_diagram(1, 1, norm_first=True)
    drawn = " ".join(texts(fig))
    cfg = TransformerConfig.preset("tiny", src_vocab_size=5, tgt_vocab_size=5, norm_first=True)
    model = Transformer(cfg)
    top = ["src_embed", "tgt_embed", "src_pos", "tgt_pos", "encoder_norm", "decoder_norm", "head"]
    block = ["self_attn", "cross_attn", "ffn", "norm1", "norm2", "norm3"]
    children = dict(model.named_children())
    assert all(name in children for name in top)
    assert all(hasattr(model.decoder_layers[0], name) for name in block)
    for name in top + ["ffn", "norm1", "norm2", "norm3"]:
        assert name in drawn, name
    assert type(children["src_pos"]).__name__ in drawn  # SinusoidalPositions
    assert type(model.encoder_layers[0].self_attn).__name__ in drawn  # MultiHeadAttention
    plt.close(fig)


def test_figures_close_cleanly():
    before = set(plt.get_fignums())
    fig = transformer_diagram()
    assert set(plt.get_fignums()) - before == {fig.number}
    plt.close(fig)
    assert set(plt.get_fignums()) == before


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        (dict(num_encoder_layers=0), ValueError, "num_encoder_layers"),
        (dict(num_decoder_layers=2.0), ValueError, "num_decoder_layers"),
        (dict(norm_first="yes"), TypeError, "norm_first"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        transformer_diagram(**kwargs)


def test_token_tasks_diagram_frames_the_best_span_and_checks_the_scores():
    fig = token_tasks_diagram(["who", "?"], ["ann", "did", "it"], {"ann": "B-PER"}, [0.1, 2.0, 0.3], [0.2, 0.1, 1.5])
    qa = fig.axes[1]
    frame = [p for p in qa.patches if not p.get_fill()][0]  # the answer span: "did it", tokens 5 and 6
    assert (frame.get_x(), frame.get_width()) == (5, 2)
    assert len([p for p in qa.patches if p.get_fill()]) == 8 + 2 * 8  # token boxes, then start and end bars
    with pytest.raises(ValueError, match="one score per passage token \\(3\\)"):
        token_tasks_diagram(["who"], ["ann", "did", "it"], {}, [1.0], [1.0, 2.0, 3.0])
