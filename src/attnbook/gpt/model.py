"""``GPTConfig`` and its presets, and the ``GPT`` model (token + learned positions, blocks, tied head).

GPT-2's choices are the defaults; ``norm="rmsnorm"``, ``mlp="swiglu"``,
``positions="rope"``, ``bias=False`` and ``tie_word_embeddings=False`` give
LLaMA's decoder, and ``n_kv_head`` Llama 2 70B's grouped-query attention (the
``llama-nano`` preset has them all), whose weights load into Hugging Face's
``LlamaForCausalLM`` unchanged (``tests/test_llama_parity.py``).

Shape legend: ``B`` batch, ``T`` sequence length, ``C = n_embd``, ``nh``
heads, ``V`` vocabulary size, ``P`` tokens already in a :class:`KVCache`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import dropout_rate, positive_int, token_ids
from attnbook._config import PresetConfig
from attnbook.positional import LearnedPositions
from attnbook.train.decay import decay_groups

from .layers import MLPS, NORMS, Block, KVCache, make_norm
from .rope import rope_tables

__all__ = ["GPTConfig", "GPT_PRESETS", "GPT", "IGNORE_INDEX", "POSITIONS", "forward_flops"]

IGNORE_INDEX = -100  # a target equal to this is skipped by the loss (PyTorch's and HF's default)
POSITIONS = ("learned", "rope")  # a table added to the tokens (GPT-2), or rotations of queries and keys


GPT_PRESETS: dict[str, dict[str, object]] = {
    # minGPT's small sizes: tests, doctests and quick experiments
    "gpt-nano": dict(n_layer=3, n_head=3, n_embd=48, block_size=64),
    "gpt-micro": dict(n_layer=4, n_head=4, n_embd=128, block_size=128),
    "gpt-mini": dict(n_layer=6, n_head=6, n_embd=192, block_size=128),
    # the chapter's character model on a 2-core CPU: validation loss about 1.81 on Shakespeare
    # after 40 s of training (benchmarks/bench_gpt.py). In so short a run, the number of steps
    # matters more than depth: 2 blocks and batches of 16 beat 3-4 blocks. No biases, no dropout.
    "cpu-fast": dict(n_layer=2, n_head=4, n_embd=128, block_size=64, bias=False),
    # nanoGPT's Shakespeare-character model for a GPU (10.7 M parameters)
    "gpu": dict(n_layer=6, n_head=6, n_embd=384, block_size=256, dropout=0.2),
    # GPT-2 small (124 M parameters), the sizes of Hugging Face's "gpt2"
    "gpt2": dict(vocab_size=50257, n_layer=12, n_head=12, n_embd=768, block_size=1024),
    # gpt-nano's size with Llama's block: RMSNorm, SwiGLU, rotary positions, no biases, an output layer
    # of its own (no released Llama ties it), and 2 key/value heads for 4 (Llama 2 70B's grouped queries)
    "llama-nano": dict(n_layer=3, n_head=4, n_kv_head=2, n_embd=48, block_size=64, bias=False,
                       norm="rmsnorm", mlp="swiglu", positions="rope", tie_word_embeddings=False),
}


@dataclass
class GPTConfig(PresetConfig):
    """Sizes of a :class:`GPT`; ``GPTConfig.preset(name, **overrides)`` gives named sizes.

    >>> cfg = GPTConfig.preset("gpt-nano", vocab_size=65)
    >>> cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.block_size
    (3, 3, 48, 64)
    >>> cfg.replace(n_layer=2).n_layer
    2
    """

    presets = GPT_PRESETS  # the named sizes that preset(name) reads

    vocab_size: int  # token ids are 0 .. vocab_size - 1 (84 for Shakespeare's characters, 50257 for GPT-2)
    block_size: int = 128  # context length: the most tokens the model reads at once (HF: n_positions)
    n_layer: int = 4  # number of transformer blocks
    n_head: int = 4  # attention heads per block; n_embd must be divisible by it
    n_embd: int = 128  # width C of the residual stream and of every embedding
    n_inner: int | None = None  # hidden width of the MLP; None means 4 * n_embd (HF's name)
    dropout: float = 0.0  # on embeddings, attention weights and residual branches (0 for short runs)
    bias: bool = True  # biases in Linear and LayerNorm layers (GPT-2: True; False is a little faster)
    n_kv_head: int | None = None  # key/value heads (grouped-query attention); None means n_head
    norm: str = "layernorm"  # or "rmsnorm" (Llama)
    mlp: str = "gelu"  # or "swiglu" (Llama; n_inner None then means 8 C / 3, rounded up to 8)
    positions: str = "learned"  # or "rope": rotary positions, no table (Llama)
    rope_theta: float = 10000.0  # RoPE's base: pair i turns by position * rope_theta**(-2i / hs)
    tie_word_embeddings: bool = True  # lm_head reuses wte's (V, C) matrix (GPT-2); False: its own (Llama)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            positive_int(name, getattr(self, name))
        if self.n_inner is not None:
            positive_int("n_inner", self.n_inner)
        if self.n_embd % self.n_head != 0:
            raise ValueError(
                f"n_embd must be divisible by n_head, got n_embd={self.n_embd} and n_head={self.n_head}"
            )
        dropout_rate(self.dropout)
        if not isinstance(self.bias, bool):
            raise TypeError(f"bias must be a bool, got {type(self.bias).__name__}")
        if self.n_kv_head is not None and self.n_head % positive_int("n_kv_head", self.n_kv_head):
            raise ValueError(f"n_head must be a multiple of n_kv_head, got {self.n_head} and {self.n_kv_head}")
        for name, allowed in (("norm", NORMS), ("mlp", MLPS), ("positions", POSITIONS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.positions == "rope" and self.head_size % 2:
            raise ValueError(f"rotary positions turn pairs of coordinates: the head size {self.head_size} must be even")
        if not self.rope_theta > 1:
            raise ValueError(f"rope_theta must be a number above 1, got {self.rope_theta!r}")
        if not isinstance(self.tie_word_embeddings, bool):
            raise TypeError(f"tie_word_embeddings must be a bool, got {type(self.tie_word_embeddings).__name__}")

    @property
    def n_positions(self) -> int:
        """Hugging Face's name for :attr:`block_size`."""
        return self.block_size

    @property
    def head_size(self) -> int:
        """Width ``hs = n_embd / n_head`` of one attention head."""
        return self.n_embd // self.n_head

def forward_flops(config: GPTConfig, T: int | None = None) -> int:
    """FLOPs of one forward pass of :class:`GPT` over a window of ``T`` tokens (a batch of one).

    Matrix products only, an ``(m, n) @ (n, p)`` costing ``2 m n p`` (a
    multiply and an add per term), which is how
    ``torch.utils.flop_counter.FlopCounterMode`` counts (the tests compare).
    Per block: ``c_attn``, ``C -> C + 2 nkv hs`` (grouped-query attention
    shrinks the keys and values, not the queries), ``c_proj``, the MLP's
    matrices (two of ``C x n_inner`` for GELU, three for SwiGLU), and
    attention's ``Q K^T`` and weights-times-``V``, ``2 T^2 hs`` each for every
    *query* head, computed in full whatever the causal mask. Then the output
    layer, ``2 T C V``, tied or not: tying saves parameters, not work. Look-ups,
    biases, norms, activations and the softmax are no products. ``T``
    defaults to ``block_size``. The forward third of
    :meth:`GPT.estimate_flops_per_token`, for the whole window.

    >>> cfg = GPTConfig(vocab_size=10, n_layer=1, n_head=1, n_embd=4, block_size=8)
    >>> forward_flops(cfg, 2)  # 2*2*4*(12 + 4 + 16 + 16) + 2 * 2*2*2*4 + 2*2*4*10
    992
    """
    if not isinstance(config, GPTConfig):
        raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
    T = config.block_size if T is None else positive_int("T", T)
    if T > config.block_size:
        raise ValueError(f"T={T} is longer than the context block_size={config.block_size}")
    C, hs = config.n_embd, config.head_size
    n_kv = config.n_head if config.n_kv_head is None else config.n_kv_head
    if config.mlp == "swiglu":  # w_gate, w_up and c_proj; SwiGLU's default width, 8 C / 3 rounded up to 8
        n_inner = -(-8 * C // 24) * 8 if config.n_inner is None else config.n_inner
        mlp = 3 * C * n_inner
    else:  # c_fc and c_proj
        mlp = 2 * C * (4 * C if config.n_inner is None else config.n_inner)
    weights = C * (C + 2 * n_kv * hs) + C * C + mlp  # the matrices of one block: c_attn, c_proj, the MLP
    attention = 2 * T * T * hs * config.n_head  # Q K^T, then the weights times V: T x T per query head
    return config.n_layer * (2 * T * weights + 2 * attention) + 2 * T * C * config.vocab_size


class GPT(nn.Module):
    """A GPT language model: ``forward(idx, targets=None) -> (logits, loss)``.

    ``idx`` (B, T) holds token ids with ``1 <= T <= block_size``; ``logits``
    (B, T, V) at position ``t`` score the token that comes *after* ``idx[:, t]``.
    ``targets`` (B, T), if given, are those next tokens -- ``idx`` shifted left
    by one, see the module docstring -- and ``loss`` is the mean cross-entropy
    (``None`` without targets). Ids outside the vocabulary and sequences
    longer than the context raise ``ValueError``.

    Weights start as in GPT-2: ``N(0, 0.02)``, zero biases, and the projections
    that write into the residual stream (``c_proj``) scaled by
    ``1 / sqrt(2 n_layer)`` so that the stream's variance does not grow with
    depth. The small tied embedding makes the initial logits nearly equal, so
    the loss at initialisation is close to ``ln(vocab_size)``.

    >>> _ = torch.manual_seed(0)
    >>> model = GPT(GPTConfig.preset("gpt-nano", vocab_size=10))
    >>> idx = torch.tensor([[1, 2, 3, 4]])
    >>> logits, loss = model(idx, targets=torch.tensor([[2, 3, 4, 5]]))
    >>> logits.shape                                  # (B, T, V)
    torch.Size([1, 4, 10])
    >>> abs(loss.item() - math.log(10)) < 0.1         # about ln(V) at initialisation
    True
    >>> model.lm_head.weight is model.wte.weight      # weight tying
    True
    >>> llama = GPT(GPTConfig.preset("llama-nano", vocab_size=10))
    >>> llama.lm_head.weight is llama.wte.weight      # Llama's output layer is its own
    False
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = cfg = config
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)  # token embedding (V, C)
        self.wpe = (LearnedPositions(cfg.block_size, cfg.n_embd, init_std=0.02)  # position table (T_max, C)
                    if cfg.positions == "learned" else None)  # rotary positions live in the attention
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList(
            Block(cfg.n_embd, cfg.n_head, n_inner=cfg.n_inner, dropout=cfg.dropout, bias=cfg.bias,
                  n_kv_head=cfg.n_kv_head, norm=cfg.norm, mlp=cfg.mlp)
            for _ in range(cfg.n_layer)
        )
        self.ln_f = make_norm(cfg.norm, cfg.n_embd, bias=cfg.bias)  # pre-norm leaves the stream unnormalised
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:  # one (V, C) matrix reads tokens in and scores them out
            self.lm_head.weight = self.wte.weight
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """GPT-2's initialisation (see the class docstring)."""
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:
                std = 0.02 / math.sqrt(2 * self.config.n_layer) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, mean=0.0, std=std)
            else:
                nn.init.ones_(p)  # LayerNorm and RMSNorm gains

    # -- sizes -----------------------------------------------------------------

    def num_params(self, non_embedding: bool = False) -> int:
        """Number of parameters (a tied matrix counted once).

        ``non_embedding=True`` leaves out the position table, as nanoGPT
        reports; the token embedding stays in because, tied, it is also the
        output layer (untied, ``lm_head`` is counted as well).

        >>> GPT(GPTConfig.preset("gpt-nano", vocab_size=10)).num_params()
        88464
        """
        n = sum(p.numel() for p in self.parameters())
        return n - self.wpe.weight.numel() if non_embedding and self.wpe is not None else n

    def estimate_flops_per_token(self, seq_len: int | None = None) -> int:
        """Floating-point operations to train on one token (forward + backward), for MFU.

        ``6 N + 12 L T C`` (Chowdhery et al. 2022, PaLM's appendix B; Kaplan et
        al. 2020 count half the attention term): a weight
        matrix of ``N`` entries costs ``2 N`` FLOPs per token forward and twice
        that backward; attention's ``Q K^T`` and ``A V`` cost ``2 * 2 T C`` per
        layer forward, hence ``12 L T C`` in all. Here ``N`` counts the weights
        of matrix multiplies only (all Linear layers, the head included;
        embedding lookups, biases and norms are not multiplies); ``T`` is
        ``seq_len`` (default ``block_size``). The causal mask's zeros are counted
        as work, as in the PaLM convention.

        >>> model = GPT(GPTConfig(vocab_size=10, n_layer=1, n_head=1, n_embd=4, block_size=8))
        >>> model.estimate_flops_per_token()  # 6 * (12 * 4 * 4 + 10 * 4) + 12 * 1 * 8 * 4
        1776
        """
        cfg = self.config
        T = cfg.block_size if seq_len is None else positive_int("seq_len", seq_len)
        n_matmul = sum(m.weight.numel() for m in self.modules() if isinstance(m, nn.Linear))
        return 6 * n_matmul + 12 * cfg.n_layer * T * cfg.n_embd

    def configure_optimizers(
        self,
        lr: float = 1e-3,
        *,
        weight_decay: float = 0.1,
        betas: tuple[float, float] = (0.9, 0.99),
        **kwargs: Any,
    ) -> torch.optim.AdamW:
        """AdamW that decays only the weight matrices (not biases, norms or the position table).

        The groups come from :func:`attnbook.train.decay_groups`. Extra keyword
        arguments go to :class:`torch.optim.AdamW` (for example ``fused=True`` on CUDA).

        >>> opt = GPT(GPTConfig.preset("gpt-nano", vocab_size=10)).configure_optimizers(lr=3e-3)
        >>> [g["weight_decay"] for g in opt.param_groups]
        [0.1, 0.0]
        """
        groups = decay_groups(self, weight_decay)  # each tied parameter is listed once
        return torch.optim.AdamW(groups, lr=lr, betas=betas, **kwargs)

    # -- forward ---------------------------------------------------------------

    def _check_idx(self, idx: object, past: int = 0) -> torch.Tensor:
        idx = token_ids("idx", idx)
        if idx.dim() != 2 or idx.shape[0] == 0 or idx.shape[1] == 0:
            raise ValueError(f"idx must have shape (B, T) with B, T >= 1, got {tuple(idx.shape)}")
        if past + idx.shape[1] > self.config.block_size:
            raise ValueError(
                f"idx has T={idx.shape[1]} tokens" + (f" after {past} cached" if past else "")
                + f", more than the context block_size={self.config.block_size}; crop it to the last "
                f"{self.config.block_size} (generate() does this for you)"
            )
        token_ids("idx", idx, self.config.vocab_size)
        return idx

    def _check_targets(self, targets: object, idx: torch.Tensor) -> torch.Tensor:
        targets = token_ids("targets", targets)
        if targets.shape != idx.shape:
            raise ValueError(
                f"targets must have the shape of idx {tuple(idx.shape)} (the next token of each "
                f"position), got {tuple(targets.shape)}"
            )
        kept = targets[targets != IGNORE_INDEX]
        if kept.numel() == 0:
            raise ValueError(f"every target equals IGNORE_INDEX={IGNORE_INDEX}: there is nothing to predict")
        token_ids("targets", kept, self.config.vocab_size)
        return targets

    def forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        *,
        need_weights: bool = False,
        cache: KVCache | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits (B, T, V) and the loss (or ``None``); see the class docstring.

        With a ``cache`` (:class:`KVCache`, ``P`` tokens in it), ``idx`` holds the
        tokens that come next, at positions ``P .. P + T - 1``; their keys and
        values are appended to the cache, and the logits equal those of the
        whole sequence run without one.
        """
        past = 0 if cache is None else len(cache)
        idx = self._check_idx(idx, past)
        if targets is not None:
            targets = self._check_targets(targets, idx)
        x = self.wte(idx)  # (B, T, C)
        rope = None
        if self.wpe is None:  # rotary: positions P .. P + T - 1 turn the queries and keys
            head_size = self.config.n_embd // self.config.n_head
            positions = torch.arange(past, past + idx.shape[1], device=idx.device)
            rope = rope_tables(head_size, positions, self.config.rope_theta)  # (T, hs) each
        elif past == 0:
            x = self.wpe(x)  # (B, T, C): token vector + position vector
        else:
            x = x + self.wpe.weight[past : past + idx.shape[1]]  # the positions after the cached ones
        x = self.drop(x)
        for layer, block in enumerate(self.h):
            x = block(x, need_weights=need_weights, rope=rope, cache=cache, layer=layer)  # (B, T, C)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(
            logits.view(-1, logits.size(-1)),  # (B*T, V)
            targets.reshape(-1),  # (B*T,)
            ignore_index=IGNORE_INDEX,
        )
        return logits, loss

    def attention_weights(self) -> list[torch.Tensor | None]:
        """One (B, nh, T, T) map per block, kept by the last ``forward(..., need_weights=True)``.

        >>> model = GPT(GPTConfig.preset("gpt-nano", vocab_size=10))
        >>> _ = model(torch.tensor([[1, 2, 3]]), need_weights=True)
        >>> [tuple(w.shape) for w in model.attention_weights()]
        [(1, 3, 3, 3), (1, 3, 3, 3), (1, 3, 3, 3)]
        """
        return [cast(Block, block).attn.attn_weights for block in self.h]
