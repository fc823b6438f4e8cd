"""attnbook.gradient_flow: the gradient through an unrolled cell and at each source embedding."""

import pytest
import torch
from torch import nn

from attnbook.gradient_flow import gradient_through_time, source_gradient_norms
from attnbook.rnn import Seq2Seq, Seq2SeqConfig


def test_gradient_through_time_vanishes_for_a_default_rnn_and_holds_for_a_keeping_gru():
    torch.manual_seed(0)
    rnn = gradient_through_time(nn.RNNCell(16, 64), T=40)
    keeper = nn.GRUCell(16, 64)
    with torch.no_grad():
        keeper.bias_ih[64:128] += 4.0  # update gate near 1: copy the state forward
    gru = gradient_through_time(keeper, T=40)
    assert rnn.shape == gru.shape == (40,)
    assert not rnn.requires_grad
    assert rnn[0] < 1e-6 * rnn[-1]  # ten steps or so per order of magnitude
    assert gru[0] > 1e-2 * gru[-1]


def test_gradient_through_time_rejects_what_it_cannot_unroll():
    with pytest.raises(TypeError, match="nn.LSTMCell returns two"):
        gradient_through_time(nn.LSTMCell(4, 8), T=3, input_size=4)
    with pytest.raises(ValueError, match="input_size must be the cell's input_size 4"):
        gradient_through_time(nn.RNNCell(4, 8), T=3, input_size=16)
    with pytest.raises(TypeError, match="cell must be"):
        gradient_through_time(nn.Linear(4, 8))


@pytest.mark.parametrize("attention", [None, "additive"])
def test_source_gradient_norms_is_per_position_and_leaves_no_hook(attention):
    torch.manual_seed(0)
    config = Seq2SeqConfig.preset("tiny", src_vocab_size=10, tgt_vocab_size=10, attention=attention)
    model = Seq2Seq(config)
    src = torch.randint(3, 10, (4, 7))  # (B, S), no padding
    tgt = torch.cat([torch.ones(4, 1, dtype=torch.long), torch.randint(3, 10, (4, 3)),
                     torch.full((4, 1), 2)], dim=1)  # (B, T): BOS ... EOS
    norms = source_gradient_norms(model, src, tgt)
    assert norms.shape == (7,) and bool((norms > 0).all())
    assert not model.encoder.embed._forward_hooks
    with pytest.raises(TypeError, match="attnbook.rnn.Seq2Seq"):
        source_gradient_norms(nn.Linear(2, 2), src, tgt)  # type: ignore[arg-type]
