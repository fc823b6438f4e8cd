"""The BERT encoder: embeddings, a stack of post-norm encoder blocks, and the [CLS] pooler.

Small to large: ``BertEmbeddings`` -> ``BertPooler`` -> ``BertModel``.

**What it adds over** :mod:`attnbook.transformer`: BERT is the Transformer's
encoder alone, read *bidirectionally* -- every token attends to every other
real token (only padding is masked), unlike GPT's causal mask. Its input is
the sum of three learned tables -- token, segment (sentence A = 0, sentence
B = 1) and position -- followed by LayerNorm; the first token is always
``[CLS]``, whose final vector, through a tanh layer (the *pooler*), stands for
the whole input in sentence-level tasks.

The blocks are chapter 2's :class:`attnbook.transformer.EncoderBlock` with
``norm_first=False`` (post-norm, as in BERT) and GELU, built with three BERT
details passed to its constructor: LayerNorm epsilon ``1e-12``
(``layer_norm_eps``), attention-weight dropout ``attention_probs_dropout_prob``
(``attn_dropout``), and no dropout inside the feed-forward network
(``ffn_dropout=0``: BERT drops only the sublayer outputs).

Names follow Hugging Face's ``BertModel`` (``embeddings.word_embeddings``,
``embeddings.position_embeddings``, ``embeddings.token_type_embeddings``,
``embeddings.LayerNorm``, ``encoder.layer``, ``pooler.dense``), so the two read
side by side; tests copy Hugging Face's weights in and get the same outputs.

Shape legend: ``B`` batch, ``T`` sequence length, ``C = hidden_size``, ``nh``
heads, ``V`` vocabulary size.

Reference: Devlin et al. (2018), https://arxiv.org/abs/1810.04805, section 3
and figure 2.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn

from attnbook._checks import token_ids
from attnbook.transformer import EncoderBlock

from .config import BertConfig

__all__ = ["BertEmbeddings", "BertPooler", "BertModel", "init_bert_weights", "estimate_flops_per_token",
           "shuffle_changes"]


def _check_config(config: object) -> BertConfig:
    if not isinstance(config, BertConfig):
        raise TypeError(f"config must be a BertConfig, got {type(config).__name__}")
    return config


def init_bert_weights(module: nn.Module, std: float = 0.02) -> None:
    """BERT's initialisation of one module: ``N(0, std)`` weights, zero biases, unit LayerNorm.

    Apply it with ``model.apply(init_bert_weights)``; an embedding's padding
    row starts at zero.

    >>> layer = nn.Linear(4, 3)
    >>> init_bert_weights(layer); layer.bias.tolist()
    [0.0, 0.0, 0.0]
    """
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=std)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=std)
        if module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def _check_inputs(
    config: BertConfig, input_ids: object, token_type_ids: object
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validated ``(input_ids, token_type_ids)``, the segment ids defaulting to zeros."""
    ids = token_ids("input_ids", input_ids, dim=2)
    T = ids.shape[1]
    if T > config.max_position_embeddings:
        raise ValueError(
            f"input_ids has T={T} tokens, more than max_position_embeddings="
            f"{config.max_position_embeddings}; truncate the input"
        )
    token_ids("input_ids", ids, config.vocab_size)
    if token_type_ids is None:
        return ids, torch.zeros_like(ids)  # every token in sentence A
    seg = token_ids("token_type_ids", token_type_ids)
    if seg.shape != ids.shape:
        raise ValueError(
            f"token_type_ids must have the shape of input_ids {tuple(ids.shape)}, got {tuple(seg.shape)}"
        )
    if seg.numel():
        lo, hi = (int(v) for v in torch.aminmax(seg))
        if lo < 0 or hi >= config.type_vocab_size:
            raise ValueError(
                f"token_type_ids holds segment ids in [{lo}, {hi}], outside 0 .. "
                f"{config.type_vocab_size - 1} (0 = sentence A, 1 = sentence B)"
            )
    return ids, seg


class BertEmbeddings(nn.Module):
    """BERT's input: ``LayerNorm(token + segment + position embeddings)``, then dropout.

    ``forward(input_ids, token_type_ids=None)`` maps (B, T) ids to (B, T, C);
    missing segment ids mean every token is in sentence A (segment 0).

    >>> emb = BertEmbeddings(BertConfig.preset("cpu-tiny", vocab_size=50))
    >>> ids = torch.tensor([[2, 7, 8, 3, 9, 3]])        # [CLS] a b [SEP] c [SEP]
    >>> seg = torch.tensor([[0, 0, 0, 0, 1, 1]])        # sentence A, then sentence B
    >>> emb(ids, seg).shape
    torch.Size([1, 6, 128])
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = cfg = _check_config(config)
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size, padding_idx=cfg.pad_token_id)
        self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        ids, seg = _check_inputs(self.config, input_ids, token_type_ids)
        positions = torch.arange(ids.shape[1], device=ids.device)  # (T,): 0 .. T-1
        x = (
            self.word_embeddings(ids)  # (B, T, C)
            + self.token_type_embeddings(seg)  # (B, T, C)
            + self.position_embeddings(positions)  # (T, C), broadcast over the batch
        )
        return self.dropout(self.LayerNorm(x))


class BertPooler(nn.Module):
    """``tanh(W h_[CLS] + b)``: the final vector of the first token, through one tanh layer.

    >>> pooler = BertPooler(4)
    >>> pooler(torch.randn(2, 5, 4)).shape              # (B, T, C) -> (B, C)
    torch.Size([2, 4])
    """

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))  # (B, C): [CLS] is position 0


def _bert_block(cfg: BertConfig) -> EncoderBlock:
    return EncoderBlock(
        cfg.hidden_size,
        cfg.num_attention_heads,
        cfg.intermediate_size,
        dropout=cfg.hidden_dropout_prob,  # on each sublayer's output
        norm_first=False,  # post-norm: x = LN(x + sublayer(x)), as in BERT
        activation=cfg.hidden_act,
        layer_norm_eps=cfg.layer_norm_eps,
        attn_dropout=cfg.attention_probs_dropout_prob,  # BERT has its own rate for the weights
        ffn_dropout=0.0,  # BERT drops the FFN's output only, not its hidden layer
    )


def _attention_mask(attention_mask: object, ids: torch.Tensor) -> torch.Tensor:
    """A (B, T) 0/1 or boolean mask (``True``/1 = real token) as a boolean (B, 1, T) key mask."""
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.is_complex():
        raise TypeError(
            f"attention_mask must be a tensor of booleans or 0/1 (1 = real token), "
            f"got {type(attention_mask).__name__}"
        )
    if attention_mask.shape != ids.shape:
        raise ValueError(
            f"attention_mask must have the shape of input_ids {tuple(ids.shape)}, "
            f"got {tuple(attention_mask.shape)}"
        )
    if attention_mask.dtype != torch.bool:
        if not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
            raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token)")
        attention_mask = attention_mask == 1
    if not bool(attention_mask.any(dim=1).all()):
        raise ValueError("attention_mask hides every token of some sequence; each needs at least one real token")
    return attention_mask.unsqueeze(1)  # (B, T) -> (B, 1, T): every query sees the same keys


class BertModel(nn.Module):
    """BERT's encoder: ``forward(input_ids, token_type_ids=None, attention_mask=None)``.

    Returns ``(sequence_output, pooled_output)``: the final hidden state of
    every token (B, T, C) and the pooled ``[CLS]`` vector (B, C). The optional
    ``attention_mask`` (B, T) is boolean or 0/1 with ``True``/1 on real tokens
    and ``False``/0 on padding, which no token attends to. With
    ``return_attentions=True`` a third value is the list of every layer's
    attention weights, each (B, nh, T, T), computed on the explicit path.

    >>> _ = torch.manual_seed(0)
    >>> model = BertModel(BertConfig.preset("cpu-tiny", vocab_size=50)).eval()
    >>> ids = torch.tensor([[2, 7, 8, 3, 0, 0]])          # two padding tokens at the end
    >>> seq, pooled = model(ids, attention_mask=ids != 0)
    >>> seq.shape, pooled.shape
    (torch.Size([1, 6, 128]), torch.Size([1, 128]))
    >>> *_, att = model(ids, attention_mask=ids != 0, return_attentions=True)
    >>> len(att), att[0].shape, float(att[0][..., 4:].abs().max())  # nobody attends to padding
    (2, torch.Size([1, 2, 6, 6]), 0.0)
    """

    def __init__(self, config: BertConfig, *, add_pooling_layer: bool = True) -> None:
        super().__init__()
        self.config = cfg = _check_config(config)
        self.embeddings = BertEmbeddings(cfg)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(_bert_block(cfg) for _ in range(cfg.num_hidden_layers))
        self.pooler = BertPooler(cfg.hidden_size) if add_pooling_layer else None
        self.apply(lambda m: init_bert_weights(m, cfg.initializer_range))

    def num_params(self) -> int:
        """Number of parameters: 109,482,240 for ``BertConfig.preset("bert-base")``.

        The paper's "110M" counts the pretraining heads too: 110,106,428 in
        :class:`attnbook.bert.BertForPreTraining` (the tied decoder once).
        """
        return sum(p.numel() for p in self.parameters())

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        *,
        return_attentions: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None] | tuple[torch.Tensor, torch.Tensor | None, list[torch.Tensor | None]]:
        x = self.embeddings(input_ids, token_type_ids)  # (B, T, C); checks the ids
        mask = None if attention_mask is None else _attention_mask(attention_mask, input_ids)  # (B, 1, T)
        attentions = []
        for block in cast(nn.ModuleList, self.encoder.layer):  # a plain Module holds it, for HF's names
            x = block(x, mask, need_weights=return_attentions)  # (B, T, C)
            if return_attentions:
                attentions.append(cast(EncoderBlock, block).attn_weights)  # (B, nh, T, T)
        pooled = self.pooler(x) if self.pooler is not None else None  # (B, C)
        return (x, pooled, attentions) if return_attentions else (x, pooled)


def estimate_flops_per_token(model: nn.Module, seq_len: int) -> int:
    """Training FLOPs per token (forward + backward) of a BERT model, for MFU.

    ``6 N + 12 L T C`` as in :meth:`attnbook.gpt.GPT.estimate_flops_per_token`:
    ``N`` counts the weights of every ``nn.Linear`` of ``model`` (a tied MLM
    decoder included, embedding lookups not), ``L`` layers, ``T = seq_len``,
    ``C = hidden_size``. ``model`` is any module with a ``config`` (a
    :class:`BertModel` or one of the heads).

    >>> cfg = BertConfig(vocab_size=10, hidden_size=4, num_hidden_layers=1, num_attention_heads=1,
    ...                  intermediate_size=8, max_position_embeddings=8)
    >>> estimate_flops_per_token(BertModel(cfg), seq_len=8)  # 6 * (4*16 + 2*32 + 16) + 12 * 8 * 4
    1248
    """
    cfg = _check_config(getattr(model, "config", None))
    n_matmul = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    return 6 * n_matmul + 12 * cfg.num_hidden_layers * seq_len * cfg.hidden_size


def shuffle_changes(model: nn.Module, ids: torch.Tensor, perms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """How far an encoder's outputs move when the words of a sentence are shuffled: ``(words, cls)``, each (K,).

    ``model`` is a :class:`BertModel` (in eval mode), ``ids`` one sentence
    ``[CLS] w_1 ... w_n [SEP]`` (T = n + 2,), ``perms`` (K, n) permutations of
    ``0 .. n-1``: the k-th shuffle puts word ``perms[k, j]`` at word place ``j``,
    ``[CLS]`` and ``[SEP]`` staying where they are. With ``h`` the outputs for
    the sentence and ``h'`` those for a shuffle,

    - ``words[k]``: each word's output *followed to its new place*, the mean over
      the words of ``||h'_j - h_perm(j)||``, over the mean norm of the words' ``h``;
    - ``cls[k]``: ``||h'_[CLS] - h_[CLS]|| / ||h_[CLS]||``, the sentence's vector.

    Self-attention without positions is permutation-equivariant: shuffling its
    input shuffles its output alike, so both are zero up to rounding; the
    position embeddings are what makes a word's place matter.

    >>> _ = torch.manual_seed(0)
    >>> model = BertModel(BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
    ...                              intermediate_size=16, max_position_embeddings=8)).eval()
    >>> ids, perms = torch.tensor([2, 7, 8, 9, 3]), torch.tensor([[2, 0, 1]])
    >>> words, cls = shuffle_changes(model, ids, perms)
    >>> bool(words[0] > 0.1)                              # with positions: each word's output changes
    True
    >>> with torch.no_grad():
    ...     _ = model.embeddings.position_embeddings.weight.zero_()
    >>> words, cls = shuffle_changes(model, ids, perms)
    >>> bool(words[0] < 1e-5 and cls[0] < 1e-5)          # without: the same outputs, moved with the words
    True
    """
    ids = token_ids("ids", ids, dim=1)
    if ids.shape[0] < 3:
        raise ValueError(f"ids must be a sentence [CLS] w_1 ... w_n [SEP] with n >= 1, got {ids.shape[0]} ids")
    n = ids.shape[0] - 2
    if not isinstance(perms, torch.Tensor) or perms.dim() != 2 or perms.shape[1] != n:
        raise ValueError(f"perms must be a (K, {n}) tensor of permutations of the {n} words")
    if not bool((perms.sort(dim=1).values == torch.arange(n)).all()):
        raise ValueError(f"each row of perms must be a permutation of 0 .. {n - 1}")
    K = perms.shape[0]
    shuffled = torch.cat([ids[:1].expand(K, 1), ids[1:-1][perms], ids[-1:].expand(K, 1)], dim=1)  # (K, T)
    with torch.no_grad():
        h, _ = model(torch.cat([ids[None], shuffled]))  # (1 + K, T, C)
    before, after = h[0], h[1:]
    followed = before[1:-1][perms]  # (K, n, C): the output each word had before, at its new place
    words = (after[:, 1:-1] - followed).norm(dim=-1).mean(1) / before[1:-1].norm(dim=-1).mean()
    cls = (after[:, 0] - before[0]).norm(dim=-1) / before[0].norm()
    return words, cls
