"""How far a gradient reaches back: through an unrolled recurrent cell, to each source position, to each block.

Chapter 1 measures the vanishing gradient twice:

* :func:`gradient_through_time` unrolls one ``nn.RNNCell``/``nn.GRUCell`` over
  ``T`` random inputs and returns ``||dL/dh_t||`` for every step, for a loss on
  the last state only (backpropagation through time, section 1);
* :func:`source_gradient_norms` returns ``||dL/dx_j||`` for the embedding of
  every source position of an :class:`attnbook.rnn.Seq2Seq`, with or without
  attention (the gradient shortcut of section 3).

Both read the gradients of intermediate tensors with ``retain_grad``. Chapter 2
measures a weight's gradient instead: :func:`block_gradient_norms` returns
``||dL/dW_2||`` of the feed-forward network of every encoder and decoder block
of an :class:`attnbook.transformer.Transformer`, which at initialisation grows
towards the output in a post-norm stack and not in a pre-norm one (Xiong et
al., *On Layer Normalization in the Transformer Architecture*, 2020, figure 3).
None of them changes the model's weights (their ``.grad`` is filled, as by any
backward). Sibling modules: :mod:`attnbook.rnn` and :mod:`attnbook.rnn_blocks`
(the models), :mod:`attnbook.seq2seq` (the loss).
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn

from attnbook._checks import positive_int
from attnbook.rnn import Seq2Seq
from attnbook.seq2seq import seq2seq_loss
from attnbook.transformer import DecoderBlock, EncoderBlock, Transformer

__all__ = ["gradient_through_time", "source_gradient_norms", "block_gradient_norms"]


def gradient_through_time(cell: nn.RNNCellBase, T: int = 80, batch: int = 32, input_size: int = 16) -> torch.Tensor:
    """``||dL/dh_t||`` (T,) averaged over a batch, for ``L = r . h_T`` with ``r`` a random vector.

    Draws the inputs (batch, T, input_size) and ``r`` from torch's global
    generator (seed it for repeatable numbers); ``h_0 = 0``. Entry ``t`` is
    the gradient reaching the state after step ``t``, so entry ``T - 1`` is the
    loss's own and entry 0 the one that travelled furthest back.

    >>> _ = torch.manual_seed(0)
    >>> norms = gradient_through_time(nn.RNNCell(4, 8), T=10, input_size=4)
    >>> norms.shape, bool(norms[0] < norms[-1])                 # (T,): it shrinks going back
    (torch.Size([10]), True)
    """
    if not isinstance(cell, nn.RNNCellBase):
        raise TypeError(f"cell must be an nn.RNNCell, nn.GRUCell or nn.LSTMCell-like cell, got {type(cell).__name__}")
    if isinstance(cell, nn.LSTMCell):
        raise TypeError("cell must return one state tensor (nn.RNNCell or nn.GRUCell); nn.LSTMCell returns two")
    for name, value in (("T", T), ("batch", batch), ("input_size", input_size)):
        positive_int(name, value)
    if input_size != cell.input_size:
        raise ValueError(f"input_size must be the cell's input_size {cell.input_size}, got {input_size}")
    x = torch.randn(batch, T, input_size)  # (B, T, C)
    h = torch.zeros(batch, cell.hidden_size)  # (B, H)
    states = []
    for t in range(T):  # the unrolled loop
        h = cell(x[:, t], h)
        h.retain_grad()
        states.append(h)
    (h @ torch.randn(cell.hidden_size)).sum().backward()
    return torch.stack([s.grad.norm(dim=1).mean() for s in states]).detach()  # (T,)


def source_gradient_norms(model: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """``||dL/dx_j||`` (S,): the gradient of the teacher-forced loss at each source embedding, batch-averaged.

    ``src`` (B, S) and ``tgt`` (B, T) are as :func:`attnbook.seq2seq.seq2seq_loss`
    takes them. Use sources without padding (cut them to the shortest) so
    that every position holds a real character.

    >>> from attnbook.rnn import Seq2SeqConfig
    >>> _ = torch.manual_seed(0)
    >>> model = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8))
    >>> src, tgt = torch.randint(3, 8, (2, 5)), torch.tensor([[1, 4, 2], [1, 5, 2]])
    >>> source_gradient_norms(model, src, tgt).shape              # (S,)
    torch.Size([5])
    """
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"model must be an attnbook.rnn.Seq2Seq, got {type(model).__name__}")
    captured: list[torch.Tensor] = []

    def keep(module: nn.Module, inputs: object, out: torch.Tensor) -> None:  # the source embeddings x_j
        out.retain_grad()
        captured.append(out)

    hook = model.encoder.embed.register_forward_hook(keep)
    try:
        seq2seq_loss(model, (src, tgt)).backward()
    finally:
        hook.remove()
    grad = captured[0].grad  # (B, S, E)
    assert grad is not None  # the loss depends on every source embedding
    return grad.norm(dim=-1).mean(0)  # (S,): per source position


def block_gradient_norms(model: Transformer, batch: tuple[torch.Tensor, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``||dL/dW_2||`` of every block's feed-forward output matrix, for the teacher-forced loss of ``batch``.

    ``batch = (src, tgt)`` as :func:`attnbook.seq2seq.seq2seq_loss` takes it.
    Returns ``{"encoder": (L_enc,), "decoder": (L_dec,)}``, first block first;
    ``W_2`` is ``ffn.fc2.weight``, the matrix Xiong et al. (2020) follow. The
    model's ``.grad`` is cleared first, so the norms are of this loss alone.

    >>> from attnbook.transformer import TransformerConfig
    >>> _ = torch.manual_seed(0)
    >>> cfg = TransformerConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8, num_decoder_layers=3)
    >>> norms = block_gradient_norms(Transformer(cfg), (torch.tensor([[4, 5]]), torch.tensor([[1, 6, 2]])))
    >>> norms["encoder"].shape, norms["decoder"].shape
    (torch.Size([1]), torch.Size([3]))
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be an attnbook.transformer.Transformer, got {type(model).__name__}")
    model.zero_grad(set_to_none=True)
    seq2seq_loss(model, batch).backward()
    norms = {}
    for side, blocks in (("encoder", model.encoder_layers), ("decoder", model.decoder_layers)):
        grads = [cast(EncoderBlock | DecoderBlock, block).ffn.fc2.weight.grad for block in blocks]
        norms[side] = torch.stack([g.norm() if g is not None else torch.tensor(0.0) for g in grads]).detach()
    return norms
