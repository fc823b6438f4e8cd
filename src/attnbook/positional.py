"""Positions: telling an order-blind attention layer where each token sits.

Self-attention is permutation-equivariant, so a Transformer adds a position
vector to every token embedding. Two ways are here:

* **sinusoidal** (fixed): ``PE[pos, 2i] = sin(pos / 10000^(2i/d_model))`` and
  ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))``; every entry lies in [-1, 1],
  every position gets its own row, it is defined for any length, and
  ``PE[pos + k]`` is a fixed rotation of ``PE[pos]`` (:func:`relative_shift_matrix`), which makes
  relative offsets easy for attention to read;
* **learned**: a trainable ``(max_len, d_model)`` table, as in BERT and GPT; it
  can fit whatever the task needs but knows no position beyond ``max_len``.

The sin/cos pairs are *interleaved* (columns ``2i`` and ``2i + 1`` share one
frequency), as in the paper's formula. ``d_model`` must be even: an odd width
would leave one sine without its cosine partner, and the shift property would
no longer hold, so odd widths are rejected with a ``ValueError``.

Shape legend: ``B`` batch, ``T`` sequence length, ``d_model`` width. Positions ``pos``
count from 0, as the rows of a table do.

References: Vaswani et al., *Attention Is All You Need* (2017), section 3.5;
Devlin et al., *BERT* (2019), section 3 (learned position embeddings).
"""

from __future__ import annotations

import torch
from torch import nn

from attnbook._checks import float_tensor, positive_int

__all__ = [
    "sinusoidal_positions",
    "relative_shift_matrix",
    "SinusoidalPositions",
    "LearnedPositions",
]


def _check_even_width(d_model: object) -> int:
    d_model = positive_int("d_model", d_model)
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even for sinusoidal positions (sin/cos pairs), got {d_model}")
    return d_model


def _frequencies(d_model: int, base: float) -> torch.Tensor:
    """(d_model / 2,) angular frequencies ``1 / base^(2i / d_model)`` in float64."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,): 0, 2, 4, ...
    return base ** (-two_i / d_model)


def sinusoidal_positions(
    T: int,
    d_model: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The (T, d_model) sinusoidal table: ``PE[pos, 2i] = sin(pos w_i)``, ``PE[pos, 2i+1] = cos(pos w_i)``.

    ``w_i = 1 / base^(2i / d_model)``: the first pair turns fastest (like the
    lowest bit of a binary counter), the last pair slowest. Computed in float64,
    then cast to ``dtype``. ``d_model`` must be even.

    >>> sinusoidal_positions(3, 4)  # w = (1, 1/100)
    tensor([[ 0.0000,  1.0000,  0.0000,  1.0000],
            [ 0.8415,  0.5403,  0.0100,  0.9999],
            [ 0.9093, -0.4161,  0.0200,  0.9998]])
    """
    positive_int("T", T)
    _check_even_width(d_model)
    t = torch.arange(T, dtype=torch.float64)  # (T,)
    angles = t[:, None] * _frequencies(d_model, base)[None, :]  # (T, d_model/2)
    pe = torch.stack([angles.sin(), angles.cos()], dim=-1)  # (T, d_model/2, 2)
    pe = pe.reshape(T, d_model)  # (T, d_model): sin, cos, sin, cos, ...
    return pe.to(dtype).to(device)  # cast first: some devices (MPS) have no float64


def relative_shift_matrix(k: int, d_model: int, *, base: float = 10000.0, dtype: torch.dtype = torch.float32,
                          device: torch.device | str | None = None) -> torch.Tensor:
    """The (d_model, d_model) matrix ``M_k`` with ``PE[pos + k] = M_k @ PE[pos]`` for *every* pos.

    By the angle-sum formulas each (sin, cos) pair of frequency ``w`` turns by
    the angle ``k w``::

        [sin(w(pos+k))]   [ cos(kw)  sin(kw)] [sin(w pos)]
        [cos(w(pos+k))] = [-sin(kw)  cos(kw)] [cos(w pos)]

    so ``M_k`` is block-diagonal with these 2 x 2 rotations; it depends on the
    offset ``k`` only, never on ``pos``. For a (T, d_model) table ``PE`` (rows are
    positions) this reads ``PE[k:] == PE[:-k] @ M_k.T``.

    >>> PE = sinusoidal_positions(10, 8, dtype=torch.float64)
    >>> M = relative_shift_matrix(3, 8, dtype=torch.float64)
    >>> torch.allclose(PE[3:], PE[:-3] @ M.T)
    True
    >>> relative_shift_matrix(1, 2)  # one pair, w = 1: a rotation by 1 radian
    tensor([[ 0.5403,  0.8415],
            [-0.8415,  0.5403]])
    """
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"k must be an int offset, got {type(k).__name__}")
    _check_even_width(d_model)
    theta = k * _frequencies(d_model, base)  # (d_model/2,)
    c, s = theta.cos(), theta.sin()
    blocks = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # (d_model/2, 2, 2)
    return torch.block_diag(*blocks).to(dtype).to(device)  # (d_model, d_model)


class SinusoidalPositions(nn.Module):
    """Adds the fixed :func:`sinusoidal_positions` table to (B, T, d_model) embeddings.

    The first ``max_len`` rows are kept in a (non-trainable, non-saved) buffer;
    longer inputs get a table computed on the fly, since the formula is defined
    for any position.

    >>> pos = SinusoidalPositions(16, 4)
    >>> pos(torch.zeros(2, 3, 4))[0]  # zeros + PE[:3]
    tensor([[ 0.0000,  1.0000,  0.0000,  1.0000],
            [ 0.8415,  0.5403,  0.0100,  0.9999],
            [ 0.9093, -0.4161,  0.0200,  0.9998]])
    """

    pe: torch.Tensor

    def __init__(self, max_len: int, d_model: int, *, base: float = 10000.0) -> None:
        super().__init__()
        self.max_len = positive_int("max_len", max_len)
        self.d_model = _check_even_width(d_model)
        self.base = base
        # persistent=False: the table is a formula, so it stays out of state_dict.
        self.register_buffer("pe", sinusoidal_positions(max_len, d_model, base=base), persistent=False)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T = float_tensor("x", x, (None, None, self.d_model), f"(B, T, d_model={self.d_model})").shape[1]
        if T <= self.max_len:
            pe = self.pe[:T]  # (T, d_model)
        else:
            pe = sinusoidal_positions(T, self.d_model, base=self.base, device=x.device)
        return x + pe.to(x.dtype)  # (B, T, d_model) + (T, d_model) broadcasts over B


class LearnedPositions(nn.Module):
    """Adds a trainable (max_len, d_model) position table to (B, T, d_model) embeddings.

    What it adds over :class:`SinusoidalPositions`: the vectors are learned, so
    they fit the task; what it loses: inputs longer than ``max_len`` raise a
    ``ValueError``. The table starts as ``N(0, init_std^2)``; the default 1.0
    puts it on the scale of sqrt(d_model)-scaled token embeddings.

    >>> pos = LearnedPositions(max_len=10, d_model=4)
    >>> pos(torch.zeros(2, 3, 4)).shape
    torch.Size([2, 3, 4])
    >>> torch.equal(pos(torch.zeros(1, 3, 4))[0], pos.weight[:3])
    True
    """

    def __init__(self, max_len: int, d_model: int, *, init_std: float = 1.0) -> None:
        super().__init__()
        self.max_len = positive_int("max_len", max_len)
        self.d_model = positive_int("d_model", d_model)
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * init_std)  # (max_len, d_model)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T = float_tensor("x", x, (None, None, self.d_model), f"(B, T, d_model={self.d_model})").shape[1]
        if T > self.max_len:
            raise ValueError(
                f"sequence length T={T} exceeds max_len={self.max_len} of the learned position "
                "table: learned positions know no position beyond max_len"
            )
        return x + self.weight[:T]  # (B, T, d_model) + (T, d_model) broadcasts over B
