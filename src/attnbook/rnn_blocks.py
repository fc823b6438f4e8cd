"""The parts of chapter 1's recurrent models: the encoder and the two decoders.

:class:`Encoder` -> :class:`PlainDecoder` / :class:`AttentionDecoder`, which
:class:`attnbook.rnn.Seq2Seq` puts together (and from where they are
importable too).

The :class:`Encoder` reads the source characters with a bidirectional GRU and
returns one annotation ``h_j`` per position (the *memory*) and a *summary*, its
final states. Both decoders are GRU cells that emit one character per step
from the previous character, their state ``s`` and a context vector ``c``;
they differ only in where ``c`` comes from:

* :class:`PlainDecoder` (Cho et al., 2014): ``c`` is the encoder's summary,
  the same fixed-size vector at every step -- the *bottleneck* through which
  the whole source must pass.
* :class:`AttentionDecoder` (Bahdanau et al., 2015): ``c_t = Σ_j α_tj h_j``,
  a new mixture of the annotations at every step, with weights ``α_tj`` from
  an alignment model ``e_tj = a(s_{t-1}, h_j)`` --
  :class:`attnbook.alignment.AdditiveAttention` or
  :class:`attnbook.alignment.LuongAttention`.

One decoder step is ``step(prev_token, hidden, memory, mask) -> (logits,
hidden, weights)``. Token ids follow :class:`attnbook.data.CharVocab`
(``<pad>`` = 0); masks are boolean, ``True`` = may attend; sources are
right-padded. Shape legend: ``B`` batch, ``S`` source length, ``E`` embedding
width, ``H`` hidden size (the book's d_h), ``C`` context size, ``V`` vocabulary size.

References: Cho et al. (2014); Bahdanau, Cho & Bengio (2015); Luong, Pham &
Manning (2015).
"""

from __future__ import annotations

import torch
from torch import nn

from attnbook._checks import dropout_rate, float_tensor, int_in_range, positive_int, token_ids
from attnbook.alignment import AdditiveAttention, LuongAttention

__all__ = ["Encoder", "PlainDecoder", "AttentionDecoder"]


# ----------------------------------------------------------------------------- encoder


class Encoder(nn.Module):
    """Embeds source ids (B, S) and reads them with a GRU: ``forward(src) -> (memory, summary)``.

    ``memory`` (B, S, hidden_size) holds one annotation ``h_j`` per position --
    with ``bidirectional=True`` the forward and backward states side by side,
    ``hidden_size // 2`` each, so that ``h_j`` sees the whole sentence around
    position ``j``. ``summary`` (B, hidden_size) is the GRU's final state (the
    forward state after the last real token, then the backward state after
    the first): all that a decoder without attention ever sees of the source.

    Sources are right-padded with ``pad_id``, and padding never enters a state
    that the outputs use: the forward GRU (``gru``) meets the padding only
    after the last real token, and the backward GRU (``gru_reverse``) reads each
    sentence reversed *within its length*, ``x_{n-1} ... x_0`` followed by the
    padding. ``memory`` is zero at padded positions. This computes exactly
    what ``nn.GRU(bidirectional=True)`` computes on a packed sequence (the
    tests check it with copied weights) without ``pack_padded_sequence``,
    whose backward pass is slow on CPU for long inputs.

    >>> enc = Encoder(vocab_size=10, embed_dim=4, hidden_size=6)
    >>> memory, summary = enc(torch.tensor([[5, 6, 7], [8, 9, 0]]))  # the second source has 2 tokens
    >>> memory.shape, summary.shape                                  # (B, S, H), (B, H)
    (torch.Size([2, 3, 6]), torch.Size([2, 6]))
    >>> memory[1, 2].abs().sum().item()                              # nothing at the padding
    0.0
    """

    def __init__(
        self,
        vocab_size: int,
        embed_dim: int,
        hidden_size: int,
        *,
        bidirectional: bool = True,
        pad_id: int = 0,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("embed_dim", embed_dim), ("hidden_size", hidden_size)):
            positive_int(name, value)
        if bidirectional and hidden_size % 2 != 0:
            raise ValueError(
                f"a bidirectional encoder splits hidden_size between its two directions, so it must be even, "
                f"got {hidden_size}"
            )
        int_in_range("pad_id", pad_id, 0, vocab_size - 1, " (an id of the vocabulary)")
        self.vocab_size, self.hidden_size, self.pad_id = vocab_size, hidden_size, pad_id
        self.bidirectional = bidirectional
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.dropout = nn.Dropout(dropout_rate(dropout))
        per_direction = hidden_size // 2 if bidirectional else hidden_size
        self.gru = nn.GRU(embed_dim, per_direction, batch_first=True)  # reads x_0 ... x_{n-1}
        self.gru_reverse = nn.GRU(embed_dim, per_direction, batch_first=True) if bidirectional else None

    def forward(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        token_ids("src", src, self.vocab_size, dim=2)
        B, S = src.shape
        real = src != self.pad_id  # (B, S)
        lengths = real.sum(dim=1)  # (B,)
        if bool((lengths == 0).any()):
            raise ValueError("every source must hold at least one token that is not padding")
        positions = torch.arange(S, device=src.device)
        if not torch.equal(real, positions[None, :] < lengths[:, None]):
            raise ValueError(
                f"src must be right-padded: pad_id={self.pad_id} may only appear after the last real token"
            )
        x = self.dropout(self.embed(src))  # (B, S, E)
        last = (lengths - 1)[:, None, None]  # (B, 1, 1): where each forward pass ends
        forward_states, _ = self.gru(x)  # (B, S, H/dir); states at padded positions are never used
        forward_final = forward_states.gather(1, last.expand(B, 1, forward_states.shape[-1])).squeeze(1)
        if self.gru_reverse is None:
            memory, summary = forward_states, forward_final  # (B, S, H), (B, H)
        else:
            # position j of the reversed sentence is position n-1-j of the original; padding stays put
            flip = torch.where(real, lengths[:, None] - 1 - positions[None, :], positions[None, :])  # (B, S)
            x_reversed = x.gather(1, flip[:, :, None].expand_as(x))  # (B, S, E)
            states_reversed, _ = self.gru_reverse(x_reversed)  # (B, S, H/2)
            backward_final = states_reversed.gather(
                1, last.expand(B, 1, states_reversed.shape[-1])
            ).squeeze(1)  # (B, H/2): the backward state after reading x_0
            backward_states = states_reversed.gather(1, flip[:, :, None].expand_as(states_reversed))  # (B, S, H/2)
            memory = torch.cat([forward_states, backward_states], dim=-1)  # (B, S, H)
            summary = torch.cat([forward_final, backward_final], dim=-1)  # (B, H)
        return memory * real[:, :, None], summary  # zero at the padding


# ----------------------------------------------------------------------------- decoders


class _DecoderBase(nn.Module):
    """The parts both decoders share: target embedding, GRU cell, output layer.

    One step reads ``y_{t-1}`` and a context ``c_t`` (B, context_size):
    ``s_t = GRUCell([E y_{t-1}; c_t], s_{t-1})`` and ``logits = W_o [s_t; c_t; E y_{t-1}]``
    (a linear version of Bahdanau's "deep output").
    """

    def __init__(
        self, vocab_size: int, embed_dim: int, hidden_size: int, context_size: int, *, dropout: float = 0.0
    ) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("embed_dim", embed_dim),
            ("hidden_size", hidden_size),
            ("context_size", context_size),
        ):
            positive_int(name, value)
        self.vocab_size, self.hidden_size, self.context_size = vocab_size, hidden_size, context_size
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.dropout = nn.Dropout(dropout_rate(dropout))
        self.cell = nn.GRUCell(embed_dim + context_size, hidden_size)
        self.out = nn.Linear(hidden_size + context_size + embed_dim, vocab_size)

    def _check_step(self, prev_token: object, hidden: object, memory: object) -> tuple[int, int]:
        prev_token = token_ids("prev_token", prev_token, self.vocab_size, dim=1)
        B = prev_token.shape[0]
        hidden = float_tensor("hidden", hidden, (B, self.hidden_size), f"(B={B}, hidden_size={self.hidden_size})")
        memory = float_tensor("memory", memory, (B, None, self.context_size), f"(B={B}, S, {self.context_size})")
        if memory.shape[1] == 0:
            raise ValueError("memory must hold at least one position (S >= 1), got S = 0")
        if memory.dtype != hidden.dtype:
            raise TypeError(f"hidden and memory must share one dtype, got {hidden.dtype} and {memory.dtype}")
        return B, memory.shape[1]

    def _advance(
        self, prev_token: torch.Tensor, hidden: torch.Tensor, context: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        e = self.dropout(self.embed(prev_token))  # (B, E)
        hidden = self.cell(torch.cat([e, context], dim=-1), hidden)  # s_t: (B, H)
        features = torch.cat([hidden, context, e], dim=-1)  # (B, H + C + E)
        return self.out(self.dropout(features)), hidden  # (B, V), (B, H)


class PlainDecoder(_DecoderBase):
    """A GRU decoder without attention: the context is the same vector at every step.

    ``step(prev_token, hidden, memory, mask=None) -> (logits, hidden, None)``
    has the signature of :meth:`AttentionDecoder.step`, but ``memory`` must be
    a single vector per sequence, (B, 1, context_size) -- :class:`Seq2Seq`
    passes the encoder's ``summary`` -- and there are no attention weights.
    This is the fixed-size bottleneck of Cho et al. (2014).

    >>> dec = PlainDecoder(vocab_size=7, embed_dim=4, hidden_size=5, context_size=6)
    >>> summary = torch.randn(2, 1, 6)                          # (B, 1, context_size)
    >>> logits, hidden, weights = dec.step(torch.tensor([1, 1]), torch.zeros(2, 5), summary)
    >>> logits.shape, hidden.shape, weights                     # (B, V), (B, H), no attention
    (torch.Size([2, 7]), torch.Size([2, 5]), None)
    """

    def step(self, prev_token: torch.Tensor, hidden: torch.Tensor, memory: torch.Tensor,
             mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, None]:
        """One step: previous token (B,), state (B, H), summary (B, 1, C) -> logits (B, V), state, None."""
        _, S = self._check_step(prev_token, hidden, memory)
        if S != 1:
            raise ValueError(
                f"PlainDecoder reads one context vector per sequence: memory must be (B, 1, context_size), "
                f"got S={S} positions (pass the encoder's summary, or use AttentionDecoder)"
            )
        logits, hidden = self._advance(prev_token, hidden, memory[:, 0])  # the same c at every step
        return logits, hidden, None


class AttentionDecoder(_DecoderBase):
    """A GRU decoder that attends over the encoder's memory anew at every step.

    ``step(prev_token, hidden, memory, mask) -> (logits, hidden, weights)``:

    1. ``α_t = softmax_j a(s_{t-1}, h_j)`` over the unmasked positions, and
       ``c_t = Σ_j α_tj h_j`` (``weights`` α_t is (B, S), ``c_t`` (B, context_size));
    2. ``s_t = GRUCell([E y_{t-1}; c_t], s_{t-1})``;
    3. ``logits = W_o [s_t; c_t; E y_{t-1}]`` (B, V).

    ``attention`` picks the alignment model ``a``: ``"additive"``
    (:class:`~attnbook.alignment.AdditiveAttention`, Bahdanau) or ``"general"``
    / ``"dot"`` (:class:`~attnbook.alignment.LuongAttention`; ``"dot"`` needs
    ``hidden_size == context_size``). As in Bahdanau's model the query is the
    *previous* state ``s_{t-1}``. ``mask`` (B, S) is ``True`` at real source
    tokens. The keys' projection does not change between steps:
    :meth:`project_keys` computes it once and ``step(..., projected_keys=...)``
    reuses it.

    >>> _ = torch.manual_seed(0)
    >>> dec = AttentionDecoder(vocab_size=7, embed_dim=4, hidden_size=5, context_size=6)
    >>> memory = torch.randn(2, 3, 6)                           # (B, S, context_size)
    >>> mask = torch.tensor([[True, True, True], [True, True, False]])
    >>> logits, hidden, weights = dec.step(torch.tensor([1, 1]), torch.zeros(2, 5), memory, mask)
    >>> logits.shape, hidden.shape, weights.shape               # (B, V), (B, H), (B, S)
    (torch.Size([2, 7]), torch.Size([2, 5]), torch.Size([2, 3]))
    >>> torch.allclose(weights.sum(dim=1), torch.ones(2)), weights[1, 2].item()  # rows sum to 1; padding: 0
    (True, 0.0)
    """

    def __init__(
        self,
        vocab_size: int,
        embed_dim: int,
        hidden_size: int,
        context_size: int,
        *,
        attention: str = "additive",
        attn_size: int | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(vocab_size, embed_dim, hidden_size, context_size, dropout=dropout)
        if attention == "additive":
            self.attention: AdditiveAttention | LuongAttention = AdditiveAttention(
                hidden_size, context_size, attn_size or hidden_size
            )
        elif attention in ("general", "dot"):
            self.attention = LuongAttention(hidden_size, context_size, method=attention)
        else:
            raise ValueError(f"attention must be 'additive', 'general' or 'dot', got {attention!r}")
        self.attention_kind = attention

    def project_keys(self, memory: torch.Tensor) -> torch.Tensor:
        """The keys' part of the alignment scores, once per sequence: (B, S, C) -> (B, S, ·)."""
        return self.attention.project_keys(memory)

    def step(self, prev_token: torch.Tensor, hidden: torch.Tensor, memory: torch.Tensor,
             mask: torch.Tensor | None = None, *,
             projected_keys: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step: previous token (B,), state (B, H), memory (B, S, C), mask (B, S) -> logits, state, weights."""
        B, S = self._check_step(prev_token, hidden, memory)
        if mask is not None and (not isinstance(mask, torch.Tensor) or tuple(mask.shape) != (B, S)):
            got = tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__
            raise ValueError(f"mask must have shape (B={B}, S={S}), True at real source tokens, got {got}")
        context, weights = self.attention(hidden, memory, mask=mask, projected_keys=projected_keys)  # (B, C), (B, S)
        logits, hidden = self._advance(prev_token, hidden, context)
        return logits, hidden, weights
