"""GPT: a decoder-only Transformer that predicts the next token, and how to sample from it.

Small to large: ``CausalSelfAttention`` -> ``MLP`` -> ``Block`` -> ``GPTConfig``
-> ``GPT``, then the functions around the model: ``random_batch`` (training
windows), ``next_token_loss`` (the shifted loss written out), ``stream_loss`` and
``perplexity`` (evaluation), ``next_token_probs`` and ``generate`` (sampling).

**What it adds over** :mod:`attnbook.transformer`: there is no encoder and no
cross-attention. A GPT is the decoder alone -- a stack of pre-norm blocks whose
self-attention is *causal* (position ``t`` sees tokens ``0..t`` only) -- trained
on one long stream of text to model ``p(t_1..t_N) = prod_n p(t_n | t_<n)``.
Token and *learned* position embeddings go in, a final LayerNorm and a linear
head whose weight is the token embedding (*weight tying*) come out.

**The targets convention** (the same as nanoGPT's). ``GPT.forward(idx,
targets)`` takes targets that are *already shifted*: ``targets[:, t]`` is the
token that follows ``idx[:, t]``. Cut both from one stream ``s`` as
``idx = s[i : i+T]`` and ``targets = s[i+1 : i+T+1]`` (:func:`random_batch`
does this). The loss is the mean cross-entropy over all ``B * T`` positions
(positions whose target is ``-100`` are skipped), so every window trains ``T``
predictions at once. :func:`next_token_loss` is the other way round: it takes
logits and the *unshifted* ids and does the shift itself.

**Attention** runs PyTorch's fused kernel
(:func:`attnbook.attention.fused_attention` with ``is_causal=True``) unless
``need_weights=True`` asks for the maps; then the explicit
:func:`attnbook.attention.scaled_dot_product_attention` computes them and
``GPT.attention_weights()`` returns one (B, nh, T, T) tensor per block.

Names follow Hugging Face's GPT-2 (``wte``, ``wpe``, ``h``, ``ln_1``,
``attn.c_attn``, ``attn.c_proj``, ``ln_2``, ``mlp.c_fc``, ``mlp.c_proj``,
``ln_f``, ``lm_head``; config ``vocab_size``, ``n_layer``, ``n_head``,
``n_embd``), so its code and this one read side by side; the ``gpt2`` preset
has exactly GPT-2 small's 124,439,808 parameters.

Shape legend: ``B`` batch, ``T`` sequence length, ``C = n_embd``, ``nh``
heads, ``hs = C / nh`` head size, ``V`` vocabulary size.

References: Radford et al., *Improving Language Understanding by Generative
Pre-Training* (GPT, 2018) and *Language Models are Unsupervised Multitask
Learners* (GPT-2, 2019); Press & Wolf, *Using the Output Embedding to Improve
Language Models* (weight tying, 2017); Holtzman et al., *The Curious Case of
Neural Text Degeneration* (top-p, 2020); karpathy/nanoGPT and minGPT.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import dropout_rate, int_at_least, positive_int, token_ids
from attnbook.attention import causal_mask, fused_attention, scaled_dot_product_attention
from attnbook.positional import LearnedPositions

__all__ = [
    "CausalSelfAttention",
    "MLP",
    "Block",
    "GPTConfig",
    "GPT_PRESETS",
    "GPT",
    "IGNORE_INDEX",
    "random_batch",
    "next_token_loss",
    "stream_loss",
    "perplexity",
    "next_token_probs",
    "generate",
]

IGNORE_INDEX = -100  # a target equal to this is skipped by the loss (PyTorch's and HF's default)


# ----------------------------------------------------------------------------- layers


class CausalSelfAttention(nn.Module):
    """Masked multi-head self-attention: position ``t`` attends to positions ``0..t`` only.

    What it adds over :class:`attnbook.attention.MultiHeadAttention`: it is
    self-attention only and always causal, and one linear layer ``c_attn``
    computes ``Q``, ``K`` and ``V`` of all heads in a single matmul (its
    (3C, C) weight is ``W^Q``, ``W^K``, ``W^V`` stacked, the layout of
    ``nn.MultiheadAttention.in_proj_weight``). ``c_proj`` is ``W^O``.
    ``forward(x)`` maps (B, T, C) to (B, T, C); with ``need_weights=True`` the
    detached weights (B, nh, T, T) are kept in ``self.attn_weights``.

    >>> attn = CausalSelfAttention(8, 2)
    >>> y = attn(torch.randn(3, 5, 8), need_weights=True)
    >>> y.shape, attn.attn_weights.shape
    (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]))
    >>> bool((attn.attn_weights.triu(diagonal=1) == 0).all())  # nothing from the future
    True
    """

    def __init__(self, n_embd: int, n_head: int, *, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        positive_int("n_embd", n_embd)
        positive_int("n_head", n_head)
        if n_embd % n_head != 0:
            raise ValueError(f"n_embd must be divisible by n_head, got n_embd={n_embd} and n_head={n_head}")
        self.n_embd, self.n_head, self.head_size = n_embd, n_head, n_embd // n_head
        self.dropout = dropout_rate(dropout)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)  # [W^Q; W^K; W^V] of all heads
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)  # W^O: mixes the concatenated heads
        self.resid_dropout = nn.Dropout(dropout)
        self.attn_weights: torch.Tensor | None = None

    def extra_repr(self) -> str:
        return f"n_embd={self.n_embd}, n_head={self.n_head}, dropout={self.dropout}"

    def forward(self, x: torch.Tensor, *, need_weights: bool = False) -> torch.Tensor:
        B, T, C = x.shape
        nh, hs = self.n_head, self.head_size
        q, k, v = self.c_attn(x).split(C, dim=2)  # (B, T, 3C) -> 3 x (B, T, C)
        q = q.view(B, T, nh, hs).transpose(1, 2)  # (B, T, C) -> (B, T, nh, hs) -> (B, nh, T, hs)
        k = k.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        if need_weights:
            # The teachable path builds the (B, nh, T, T) weights so that they can be plotted.
            y, w = scaled_dot_product_attention(q, k, v, causal_mask(T, device=x.device))
            self.attn_weights = w.detach()  # (B, nh, T, T), rows sum to 1, zero above the diagonal
        else:
            dropout_p = self.dropout if self.training else 0.0
            y = fused_attention(q, k, v, is_causal=True, dropout_p=dropout_p)  # (B, nh, T, hs)
            self.attn_weights = None
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, nh, T, hs) -> (B, T, nh, hs) -> (B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """The feed-forward network of a GPT block: ``c_proj(GELU(c_fc(x)))``, C -> n_inner -> C.

    What it differs in from :class:`attnbook.transformer.FeedForward`: GELU
    always, and dropout on the *output* (the residual branch), not on the
    hidden layer. The GELU is the exact one, ``x * Phi(x)``, as in nanoGPT;
    GPT-2 used a tanh approximation (``approximate="tanh"``), which differs by
    less than 1e-3 and is several times slower on a CPU today.

    >>> MLP(8)(torch.randn(2, 5, 8)).shape  # hidden width 4 * 8 = 32
    torch.Size([2, 5, 8])
    """

    def __init__(
        self, n_embd: int, n_inner: int | None = None, *, dropout: float = 0.0, bias: bool = True
    ) -> None:
        super().__init__()
        positive_int("n_embd", n_embd)
        n_inner = 4 * n_embd if n_inner is None else positive_int("n_inner", n_inner)
        self.c_fc = nn.Linear(n_embd, n_inner, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(n_inner, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout_rate(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))  # (B, T, n_inner) inside


class Block(nn.Module):
    """One pre-norm GPT block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``.

    Pre-norm (GPT-2) keeps a clean residual path from the embeddings to the
    final LayerNorm, which is what lets deep stacks train without warm
    restarts; compare ``norm_first`` in :mod:`attnbook.transformer`.

    >>> block = Block(8, 2)
    >>> block(torch.randn(2, 5, 8)).shape
    torch.Size([2, 5, 8])
    """

    def __init__(
        self,
        n_embd: int,
        n_head: int,
        *,
        n_inner: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, bias=bias)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout=dropout, bias=bias)
        self.ln_2 = nn.LayerNorm(n_embd, bias=bias)
        self.mlp = MLP(n_embd, n_inner, dropout=dropout, bias=bias)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), need_weights=need_weights)  # tokens talk to each other
        x = x + self.mlp(self.ln_2(x))  # each token thinks on its own
        return x


# ----------------------------------------------------------------------------- config


@dataclass
class GPTConfig:
    """Sizes of a :class:`GPT`; ``GPTConfig.preset(name, **overrides)`` gives named sizes.

    >>> cfg = GPTConfig.preset("gpt-nano", vocab_size=65)
    >>> cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.block_size
    (3, 3, 48, 64)
    >>> cfg.replace(n_layer=2).n_layer
    2
    """

    vocab_size: int  # token ids are 0 .. vocab_size - 1 (84 for Shakespeare's characters, 50257 for GPT-2)
    block_size: int = 128  # context length: the most tokens the model reads at once (HF: n_positions)
    n_layer: int = 4  # number of transformer blocks
    n_head: int = 4  # attention heads per block; n_embd must be divisible by it
    n_embd: int = 128  # width C of the residual stream and of every embedding
    n_inner: int | None = None  # hidden width of the MLP; None means 4 * n_embd (HF's name)
    dropout: float = 0.0  # on embeddings, attention weights and residual branches (0 for short runs)
    bias: bool = True  # biases in Linear and LayerNorm layers (GPT-2: True; False is a little faster)

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

    @property
    def n_positions(self) -> int:
        """Hugging Face's name for :attr:`block_size`."""
        return self.block_size

    @property
    def head_size(self) -> int:
        """Width ``hs = n_embd / n_head`` of one attention head."""
        return self.n_embd // self.n_head

    @classmethod
    def preset(cls, name: str, **overrides: object) -> GPTConfig:
        """A config from :data:`GPT_PRESETS` with some fields overridden; pass ``vocab_size`` too."""
        if name not in GPT_PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {sorted(GPT_PRESETS)}")
        fields = {**GPT_PRESETS[name], **overrides}
        if "vocab_size" not in fields:
            raise ValueError(f"preset {name!r} needs vocab_size=..., the number of distinct token ids")
        return cls(**fields)  # type: ignore[arg-type]

    def replace(self, **changes: object) -> GPTConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


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
}


# ----------------------------------------------------------------------------- the model


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
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = cfg = config
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)  # token embedding (V, C)
        self.wpe = LearnedPositions(cfg.block_size, cfg.n_embd, init_std=0.02)  # position table (T_max, C)
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList(
            Block(cfg.n_embd, cfg.n_head, n_inner=cfg.n_inner, dropout=cfg.dropout, bias=cfg.bias)
            for _ in range(cfg.n_layer)
        )
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)  # pre-norm leaves the stream unnormalised
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tying: one (V, C) matrix reads tokens in and scores them out
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
                nn.init.ones_(p)  # LayerNorm gains

    # -- sizes -----------------------------------------------------------------

    def num_params(self, non_embedding: bool = False) -> int:
        """Number of parameters (the tied matrix counted once).

        ``non_embedding=True`` leaves out the position table, as nanoGPT
        reports; the token embedding stays in because, tied, it is also the
        output layer.

        >>> GPT(GPTConfig.preset("gpt-nano", vocab_size=10)).num_params()
        88464
        """
        n = sum(p.numel() for p in self.parameters())
        return n - self.wpe.weight.numel() if non_embedding else n

    def estimate_flops_per_token(self, seq_len: int | None = None) -> int:
        """Floating-point operations to train on one token (forward + backward), for MFU.

        ``6 N + 12 L T C`` (Kaplan et al. 2020, appendix of PaLM 2022): a weight
        matrix of ``N`` entries costs ``2 N`` FLOPs per token forward and twice
        that backward; attention's ``Q K^T`` and ``A V`` cost ``2 * 2 T C`` per
        layer forward, hence ``12 L T C`` in all. Here ``N`` counts the weights
        of matrix multiplies only (all Linear layers, the tied head included;
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
        **kwargs: object,
    ) -> torch.optim.AdamW:
        """AdamW that decays only the weight matrices (not biases, norms or the position table).

        Extra keyword arguments go to :class:`torch.optim.AdamW` (for example
        ``fused=True`` on CUDA).

        >>> opt = GPT(GPTConfig.preset("gpt-nano", vocab_size=10)).configure_optimizers(lr=3e-3)
        >>> [g["weight_decay"] for g in opt.param_groups]
        [0.1, 0.0]
        """
        decay, no_decay = [], []
        for name, p in self.named_parameters():  # each tied parameter is listed once
            if not p.requires_grad:
                continue
            is_matrix = p.dim() >= 2 and not name.startswith("wpe")
            (decay if is_matrix else no_decay).append(p)
        groups = [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=lr, betas=betas, **kwargs)  # type: ignore[arg-type]

    # -- forward ---------------------------------------------------------------

    def _check_idx(self, idx: object) -> torch.Tensor:
        idx = token_ids("idx", idx)
        if idx.dim() != 2 or idx.shape[0] == 0 or idx.shape[1] == 0:
            raise ValueError(f"idx must have shape (B, T) with B, T >= 1, got {tuple(idx.shape)}")
        if idx.shape[1] > self.config.block_size:
            raise ValueError(
                f"idx has T={idx.shape[1]} tokens, more than the context block_size="
                f"{self.config.block_size}; crop it to the last {self.config.block_size} "
                "(generate() does this for you)"
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
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        idx = self._check_idx(idx)
        if targets is not None:
            targets = self._check_targets(targets, idx)
        x = self.drop(self.wpe(self.wte(idx)))  # (B, T, C): token vector + position vector
        for block in self.h:
            x = block(x, need_weights=need_weights)  # (B, T, C)
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
        return [block.attn.attn_weights for block in self.h]


# ----------------------------------------------------------------------------- training and evaluation


def random_batch(
    data: torch.Tensor,
    batch_size: int,
    block_size: int,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random windows of a 1-D token stream: ``(x, y)``, each (B, block_size).

    ``y`` is ``x`` shifted by one: ``y[b, t]`` is the token after ``x[b, t]``,
    the targets convention of :meth:`GPT.forward`. The window starts are drawn
    with ``generator`` (on the CPU), so a seeded generator repeats the batches.

    >>> x, y = random_batch(torch.arange(100), batch_size=2, block_size=4)
    >>> x.shape, bool((y == x + 1).all())
    (torch.Size([2, 4]), True)
    """
    data = token_ids("data", data)
    if data.dim() != 1:
        raise ValueError(f"data must be a 1-D stream of token ids, got shape {tuple(data.shape)}")
    positive_int("batch_size", batch_size)
    positive_int("block_size", block_size)
    if data.numel() < block_size + 1:
        raise ValueError(
            f"data has {data.numel()} tokens, too few for one window of block_size + 1 = {block_size + 1}"
        )
    starts = torch.randint(data.numel() - block_size, (batch_size,), generator=generator)  # (B,)
    offsets = torch.arange(block_size + 1)  # (T+1,)
    windows = data[(starts[:, None] + offsets[None, :]).to(data.device)]  # (B, T+1)
    x, y = windows[:, :-1], windows[:, 1:]  # (B, T), (B, T)
    if device is not None:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    return x, y


def next_token_loss(
    logits: torch.Tensor, ids: torch.Tensor, *, ignore_index: int = IGNORE_INDEX
) -> torch.Tensor:
    """The language-model loss written out: predict ``ids[:, 1:]`` from ``logits[:, :-1]``.

    ``logits`` (B, T, V) are a model's outputs for the *unshifted* ids (B, T);
    the prediction made at position ``t`` is scored against the token at
    ``t + 1``, and the last position has nothing to predict. Returns the mean
    cross-entropy over the ``B * (T - 1)`` scored positions, in nats.

    >>> logits = torch.zeros(1, 3, 4)            # uniform over V = 4 tokens
    >>> round(next_token_loss(logits, torch.tensor([[0, 1, 2]])).item(), 4), round(math.log(4), 4)
    (1.3863, 1.3863)
    >>> logits[0, 0, 1] = logits[0, 1, 2] = 50.0  # position t confidently predicts ids[t + 1]
    >>> round(next_token_loss(logits, torch.tensor([[0, 1, 2]])).item(), 6)
    0.0
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError("logits must be a floating-point tensor (B, T, V)")
    ids = token_ids("ids", ids)
    if logits.dim() != 3 or ids.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (B, T, V) and ids (B, T), got logits {tuple(logits.shape)} "
            f"and ids {tuple(ids.shape)}"
        )
    if ids.shape[1] < 2:
        raise ValueError(f"need T >= 2 tokens to predict a next one, got T={ids.shape[1]}")
    V = logits.shape[-1]
    pred = logits[:, :-1, :].reshape(-1, V)  # (B*(T-1), V): predictions at t = 0 .. T-2
    target = ids[:, 1:].reshape(-1)  # (B*(T-1),): the tokens at t + 1
    return F.cross_entropy(pred, target, ignore_index=ignore_index)


@torch.no_grad()
def stream_loss(
    model: GPT,
    data: torch.Tensor,
    *,
    batch_size: int = 64,
    max_tokens: int | None = None,
) -> float:
    """Mean next-token loss (nats per token) of ``model`` over a 1-D token stream.

    The stream is cut into consecutive, non-overlapping windows of
    ``block_size``; every token after the first is predicted exactly once,
    from the tokens before it in its window. ``max_tokens`` limits the
    evaluation to the first that many tokens. Runs in eval mode without
    gradients on the model's device and restores the model's mode.

    >>> _ = torch.manual_seed(0)
    >>> model = GPT(GPTConfig.preset("gpt-nano", vocab_size=10, block_size=8))
    >>> abs(stream_loss(model, torch.randint(10, (100,))) - math.log(10)) < 0.1
    True
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a GPT, got {type(model).__name__}")
    data = token_ids("data", data)
    if data.dim() != 1 or data.numel() < 2:
        raise ValueError(f"data must be a 1-D stream of at least 2 token ids, got shape {tuple(data.shape)}")
    positive_int("batch_size", batch_size)
    if max_tokens is not None:
        data = data[: positive_int("max_tokens", max_tokens) + 1]
    token_ids("data", data, model.config.vocab_size)
    T = model.config.block_size
    device = next(model.parameters()).device
    n = (data.numel() - 1) // T  # full windows
    x_all = data[: n * T].view(n, T)  # (n, T)
    y_all = data[1 : n * T + 1].view(n, T)  # (n, T): shifted by one
    pieces = [(x_all[i : i + batch_size], y_all[i : i + batch_size]) for i in range(0, n, batch_size)]
    if (data.numel() - 1) % T:  # a last, shorter window
        pieces.append((data[n * T : -1][None, :], data[n * T + 1 :][None, :]))  # (1, T'), (1, T')
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for x, y in pieces:
            x, y = x.to(device), y.to(device)
            logits, _ = model(x)  # (b, T, V)
            total += F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="sum").item()
            count += y.numel()
    finally:
        model.train(was_training)
    return total / count


def perplexity(
    model: GPT, data: torch.Tensor, *, batch_size: int = 64, max_tokens: int | None = None
) -> float:
    """``exp`` of :func:`stream_loss`: the number of equally likely tokens the model is as unsure as.

    A model that knows nothing (uniform over ``V`` tokens) has perplexity ``V``;
    a perfect one has 1.

    >>> _ = torch.manual_seed(0)
    >>> model = GPT(GPTConfig.preset("gpt-nano", vocab_size=10, block_size=8))
    >>> 9.0 < perplexity(model, torch.randint(10, (100,))) < 11.0
    True
    """
    return math.exp(stream_loss(model, data, batch_size=batch_size, max_tokens=max_tokens))


# ----------------------------------------------------------------------------- sampling


def _check_sampling(temperature: object, top_k: object, top_p: object) -> None:
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        raise ValueError(f"temperature must be a finite number >= 0 (0 means greedy), got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
        raise ValueError(f"top_k must be None or an int >= 1, got {top_k!r}")
    if top_p is not None and (
        isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0.0 < top_p <= 1.0
    ):
        raise ValueError(f"top_p must be None or a number in (0, 1], got {top_p!r}")


def next_token_probs(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """The distribution to sample the next token from, (..., V), from logits (..., V).

    In this order: divide the logits by ``temperature`` (below 1 sharpens,
    above 1 flattens; ``0`` gives all mass to the argmax, i.e. greedy); keep
    the ``top_k`` largest logits (ties with the k-th are kept; ``top_k >= V``
    keeps all); softmax; keep the smallest set of most likely tokens whose mass
    reaches ``top_p`` (nucleus sampling); renormalise. Temperature acts on the
    *logits*: dividing probabilities after the softmax would change nothing
    once renormalised.

    >>> logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    >>> next_token_probs(logits)
    tensor([0.6439, 0.2369, 0.0871, 0.0321])
    >>> next_token_probs(logits, temperature=0.5)         # sharper
    tensor([0.8650, 0.1171, 0.0158, 0.0021])
    >>> next_token_probs(logits, top_k=2)                 # only the two best survive
    tensor([0.7311, 0.2689, 0.0000, 0.0000])
    >>> next_token_probs(logits, top_p=0.8)               # 0.64 < 0.8 <= 0.64 + 0.24
    tensor([0.7311, 0.2689, 0.0000, 0.0000])
    >>> next_token_probs(logits, temperature=0)
    tensor([1., 0., 0., 0.])
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() < 1:
        raise TypeError("logits must be a floating-point tensor of shape (..., V)")
    _check_sampling(temperature, top_k, top_p)
    logits = logits.float()
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)  # (..., V)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)  # (..., V)
    if top_p is not None and top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)  # (..., V) each
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass of the better tokens
        drop_sorted = mass_before >= top_p  # already enough mass without this token
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)  # back to vocabulary order
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


@torch.no_grad()
def generate(
    model: GPT,
    ids: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    *,
    top_p: float | None = None,
    greedy: bool = False,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Extend ``ids`` (B, T) -- or one sequence (T,) -- by ``max_new_tokens`` sampled tokens.

    Each step feeds the last ``block_size`` tokens (the model's context; older
    ones are cropped), takes the logits at the last position and draws the
    next token from :func:`next_token_probs` with ``torch.multinomial``.
    ``greedy=True`` or ``temperature=0`` takes the argmax instead. Pass a
    seeded ``generator`` (on the model's device) to repeat a draw. Runs in
    eval mode and restores the model's mode. Returns (B, T + max_new_tokens)
    ids (or (T + max_new_tokens,) for a 1-D prompt).

    >>> _ = torch.manual_seed(0)
    >>> model = GPT(GPTConfig.preset("gpt-nano", vocab_size=10, block_size=4))
    >>> out = generate(model, torch.tensor([[1, 2, 3]]), max_new_tokens=5, top_k=3)
    >>> out.shape, out[0, :3].tolist()           # the prompt, then 5 new tokens
    (torch.Size([1, 8]), [1, 2, 3])
    >>> g = lambda: torch.Generator().manual_seed(7)
    >>> torch.equal(generate(model, out, 5, generator=g()), generate(model, out, 5, generator=g()))
    True
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a GPT, got {type(model).__name__}")
    ids = token_ids("ids", ids)
    squeeze = ids.dim() == 1
    if squeeze:
        ids = ids[None, :]  # (T,) -> (1, T)
    if ids.dim() != 2 or ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(
            f"ids must have shape (B, T) or (T,) with at least one token, got {tuple(ids.shape)}"
        )
    int_at_least("max_new_tokens", max_new_tokens, 0)
    _check_sampling(temperature, top_k, top_p)
    token_ids("ids", ids, model.config.vocab_size)
    greedy = greedy or temperature == 0
    device = next(model.parameters()).device
    ids = ids.to(device)
    block_size = model.config.block_size
    was_training = model.training
    model.eval()
    try:
        for _ in range(max_new_tokens):
            context = ids[:, -block_size:]  # (B, <= block_size): the model sees no further back
            logits, _ = model(context)  # (B, T', V)
            last = logits[:, -1, :]  # (B, V): scores for the token after the context
            if greedy:
                nxt = last.argmax(dim=-1, keepdim=True)  # (B, 1)
            else:
                probs = next_token_probs(last, temperature, top_k, top_p)  # (B, V)
                nxt = torch.multinomial(probs, num_samples=1, generator=generator)  # (B, 1)
            ids = torch.cat([ids, nxt], dim=1)  # (B, T + 1)
    finally:
        model.train(was_training)
    return ids[0] if squeeze else ids
