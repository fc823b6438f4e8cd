"""Helpers that parts of several chapters share: optional libraries, random inputs, blocks beside a reference.

A chapter's own helpers live in its ``_common`` module; what more than one
chapter needs lives here, so that no chapter package imports another's
private module.

>>> x = randn_strided((2, 3, 4), torch.Generator().manual_seed(0), swap=(0, 1))
>>> tuple(x.shape), x.is_contiguous()
((2, 3, 4), False)
>>> available(("math.sqrt", "surely_not_installed_here.f"))
('math.sqrt',)
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import torch

from ._compare import close, require_tensor
from ._core import build_loaded, run_method, run_student
from .errors import CheckFailed
from .steps import require_shape

ModuleT = TypeVar("ModuleT", bound=torch.nn.Module)

# ------------------------------------------------------------------ optional libraries


def available(paths: Sequence[str]) -> tuple[str, ...]:
    """The dotted names in ``paths`` whose top-level package is installed (optional libraries)."""
    return tuple(p for p in paths if importlib.util.find_spec(p.split(".", 1)[0]) is not None)


# ------------------------------------------------------------------ random inputs and weights


def randn_strided(shape: tuple[int, ...], g: torch.Generator, dtype: torch.dtype = torch.float32,
                  swap: tuple[int, int] | None = None) -> torch.Tensor:
    """Standard normal values of ``shape``; with ``swap=(a, b)``, drawn with axes a and b swapped and
    transposed back, so that the result is a non-contiguous view (as after a transpose in the student's caller)."""
    if swap is None:
        return torch.randn(*shape, generator=g, dtype=dtype)
    a, b = swap
    drawn = list(shape)
    drawn[a], drawn[b] = drawn[b], drawn[a]
    return torch.randn(*drawn, generator=g, dtype=dtype).transpose(a, b)


def random_padding(g: torch.Generator, B: int, L: int) -> torch.Tensor:
    """A (B, 1, L) padding mask, True at the real positions; the first sequence has padding."""
    lengths = torch.randint(1, L + 1, (B,), generator=g)
    lengths[0] = max(1, L - 2)
    return (torch.arange(L) < lengths[:, None]).unsqueeze(1)  # (B, 1, L)


def randomize(module: ModuleT, seed: int) -> ModuleT:
    """Give every parameter a seeded random value (LayerNorm gains near 1, small biases)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if p.dim() == 2:
                p.copy_(noise / math.sqrt(p.shape[1]))
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.3 * noise)
            else:
                p.copy_(0.2 * noise)
    return module


# ------------------------------------------------------------------ encoder and decoder blocks

FORBIDDEN_BLOCKS = (
    "attnbook.transformer.EncoderBlock",
    "attnbook.transformer.DecoderBlock",
    "attnbook.transformer.Transformer",
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.TransformerEncoder",
    "torch.nn.TransformerDecoder",
    "torch.nn.Transformer",
)
MHA_PROBLEM = ("{name} does not match the reference MultiHeadAttention: fix Part 6 first (or use "
               "attnbook.attention.MultiHeadAttention in the block)")


def build_beside(cls: object, reference: ModuleT, sizes: tuple, seed: int, dtype: torch.dtype,
                 what: str) -> tuple[torch.nn.Module, ModuleT]:
    """The student's ``cls(*sizes)`` and ``reference`` (randomised by ``seed``), same weights, ``dtype``, eval mode."""
    names = {2: "(d_model, num_heads)", 3: "(d_model, num_heads, d_ff)"}
    ref = randomize(reference, seed).to(dtype).eval()
    return build_loaded(cls, sizes, ref, dtype, what, names.get(len(sizes), "")), ref


def block_case(seed: int, B: int, T: int, S: int | None, d_model: int, nh: int, d_ff: int,
               tgt_mask: bool = False, memory_mask: bool = False, dtype: torch.dtype = torch.float32,
               swap: bool = False) -> Callable[[], tuple]:
    """Encoder (S is None): x (B, T, C) and a mask. Decoder: x (B, T, C), memory (B, S, C), two masks.

    ``swap``: x and memory are non-contiguous (B, L, C) views of (L, B, C) tensors.
    """

    def make():
        g = torch.Generator().manual_seed(seed)
        axes = (0, 1) if swap else None
        x = randn_strided((B, T, d_model), g, dtype, axes)
        memory = None if S is None else randn_strided((B, S, d_model), g, dtype, axes)
        m1 = random_padding(g, B, T) if tgt_mask else None
        m2 = random_padding(g, B, S) if memory_mask and S is not None else None
        return seed, (d_model, nh, d_ff), x, memory, m1, m2

    return make


def run_block(module: torch.nn.Module, ref: Callable, x: torch.Tensor, extra: tuple, kwargs: dict, what: str,
              **ref_kwargs: object) -> tuple[torch.Tensor, torch.Tensor]:
    """The student's block on copies of ``x`` and ``extra`` (and ``kwargs``), checked against the reference's output
    shape and dtype; returns ``(out, expected)``."""
    with torch.no_grad():
        result = run_student(module, x.clone(), *(t.clone() for t in extra), what=f"{what}.forward",
                             **{k: v.clone() for k, v in kwargs.items() if v is not None})
        expected = ref(x, *extra, *kwargs.values(), **ref_kwargs)
    if isinstance(result, tuple):
        raise CheckFailed(f"{what} should return only the output tensor (B, T, d_model), not a tuple")
    out = require_tensor(result, f"the output of {what}")
    require_shape(out, expected.shape, f"the output of {what} should have shape (B, T, d_model), the shape of x")
    if out.dtype != expected.dtype:
        raise CheckFailed(f"for {expected.dtype} inputs the output should be {expected.dtype} too")
    return out, expected


def sublayer_problem(module: torch.nn.Module, checks: Iterable[tuple]) -> str | None:
    """The message of the first ``(name, reference sublayer, args, kwargs, message)`` in ``checks`` whose student
    submodule ``name`` runs and disagrees with the reference; None if none does."""
    for name, ref_sub, args, kwargs, message in checks:
        try:
            with torch.no_grad():
                mine = run_method(module, name, *args, what=name, **kwargs)
                theirs = ref_sub(*args, **kwargs)
        except CheckFailed:
            continue  # no such submodule, or one that does not run alone: judge the block as a whole
        mine, theirs = (r[0] if isinstance(r, tuple) else r for r in (mine, theirs))
        if not (type(mine) is torch.Tensor and isinstance(theirs, torch.Tensor) and close(mine, theirs)):
            return message
    return None
