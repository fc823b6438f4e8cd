"""Recurrent encoder-decoders with and without attention: the models of chapter 1.

``Encoder`` -> ``PlainDecoder`` / ``AttentionDecoder`` -> ``Seq2SeqConfig`` ->
``Seq2Seq`` -> ``greedy_decode``. The helpers that batch, train and score
these models (``encode_pairs``, ``LengthBuckets``, ``seq2seq_loss``,
``exact_match``, ``accuracy_by_length``, ``translate``) serve the Transformer
of chapter 2 as well and live in :mod:`attnbook.seq2seq`.

The encoder and the decoders -- a fixed summary (Cho et al., 2014) or an
alignment over the annotations (Bahdanau et al., 2015) as the context -- live
in :mod:`attnbook.rnn_blocks`, whose docstring describes them, and are
importable from here too; this module puts them together.

One decoder step is ``step(prev_token, hidden, memory, mask) -> (logits,
hidden, weights)``; :class:`Seq2Seq` runs it with teacher forcing and
:func:`greedy_decode` feeds its own predictions back in. Compared with the
:mod:`attnbook.transformer` siblings, everything here is sequential: step ``t``
needs the state of step ``t - 1``.

Token ids follow :class:`attnbook.data.CharVocab` (``<pad>`` = 0, ``<bos>`` = 1,
``<eos>`` = 2); masks are boolean, ``True`` = may attend; sources are
right-padded. Shape legend: ``B`` batch, ``S`` source length, ``T`` target
length, ``E`` embedding width, ``H`` hidden size, ``V`` vocabulary size.

References: Cho et al., *Learning Phrase Representations using RNN
Encoder-Decoder for Statistical Machine Translation* (2014); Bahdanau, Cho &
Bengio, *Neural Machine Translation by Jointly Learning to Align and
Translate* (2015); Luong, Pham & Manning, *Effective Approaches to
Attention-based Neural Machine Translation* (2015).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attnbook._checks import an_int, dropout_rate, int_in_range, positive_int, token_ids
from attnbook._config import PresetConfig

# the encoder and decoders lived here first: ``from attnbook.rnn import AttentionDecoder`` still works
from attnbook.rnn_blocks import AttentionDecoder as AttentionDecoder
from attnbook.rnn_blocks import Encoder as Encoder
from attnbook.rnn_blocks import PlainDecoder as PlainDecoder
from attnbook.rnn_blocks import _DecoderBase as _DecoderBase

__all__ = [
    "Seq2SeqConfig",
    "SEQ2SEQ_PRESETS",
    "Seq2Seq",
    "greedy_decode",
]

_ATTENTIONS = ("additive", "general", "dot", None)


# ----------------------------------------------------------------------------- the model


SEQ2SEQ_PRESETS: dict[str, dict[str, object]] = {
    # tests and doctests: trains in seconds
    "tiny": dict(embed_dim=16, hidden_size=32, attn_size=16),
    # the chapter's date translator on a 2-core laptop CPU (see benchmarks/bench_rnn_dates.py)
    "cpu-fast": dict(embed_dim=32, hidden_size=128, attn_size=64),
    # a bigger model for a GPU
    "gpu": dict(embed_dim=64, hidden_size=256, attn_size=128, dropout=0.1),
}


@dataclass
class Seq2SeqConfig(PresetConfig):
    """Sizes and switches of a :class:`Seq2Seq`; ``preset(name, ...)`` gives named sizes.

    >>> cfg = Seq2SeqConfig.preset("tiny", src_vocab_size=12, tgt_vocab_size=14)
    >>> cfg.hidden_size, cfg.attention
    (32, 'additive')
    >>> cfg.replace(attention=None).attention is None                # the no-attention baseline
    True
    """

    presets = SEQ2SEQ_PRESETS  # the named sizes that preset(name) reads

    src_vocab_size: int  # source ids are 0 .. src_vocab_size - 1 (pad, bos, eos, unk included)
    tgt_vocab_size: int  # target ids are 0 .. tgt_vocab_size - 1
    embed_dim: int = 32  # width E of the character embeddings (source and target have their own)
    hidden_size: int = 128  # decoder state s_t and annotation h_j width (hidden_size // 2 per encoder direction)
    attention: str | None = "additive"  # "additive" (Bahdanau), "general"/"dot" (Luong), None: no attention
    attn_size: int = 64  # hidden width of the additive alignment MLP (unused by the others)
    bidirectional: bool = True  # encoder reads left-to-right and right-to-left (Bahdanau) or one way only
    dropout: float = 0.0  # on embeddings and the decoder's output features
    pad_id: int = 0  # padding id, the same in both vocabularies (CharVocab uses 0)

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "embed_dim", "hidden_size", "attn_size"):
            positive_int(name, getattr(self, name))
        if self.attention not in _ATTENTIONS:
            raise ValueError(f"attention must be one of {_ATTENTIONS}, got {self.attention!r}")
        if self.bidirectional and self.hidden_size % 2 != 0:
            raise ValueError(f"bidirectional=True needs an even hidden_size, got {self.hidden_size}")
        dropout_rate(self.dropout)
        smallest = min(self.src_vocab_size, self.tgt_vocab_size)
        int_in_range("pad_id", self.pad_id, 0, smallest - 1, " (an id of both vocabularies)")

class Seq2Seq(nn.Module):
    """A GRU encoder-decoder, with or without attention: ``forward(src, tgt_in) -> logits``.

    ``src`` (B, S) is right-padded source ids; ``tgt_in`` (B, T) is the target
    shifted right (starting with BOS), so that ``logits[:, t]`` (B, T, V)
    predicts target token ``t`` from the source and the *true* targets before
    it (teacher forcing). ``forward(..., need_weights=True)`` returns
    ``(logits, weights)`` with the attention weights (B, T, S) (``None``
    without attention). Use ``ignore_index=pad_id`` in the loss, or
    :func:`attnbook.seq2seq.seq2seq_loss`.

    The pieces: ``encoder`` (:class:`Encoder`), ``bridge`` (``s_0 = tanh(W_s
    summary)``, the decoder's first state) and ``decoder``
    (:class:`AttentionDecoder`, or :class:`PlainDecoder` when
    ``config.attention is None``). :meth:`encode` returns what the decoder
    reads: the memory (B, S, H) and its mask for attention, or only the
    summary (B, 1, H) without -- the bottleneck made explicit.

    >>> _ = torch.manual_seed(0)
    >>> model = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=10, tgt_vocab_size=12))
    >>> src = torch.tensor([[4, 5, 6, 0], [7, 8, 9, 5]])        # (B=2, S=4), pad_id 0
    >>> tgt_in = torch.tensor([[1, 6, 7], [1, 8, 9]])           # (B=2, T=3), BOS = 1 first
    >>> logits, weights = model(src, tgt_in, need_weights=True)
    >>> logits.shape, weights.shape                             # (B, T, V), (B, T, S)
    (torch.Size([2, 3, 12]), torch.Size([2, 3, 4]))
    >>> weights[0, :, 3]                                        # nobody attends to the padding
    tensor([0., 0., 0.], grad_fn=<SelectBackward0>)
    """

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise TypeError(f"config must be a Seq2SeqConfig, got {type(config).__name__}")
        self.config = cfg = config
        H = cfg.hidden_size
        self.encoder = Encoder(cfg.src_vocab_size, cfg.embed_dim, H, bidirectional=cfg.bidirectional,
                               pad_id=cfg.pad_id, dropout=cfg.dropout)
        self.bridge = nn.Linear(H, H)  # s_0 = tanh(W_s summary + b)
        if cfg.attention is None:
            self.decoder: PlainDecoder | AttentionDecoder = PlainDecoder(
                cfg.tgt_vocab_size, cfg.embed_dim, H, H, dropout=cfg.dropout
            )
        else:
            self.decoder = AttentionDecoder(cfg.tgt_vocab_size, cfg.embed_dim, H, H, attention=cfg.attention,
                                            attn_size=cfg.attn_size, dropout=cfg.dropout)

    @property
    def uses_attention(self) -> bool:
        return isinstance(self.decoder, AttentionDecoder)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Source ids (B, S) -> ``(memory, mask, hidden)``: what the decoder reads, and s_0 (B, H).

        With attention ``memory`` is every annotation (B, S, H) and ``mask``
        (B, S) is ``True`` at real tokens; without, ``memory`` is the summary
        alone (B, 1, H) and ``mask`` is ``None``.
        """
        memory, summary = self.encoder(src)  # (B, S, H), (B, H)
        hidden = torch.tanh(self.bridge(summary))  # s_0: (B, H)
        if not self.uses_attention:
            return summary.unsqueeze(1), None, hidden  # (B, 1, H): the whole source in one vector
        return memory, src != self.config.pad_id, hidden

    def forward(
        self, src: torch.Tensor, tgt_in: torch.Tensor, *, need_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor | None]:
        token_ids("src", src, self.config.src_vocab_size, dim=2)
        token_ids("tgt_in", tgt_in, self.config.tgt_vocab_size, dim=2)
        if src.shape[0] != tgt_in.shape[0]:
            raise ValueError(f"src and tgt_in must have the same batch size, got {src.shape[0]} and {tgt_in.shape[0]}")
        memory, mask, hidden = self.encode(src)
        decoder = self.decoder
        step_kwargs = {"projected_keys": decoder.project_keys(memory)} if isinstance(decoder, AttentionDecoder) else {}
        logits, weights = [], []
        for t in range(tgt_in.shape[1]):  # teacher forcing: the true previous token
            step_logits, hidden, w = decoder.step(tgt_in[:, t], hidden, memory, mask, **step_kwargs)
            logits.append(step_logits)  # (B, V)
            if w is not None:
                weights.append(w)  # (B, S); the plain decoder has none
        out = torch.stack(logits, dim=1)  # T x (B, V) -> (B, T, V)
        if not need_weights:
            return out
        return out, torch.stack(weights, dim=1) if self.uses_attention else None  # (B, T, S)


@torch.no_grad()
def greedy_decode(
    model: Seq2Seq,
    src: torch.Tensor,
    bos_id: int,
    eos_id: int,
    max_len: int,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Translate ``src`` (B, S) one most-likely token at a time; returns ``(tokens, attention)``.

    Starts every target with ``bos_id`` and feeds each prediction back in. A
    sequence is finished once it emits ``eos_id``; after that it gets
    ``model.config.pad_id`` (and zero attention), and decoding stops when all
    are finished or after ``max_len`` tokens. ``tokens`` (B, L), ``L <=
    max_len``, has no BOS and keeps the EOS; ``attention`` (B, L, S) holds the
    weights with which each output token was produced (row ``t`` for token
    ``t``), or is ``None`` for a model without attention. Runs in eval mode and
    restores the model's mode afterwards.

    >>> _ = torch.manual_seed(0)
    >>> model = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8))
    >>> tokens, attention = greedy_decode(model, torch.tensor([[3, 4, 5], [6, 0, 0]]), bos_id=1, eos_id=2, max_len=5)
    >>> tokens.shape[0], tokens.shape[1] <= 5, attention.shape[1] == tokens.shape[1]  # (B, L), (B, L, S)
    (2, True, True)
    """
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"model must be an attnbook.rnn.Seq2Seq, got {type(model).__name__}")
    cfg = model.config
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id), ("max_len", max_len)):
        an_int(name, value)
    positive_int("max_len", max_len)
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
        int_in_range(name, value, 0, cfg.tgt_vocab_size - 1, " (the target vocabulary)")
    token_ids("src", src, cfg.src_vocab_size, dim=2)

    was_training = model.training
    model.eval()
    try:
        memory, mask, hidden = model.encode(src)
        decoder = model.decoder
        step_kwargs = {"projected_keys": decoder.project_keys(memory)} if isinstance(decoder, AttentionDecoder) else {}
        B = src.shape[0]
        prev = torch.full((B,), bos_id, dtype=torch.long, device=src.device)  # (B,): BOS
        done = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
        tokens, weights = [], []
        for _ in range(max_len):
            logits, hidden, w = decoder.step(prev, hidden, memory, mask, **step_kwargs)
            prev = logits.argmax(dim=-1).masked_fill(done, cfg.pad_id)  # finished sequences only pad
            tokens.append(prev)
            if w is not None:
                weights.append(w.masked_fill(done[:, None], 0.0))  # (B, S)
            done |= prev == eos_id
            if bool(done.all()):
                break
        attention = torch.stack(weights, dim=1) if weights else None  # (B, L, S)
        return torch.stack(tokens, dim=1), attention  # (B, L)
    finally:
        model.train(was_training)
