"""Checks for chapter 2's exercises (``solutions/02-transformer``).

Each ``check_*`` compares the student's object with a private copy of the
reference in :mod:`attnbook.attention`, :mod:`attnbook.positional` or
:mod:`attnbook.transformer` and explains a failure in words. Called without
``points`` it runs the visible cases and raises on the first failure; with
``points`` it runs every case and returns the points earned.

The parts, in the notebook's order: scaled dot-product attention (without and
with masks), the two masks, sinusoidal positions, multi-head attention, the
encoder block, the decoder block and greedy decoding. A wrong answer is
compared with the mistakes students make most (computed from the reference's
own pieces, for example the block with the LayerNorm before the sublayer
instead of after it), so that the message can name the mistake.

Modules are compared by parameter name: the checker builds the student's
class and the reference with the same sizes, requires the same parameter names
and shapes, copies the reference's (random) parameters into the student's
module and compares the outputs in eval mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .engine import Case, score_cases
from ._core import (
    CheckFailed,
    build_module,
    close,
    fresh_module,
    load_reference_parameters,
    require_tensor,
    run_student,
)

_REF = fresh_module("attnbook.attention")
_POS = fresh_module("attnbook.positional")
_TR = fresh_module("attnbook.transformer")
# The copy of attnbook.transformer imported its building blocks from the public modules, which a
# notebook could have patched before the checker was imported: point it at the private copies.
_TR.MultiHeadAttention, _TR.padding_mask = _REF.MultiHeadAttention, _REF.padding_mask
_TR.SinusoidalPositions, _TR.LearnedPositions = _POS.SinusoidalPositions, _POS.LearnedPositions
_FORBIDDEN_ATTENTION = (
    "attnbook.attention.scaled_dot_product_attention",
    "attnbook.attention.fused_attention",
    "torch.nn.functional.scaled_dot_product_attention",
)


# ------------------------------------------------------------------ inputs


def _qkv(seed: int, lead: tuple[int, ...], T: int, S: int, d_k: int, d_v: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, T, d_k, generator=g, dtype=dtype)  # (..., T, d_k)
    k = torch.randn(*lead, S, d_k, generator=g, dtype=dtype)  # (..., S, d_k)
    v = torch.randn(*lead, S, d_v, generator=g, dtype=dtype)  # (..., S, d_v)
    return q, k, v, g


def _plain(seed, lead, T, S, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, _ = _qkv(seed, lead, T, S, d_k, d_v, dtype)
        return q, k, v, None

    return make


def _causal(seed, lead, T, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, _ = _qkv(seed, lead, T, T, d_k, d_v, dtype)
        return q, k, v, torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)

    return make


def _padded(seed, B, T, S, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, g = _qkv(seed, (B,), T, S, d_k, d_v, dtype)
        lengths = torch.randint(1, S + 1, (B,), generator=g)  # at least one real key
        mask = (torch.arange(S) < lengths[:, None]).unsqueeze(1)  # (B, 1, S)
        return q, k, v, mask

    return make


def _random_mask(seed, B, T, S, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, g = _qkv(seed, (B,), T, S, d_k, d_v, dtype)
        mask = torch.rand(B, T, S, generator=g) < 0.6  # (B, T, S)
        mask[..., 0] |= ~mask.any(-1)  # every query keeps at least one key
        return q, k, v, mask

    return make


_SDPA_VISIBLE = [Case("shapes and values", _plain(0, (2,), 3, 4, 8, 5))]
_SDPA_HIDDEN = [
    Case("batch of one, odd lengths", _plain(101, (1,), 7, 5, 16, 3)),
    Case("one query", _plain(102, (3,), 1, 6, 4, 2)),
    Case("float64 inputs", _plain(103, (2,), 5, 4, 6, 3, torch.float64)),
    Case("extra leading axis (heads)", _plain(104, (2, 3), 4, 4, 8, 8)),
    Case("large d_k", _plain(105, (2,), 4, 6, 256, 4), weight=2.0),
]
_MASK_VISIBLE = [Case("causal mask", _causal(1, (2,), 4, 8, 3))]
_MASK_HIDDEN = [
    Case("causal mask, heads", _causal(201, (2, 2), 5, 8, 4)),
    Case("causal mask, float64", _causal(202, (1,), 6, 16, 2, torch.float64)),
    Case("padding mask (B, 1, S)", _padded(203, 4, 3, 7, 8, 5), weight=2.0),
    Case("arbitrary mask (B, T, S)", _random_mask(204, 2, 5, 6, 32, 3), weight=2.0),
]


# --------------------------------------------------------------- diagnosis


def _masked_softmax(scores, mask, *, dim=-1, fill=float("-inf"), inverted=False):
    if mask is not None:
        keep = ~mask if inverted else mask
        scores = scores.masked_fill(~keep, fill)
    return torch.softmax(scores, dim=dim).nan_to_num(0.0)


def _diagnose_weights(w: torch.Tensor, q, k, v, mask) -> str:
    """Name the likely mistake behind wrong attention weights, in words."""
    q64, k64 = q.double(), k.double()
    raw = q64 @ k64.transpose(-2, -1)  # (..., T, S)
    d_k = q.shape[-1]
    scaled = raw / math.sqrt(d_k)
    known = [
        ("the scores were not divided by sqrt(d_k): the softmax saturates as d_k grows",
         _masked_softmax(raw, mask)),
        ("the scores were divided by d_k instead of sqrt(d_k)", _masked_softmax(raw / d_k, mask)),
        ("the softmax runs over the wrong axis: each query's row of weights (the last axis, over keys) "
         "must sum to 1", _masked_softmax(scaled, mask, dim=-2)),
    ]
    if mask is not None:
        known += [
            ("the mask is applied the wrong way round: True means 'may attend', so it is the positions "
             "where the mask is False that get -inf", _masked_softmax(scaled, mask, inverted=True)),
            ("the mask is ignored: positions where it is False must get zero weight",
             _masked_softmax(scaled, None)),
            ("masked scores were set to 0 instead of -inf, so masked positions still get weight",
             _masked_softmax(scaled, mask, fill=0.0)),
            ("the mask was applied after the softmax, so the rows no longer sum to 1; "
             "mask the scores before the softmax", _masked_softmax(scaled, None) * mask),
        ]
    student = w.detach().double().nan_to_num(0.0)
    for message, variant in known:
        if close(student, variant, torch.float32):
            return message
    if torch.isnan(w).any():
        return "the attention weights contain NaN"
    if mask is not None and (w.detach().abs() * ~mask).max() > 1e-6:
        return "positions where the mask is False get non-zero weight"
    if not close(w.detach().double().sum(-1), torch.ones(w.shape[:-1], dtype=torch.float64), torch.float32):
        return "rows of the attention weights do not sum to 1"
    return "the attention weights differ from softmax(Q Kᵀ / sqrt(d_k))"


def _check_sdpa_case(fn: Callable) -> Callable:
    def check(q, k, v, mask):
        inputs = [x.clone() for x in (q, k, v)]
        args = (q, k, v) if mask is None else (q, k, v, mask)
        result = run_student(fn, *args, forbidden=_FORBIDDEN_ATTENTION, what="scaled_dot_product_attention")
        if not isinstance(result, tuple) or len(result) != 2:
            raise CheckFailed("scaled_dot_product_attention should return a pair (out, weights)")
        out = require_tensor(result[0], "out (the first value returned)")
        w = require_tensor(result[1], "weights (the second value returned)")
        if any(not torch.equal(a, b) for a, b in zip(inputs, (q, k, v))):
            raise CheckFailed("the function changed q, k or v in place; compute on new tensors instead")
        expected_out, expected_w = _REF.scaled_dot_product_attention(q, k, v, mask)
        if w.shape != expected_w.shape:
            raise CheckFailed("weights should have shape (..., T, S): one row per query, one column per key")
        if out.shape != expected_out.shape:
            raise CheckFailed("out should have shape (..., T, d_v): one row per query, as wide as the values")
        if w.dtype != q.dtype or out.dtype != q.dtype:
            raise CheckFailed(f"for {q.dtype} inputs the results should be {q.dtype} too")
        if not close(w, expected_w):
            raise CheckFailed(_diagnose_weights(w, q, k, v, mask))
        if not close(out, expected_out):
            raise CheckFailed("the weights are right but out is not weights @ V")

    return check


# ------------------------------------------------------------------ checks


def check_scaled_dot_product_attention(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(q, k, v) -> (out, weights)`` without masks.

    Visible cases when ``points`` is None, every case (returning the points
    earned) otherwise.
    """
    cases = _SDPA_VISIBLE if points is None else _SDPA_VISIBLE + _SDPA_HIDDEN
    return score_cases(cases, _check_sdpa_case(fn), points)


def check_attention_masks(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(q, k, v, mask) -> (out, weights)`` with causal, padding and arbitrary masks."""
    cases = _MASK_VISIBLE if points is None else _MASK_VISIBLE + _MASK_HIDDEN
    return score_cases(cases, _check_sdpa_case(fn), points)


# =============================================================== masks (Part 3)

_FORBIDDEN_MASKS = ("attnbook.attention.causal_mask", "attnbook.attention.padding_mask")


def _ids(seed: int, B: int, S: int, pad_id: int, vocab: int = 9, lengths: tuple[int, ...] | None = None):
    """(B, S) token ids with no pad_id among the real tokens, padded after ``lengths``."""
    g = torch.Generator().manual_seed(seed)
    real = [t for t in range(vocab) if t != pad_id]
    ids = torch.tensor(real)[torch.randint(len(real), (B, S), generator=g)]  # (B, S)
    if lengths is None:
        lengths = tuple(torch.randint(1, S + 1, (B,), generator=g).tolist())
    for b, n in enumerate(lengths):
        ids[b, n:] = pad_id
    return ids


def _causal_case(T: int):
    return lambda: ("causal", T)


def _padding_case(seed: int, B: int, S: int, pad_id: int, lengths=None):
    return lambda: ("padding", _ids(seed, B, S, pad_id, lengths=lengths), pad_id)


_MASKS_VISIBLE = [
    Case("causal mask", _causal_case(4)),
    Case("padding mask", _padding_case(301, 2, 5, 0, lengths=(5, 3))),
]
_MASKS_HIDDEN = [
    Case("causal mask, one position", _causal_case(1)),
    Case("causal mask, odd length", _causal_case(7)),
    Case("padding mask, batch of one without padding", _padding_case(302, 1, 6, 0, lengths=(6,))),
    Case("padding mask, another padding id", _padding_case(303, 3, 7, 4, lengths=(7, 2, 5)), weight=2.0),
    Case("padding mask, odd length", _padding_case(304, 4, 9, 0)),
]


def _diagnose_causal(m: torch.Tensor, T: int) -> str:
    lower = torch.ones(T, T, dtype=torch.bool).tril()
    known = [
        ("the mask is the wrong way round: True means 'may attend', so the diagonal and the lower "
         "triangle (the past) are True and the positions after t are False", ~lower),
        ("the mask lets a position see the future: row t (a query) may attend to columns 0..t only; "
         "take the lower triangle (tril), not the upper one", lower.T),
        ("the mask is off by one: position t can see position t + 1; the diagonal is the last True "
         "entry of each row", torch.ones(T, T, dtype=torch.bool).tril(1)),
        ("the mask is off by one: position t cannot see itself; the diagonal must be True",
         torch.ones(T, T, dtype=torch.bool).tril(-1)),
    ]
    for message, variant in known:
        if torch.equal(m, variant):
            return message
    if (m & ~lower).any():
        return "the mask lets a position see the future: entries above the diagonal must be False"
    return "the mask hides part of the past: every entry on or below the diagonal must be True"


def _check_mask_case(causal_fn: Callable, padding_fn: Callable) -> Callable:
    def check(kind, *args):
        if kind == "causal":
            (T,) = args
            m = require_tensor(
                run_student(causal_fn, T, forbidden=_FORBIDDEN_MASKS, what="causal_mask"), "causal_mask(T)"
            )
            if m.dtype != torch.bool:
                raise CheckFailed(f"causal_mask should return a boolean tensor (True = may attend), got {m.dtype}")
            if tuple(m.shape) != (T, T):
                raise CheckFailed("causal_mask(T) should have shape (T, T): one row per query, one column per key")
            if not torch.equal(m, _REF.causal_mask(T)):
                raise CheckFailed(_diagnose_causal(m, T))
            return
        ids, pad_id = args
        before = ids.clone()
        m = require_tensor(
            run_student(padding_fn, ids, pad_id, forbidden=_FORBIDDEN_MASKS, what="padding_mask"),
            "padding_mask(ids, pad_id)",
        )
        if not torch.equal(ids, before):
            raise CheckFailed("padding_mask changed ids in place; build a new tensor instead")
        if m.dtype != torch.bool:
            raise CheckFailed(f"padding_mask should return a boolean tensor (True = may attend), got {m.dtype}")
        B, S = ids.shape
        if tuple(m.shape) != (B, 1, S):
            if tuple(m.shape) == (B, S):
                hint = "insert the query axis in the middle (unsqueeze(1)) so that it broadcasts over the queries"
            elif tuple(m.shape) == (B, S, 1):
                hint = "the size-1 axis goes in the middle: (B, S, 1) would hide queries instead of keys"
            else:
                hint = "one row per sequence, a size-1 axis that broadcasts over the queries, one column per key"
            raise CheckFailed(f"padding_mask should have shape (B, 1, S): {hint}")
        expected = _REF.padding_mask(ids, pad_id)  # (B, 1, S)
        if torch.equal(m, expected):
            return
        if torch.equal(m, ~expected):
            raise CheckFailed(
                "the padding mask is the wrong way round: True marks the real tokens (may attend) "
                "and False the padding"
            )
        if pad_id != 0 and torch.equal(m, (ids != 0).unsqueeze(1)):
            raise CheckFailed("the mask looks for the id 0 instead of the pad_id argument")
        raise CheckFailed("padding_mask must be False exactly where ids == pad_id and True elsewhere")

    return check


def check_masks(causal_mask: Callable, padding_mask: Callable, points: float | None = None) -> float | None:
    """Check ``causal_mask(T)`` -> (T, T) and ``padding_mask(ids, pad_id)`` -> (B, 1, S), True = may attend."""
    cases = _MASKS_VISIBLE if points is None else _MASKS_VISIBLE + _MASKS_HIDDEN
    return score_cases(cases, _check_mask_case(causal_mask, padding_mask), points)


# ============================================================ positions (Part 4)

_FORBIDDEN_POSITIONS = (
    "attnbook.positional.sinusoidal_positions",
    "attnbook.positional.relative_shift_matrix",
    "attnbook.positional.SinusoidalPositions",
)

_PE_VISIBLE = [Case("a small table", lambda: (4, 6))]
_PE_HIDDEN = [
    Case("one position, one pair", lambda: (1, 2)),
    Case("odd length", lambda: (9, 10)),
    Case("long table", lambda: (60, 32), weight=2.0),
    Case("wide table", lambda: (3, 128)),
]


def _pe_variant(T: int, d_model: int, *, layout="interleaved", odd_exponent="2i", exponent="2i/d", start=0):
    """Sinusoidal tables as students get them wrong, in float64 (the default arguments: right)."""
    t = torch.arange(start, start + T, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,)
    if exponent == "2i/d":
        w = 10000.0 ** (-two_i / d_model)
    elif exponent == "i/d":  # the pair index i where 2i belongs
        w = 10000.0 ** (-(two_i / 2) / d_model)
    else:  # "times": t * 10000^(2i/d) instead of t / 10000^(2i/d)
        w = 10000.0 ** (two_i / d_model)
    w_odd = 10000.0 ** (-(two_i + 1) / d_model) if odd_exponent == "2i+1" else w
    sin, cos = (t * w).sin(), (t * w_odd).cos()  # (T, d/2) each
    if layout == "halves":
        return torch.cat([sin, cos], dim=1)  # (T, d): sin, ..., sin, cos, ..., cos
    pe = torch.empty(T, d_model, dtype=torch.float64)
    first, second = (cos, sin) if layout == "swapped" else (sin, cos)
    pe[:, 0::2], pe[:, 1::2] = first, second
    return pe


def _diagnose_pe(pe: torch.Tensor, T: int, d_model: int) -> str:
    known = [
        ("sin and cos are swapped: column 2i holds sin(t w_i) and column 2i + 1 holds cos(t w_i)",
         dict(layout="swapped")),
        ("the sines and cosines must be interleaved (sin, cos, sin, cos, ...): columns 2i and 2i + 1 "
         "share one frequency, not all sines first and then all cosines", dict(layout="halves")),
        ("the cosine in column 2i + 1 must use the same frequency as the sine in column 2i, "
         "w_i = 1 / 10000^(2i / d_model), not an exponent of its own", dict(odd_exponent="2i+1")),
        ("the frequencies are wrong: pair i (columns 2i and 2i + 1) turns at w_i = 1 / 10000^(2i / d_model); "
         "the exponent uses 2i, the column index of the sine, not i", dict(exponent="i/d")),
        ("the frequencies are wrong: the angle is t / 10000^(2i / d_model), so the position is divided "
         "by the power of 10000, not multiplied", dict(exponent="times")),
        ("positions start at t = 0: the first row is sin(0) = 0, cos(0) = 1, ...", dict(start=1)),
    ]
    student = pe.detach().to(torch.float64)
    for message, kwargs in known:
        if close(student, _pe_variant(T, d_model, **kwargs), torch.float32):
            return message
    if torch.isnan(student).any():
        return "the table contains NaN"
    if student.abs().max() > 1 + 1e-6:
        return "the table holds values outside [-1, 1], so they are not sines and cosines of the angles"
    return "the table differs from P[t, 2i] = sin(t / 10000^(2i/d_model)), P[t, 2i+1] = cos(t / 10000^(2i/d_model))"


def _check_pe_case(fn: Callable) -> Callable:
    def check(T, d_model):
        pe = require_tensor(
            run_student(fn, T, d_model, forbidden=_FORBIDDEN_POSITIONS, what="sinusoidal_positions"),
            "sinusoidal_positions(T, d_model)",
        )
        if not pe.is_floating_point():
            raise CheckFailed(f"sinusoidal_positions should return a floating-point tensor, got {pe.dtype}")
        if tuple(pe.shape) != (T, d_model):
            raise CheckFailed("sinusoidal_positions(T, d_model) should have shape (T, d_model): one row per position")
        expected = _POS.sinusoidal_positions(T, d_model, dtype=torch.float64)
        if not close(pe, expected, torch.float32):
            raise CheckFailed(_diagnose_pe(pe, T, d_model))

    return check


def check_sinusoidal_positions(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(T, d_model)`` -> the (T, d_model) table of interleaved sines and cosines."""
    cases = _PE_VISIBLE if points is None else _PE_VISIBLE + _PE_HIDDEN
    return score_cases(cases, _check_pe_case(fn), points)


# ================================================= multi-head attention (Part 5)

_FORBIDDEN_BLOCKS = (
    "attnbook.transformer.EncoderBlock",
    "attnbook.transformer.DecoderBlock",
    "attnbook.transformer.Transformer",
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.TransformerEncoder",
    "torch.nn.TransformerDecoder",
    "torch.nn.Transformer",
)
_FORBIDDEN_MHA = (
    "attnbook.attention.MultiHeadAttention",
    "torch.nn.MultiheadAttention",
    "torch.nn.functional.multi_head_attention_forward",
    *_FORBIDDEN_BLOCKS,
)


def _randomize(module: torch.nn.Module, seed: int) -> torch.nn.Module:
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


def _copies(tensors):
    return tuple(t.clone() for t in tensors)


def _mha_case(seed, B, T, S, d_model, nh, mask="none", dtype=torch.float32):
    """Arguments for the MHA check: sizes, inputs (query, key, value or None) and a mask."""

    def make():
        g = torch.Generator().manual_seed(seed)
        query = torch.randn(B, T, d_model, generator=g, dtype=dtype)  # (B, T, C)
        if S is None:
            key = value = None
            L = T
        else:
            key = torch.randn(B, S, d_model, generator=g, dtype=dtype)  # (B, S, C)
            value = torch.randn(B, S, d_model, generator=g, dtype=dtype)
            L = S
        if mask == "causal":
            m = torch.ones(T, L, dtype=torch.bool).tril()  # (T, T)
        elif mask == "padding":
            lengths = torch.randint(1, L + 1, (B,), generator=g)
            lengths[0] = max(1, L - 2)  # at least one sequence has padding
            m = (torch.arange(L) < lengths[:, None]).unsqueeze(1)  # (B, 1, S)
        elif mask == "arbitrary":
            m = torch.rand(B, T, L, generator=g) < 0.6  # (B, T, S)
            m[..., 0] |= ~m.any(-1)  # every query keeps a key
        else:
            m = None
        return seed, d_model, nh, query, key, value, m

    return make


_MHA_VISIBLE = [
    Case("self-attention", _mha_case(401, 2, 5, None, 8, 2)),
    Case("cross-attention with a padding mask", _mha_case(402, 2, 3, 6, 8, 2, "padding")),
]
_MHA_HIDDEN = [
    Case("causal mask (T, T)", _mha_case(403, 2, 6, None, 12, 3, "causal")),
    Case("padding mask, batch size differs from heads", _mha_case(404, 3, 4, 7, 8, 2, "padding"), weight=2.0),
    Case("arbitrary mask (B, T, S)", _mha_case(405, 2, 5, 4, 16, 4, "arbitrary")),
    Case("batch of one, odd lengths", _mha_case(406, 1, 7, 3, 12, 2)),
    Case("one head", _mha_case(407, 2, 3, None, 6, 1)),
    Case("one query", _mha_case(408, 3, 1, 5, 8, 4)),
    Case("float64", _mha_case(409, 2, 5, 5, 16, 4, "padding", torch.float64), weight=2.0),
]


def _mha_variant(ref, query, key, value, mask, *, split=True, merge=True, scale="hs", out_proj=True,
                 head_axis=True, use_mask=True):
    """Multi-head attention computed by hand from ``ref``'s weights, with a mistake switched on."""
    B, T, C = query.shape
    S, nh = key.shape[1], ref.num_heads
    hs = C // nh

    def lin(layer, x):
        return x @ layer.weight.T + layer.bias

    def heads(x, L):
        if split:
            return x.view(B, L, nh, hs).transpose(1, 2)  # (B, L, C) -> (B, nh, L, hs)
        return x.reshape(B, nh, L, hs)  # the mistake: rows of different positions end up in one head

    q, k, v = heads(lin(ref.q_proj, query), T), heads(lin(ref.k_proj, key), S), heads(lin(ref.v_proj, value), S)
    scores = q @ k.transpose(-2, -1) / math.sqrt(hs if scale == "hs" else C)  # (B, nh, T, S)
    if mask is not None and use_mask:
        m = mask.unsqueeze(1) if mask.dim() == 3 and head_axis else mask
        scores = scores.masked_fill(~m, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    out = weights @ v  # (B, nh, T, hs)
    out = out.transpose(1, 2).reshape(B, T, C) if merge else out.reshape(B, T, C)
    return (lin(ref.out_proj, out) if out_proj else out), weights


def _diagnose_mha(out, weights, ref, query, key, value, mask) -> str:
    key = query if key is None else key
    value = query if value is None else value
    known = [
        ("the heads are split along the wrong axis: reshape (B, T, d_model) to (B, T, h, hs) and then "
         "transpose to (B, h, T, hs); viewing it directly as (B, h, T, hs) mixes positions into heads",
         dict(split=False, merge=False)),
        ("the heads are split along the wrong axis: reshape (B, T, d_model) to (B, T, h, hs) and then "
         "transpose to (B, h, T, hs); viewing it directly as (B, h, T, hs) mixes positions into heads",
         dict(split=False)),
        ("the heads are put back together along the wrong axis: transpose (B, h, T, hs) to (B, T, h, hs) "
         "before reshaping to (B, T, d_model)", dict(merge=False)),
        ("each head's scores must be divided by sqrt(d_k) where d_k = hs = d_model / h is the head's own "
         "key width, not by sqrt(d_model)", dict(scale="C")),
        ("the concatenated heads must go through the output projection out_proj (W^O)", dict(out_proj=False)),
        ("a 3-D mask, (B, T, S) or a (B, 1, S) padding mask, needs a head axis -- (B, 1, T, S) -- so that "
         "every head gets the same mask", dict(head_axis=False)),
        ("the mask is ignored: keys where it is False must get zero weight", dict(use_mask=False)),
    ]
    q64, k64, v64 = query.double(), key.double(), value.double()
    ref64 = ref.double()
    student = out.detach().double()
    with torch.no_grad():
        for message, kwargs in known:
            try:
                variant, _ = _mha_variant(ref64, q64, k64, v64, mask, **kwargs)
            except RuntimeError:  # the mistake does not even run on these shapes
                continue
            if close(student, variant, torch.float32):
                return message
        _, right_weights = _mha_variant(ref64, q64, k64, v64, mask)
    if close(weights.detach().double().nan_to_num(0.0), right_weights, torch.float32):
        return ("the attention weights are right but the output is not: multiply them with each head's "
                "values, concatenate the heads and apply out_proj")
    return ("the attention weights differ from the reference: check the projections q_proj, k_proj, v_proj "
            "(queries from query, keys from key, values from value), the head split and the scaling")


def _check_mha_case(cls: Callable) -> Callable:
    what = "MultiHeadAttention"

    def check(seed, d_model, nh, query, key, value, mask):
        dtype = query.dtype
        module = build_module(cls, d_model, nh, forbidden=_FORBIDDEN_MHA, what=f"{what}(d_model, num_heads)")
        torch.nn.Module.to(module, dtype)
        ref = _randomize(_REF.MultiHeadAttention(d_model, nh), seed).to(dtype).eval()
        load_reference_parameters(module, ref, what)
        torch.nn.Module.eval(module)
        args = (query,) if key is None else (query, key, value)
        kwargs = {} if mask is None else {"mask": mask.clone()}
        with torch.no_grad():  # the student gets copies: changing them in place changes nothing here
            result = run_student(module, *_copies(args), forbidden=_FORBIDDEN_MHA, what=f"{what}.forward", **kwargs)
            expected_out, expected_w = ref(*args, mask=mask, need_weights=True)
        if not isinstance(result, tuple) or len(result) != 2:
            raise CheckFailed(f"{what} should return a pair (out, weights)")
        out = require_tensor(result[0], "out (the first value returned)")
        weights = require_tensor(result[1], "weights (the second value returned)")
        if out.shape != expected_out.shape:
            raise CheckFailed("out should have shape (B, T, d_model): one vector per query")
        if weights.shape != expected_w.shape:
            raise CheckFailed("weights should have shape (B, h, T, S): one map of T x S weights per head")
        if out.dtype != dtype:
            raise CheckFailed(f"for {dtype} inputs the output should be {dtype} too")
        if not (close(out, expected_out) and close(weights, expected_w)):
            raise CheckFailed(_diagnose_mha(out, weights, ref, query, key, value, mask))

    return check


def check_multi_head_attention(cls: Callable, points: float | None = None) -> float | None:
    """Check the class ``cls(d_model, num_heads)``, whose ``forward(query, key=None, value=None, mask=None)``
    returns ``(out, weights)``, against ``attnbook.attention.MultiHeadAttention`` with copied weights."""
    cases = _MHA_VISIBLE if points is None else _MHA_VISIBLE + _MHA_HIDDEN
    return score_cases(cases, _check_mha_case(cls), points)


# ========================================================== blocks (Parts 6, 7)


def _sublayers(x, sublayers, norms, mode="post"):
    """Residual connections with LayerNorm around ``sublayers``, as the paper has them (``"post"``) or not."""
    for f, norm in zip(sublayers, norms):
        if mode == "post":
            x = norm(x + f(x))  # the paper: LN(x + Sublayer(x))
        elif mode == "pre":
            x = x + f(norm(x))  # GPT-2, ViT
        elif mode == "no_residual":
            x = norm(f(x))
        else:  # "norm_inside"
            x = x + norm(f(x))
    return x


_MODE_MESSAGES = {
    "pre": "looks like pre-norm, x + Sublayer(LayerNorm(x)): this block is post-norm as in the paper, "
           "x = LayerNorm(x + Sublayer(x)), the residual added before the norm",
    "no_residual": "the residual connection is missing: add the sublayer's input back, LayerNorm(x + Sublayer(x))",
    "norm_inside": "LayerNorm must normalise the sum x + Sublayer(x), not the sublayer's output alone",
}


def _attention_out(result):
    return result[0] if isinstance(result, tuple) else result


def _check_sublayer(module, name, ref_sub, args, kwargs, forbidden, label) -> str | None:
    """A message if the student's submodule ``name`` exists and disagrees with ``ref_sub``."""
    sub = getattr(module, name, None)
    if not isinstance(sub, torch.nn.Module):
        return None
    try:
        with torch.no_grad():
            mine = _attention_out(run_student(sub, *args, forbidden=forbidden, what=name, **kwargs))
            theirs = _attention_out(ref_sub(*args, **kwargs))
    except CheckFailed:
        return None
    if isinstance(mine, torch.Tensor) and close(mine, theirs):
        return None
    return label


def _block_case(seed, B, T, S, d_model, nh, d_ff, tgt_mask=False, memory_mask=False, dtype=torch.float32):
    """Encoder (S is None): x (B, T, C) and a mask. Decoder: x (B, T, C), memory (B, S, C), two masks."""

    def padding(g, L):
        lengths = torch.randint(1, L + 1, (B,), generator=g)
        lengths[0] = max(1, L - 2)  # at least one sequence has padding
        return (torch.arange(L) < lengths[:, None]).unsqueeze(1)  # (B, 1, L)

    def make():
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(B, T, d_model, generator=g, dtype=dtype)
        memory = None if S is None else torch.randn(B, S, d_model, generator=g, dtype=dtype)
        m1 = padding(g, T) if tgt_mask else None
        m2 = padding(g, S) if memory_mask else None
        return seed, (d_model, nh, d_ff), x, memory, m1, m2

    return make


_ENC_VISIBLE = [Case("no mask", _block_case(501, 2, 5, None, 8, 2, 16))]
_ENC_HIDDEN = [
    Case("padding mask", _block_case(502, 3, 6, None, 12, 3, 24, tgt_mask=True), weight=2.0),
    Case("batch of one, odd length", _block_case(503, 1, 7, None, 8, 4, 8)),
    Case("one position", _block_case(504, 2, 1, None, 8, 2, 16)),
    Case("float64 with a padding mask", _block_case(505, 2, 5, None, 16, 2, 32, True, dtype=torch.float64)),
]
_DEC_VISIBLE = [Case("no masks", _block_case(601, 2, 4, 5, 8, 2, 16))]
_DEC_HIDDEN = [
    Case("source padding", _block_case(602, 3, 5, 6, 12, 3, 24, memory_mask=True), weight=2.0),
    Case("target and source padding", _block_case(603, 2, 6, 4, 8, 2, 16, True, True), weight=2.0),
    Case("batch of one, odd lengths", _block_case(604, 1, 7, 3, 8, 4, 8)),
    Case("one target position", _block_case(605, 2, 1, 5, 8, 2, 16, memory_mask=True)),
    Case("float64 with masks", _block_case(606, 2, 5, 5, 16, 2, 32, True, True, torch.float64)),
]


def _check_block_output(result, expected, what):
    if isinstance(result, tuple):
        raise CheckFailed(f"{what} should return only the output tensor (B, T, d_model), not a tuple")
    out = require_tensor(result, f"the output of {what}")
    if out.shape != expected.shape:
        raise CheckFailed(f"the output of {what} should have shape (B, T, d_model), the shape of x")
    if out.dtype != expected.dtype:
        raise CheckFailed(f"for {expected.dtype} inputs the output should be {expected.dtype} too")
    return out


def _check_encoder_case(cls: Callable) -> Callable:
    what = "EncoderBlock"

    def check(seed, sizes, x, _memory, mask, _unused):
        module = build_module(cls, *sizes, forbidden=_FORBIDDEN_BLOCKS, what=f"{what}(d_model, num_heads, d_ff)")
        torch.nn.Module.to(module, x.dtype)
        ref = _randomize(_TR.EncoderBlock(*sizes, norm_first=False), seed).to(x.dtype).eval()
        load_reference_parameters(module, ref, what)
        torch.nn.Module.eval(module)
        kwargs = {} if mask is None else {"mask": mask.clone()}
        with torch.no_grad():
            result = run_student(module, x.clone(), forbidden=_FORBIDDEN_BLOCKS, what=f"{what}.forward", **kwargs)
            expected = ref(x, mask)
        out = _check_block_output(result, expected, what)
        if close(out, expected):
            return
        problem = _check_sublayer(
            module, "self_attn", ref.self_attn, (x,), {} if mask is None else {"mask": mask}, _FORBIDDEN_BLOCKS,
            "self_attn does not match the reference MultiHeadAttention: fix Part 5 first (or use "
            "attnbook.attention.MultiHeadAttention in the block)",
        ) or _check_sublayer(module, "ffn", ref.ffn, (x,), {}, _FORBIDDEN_BLOCKS,
                             "ffn does not match the feed-forward network fc2(relu(fc1(x)))")
        if problem:
            raise CheckFailed(problem)
        with torch.no_grad():
            sa = lambda h, m=mask: ref.self_attn(h, mask=m)[0]  # noqa: E731
            variants = [(_MODE_MESSAGES[mode], mode, (sa, ref.ffn), (ref.norm1, ref.norm2))
                        for mode in ("pre", "no_residual", "norm_inside")]
            variants += [
                ("the mask is not passed to the self-attention: padding keys must stay hidden", "post",
                 (lambda h: ref.self_attn(h)[0], ref.ffn), (ref.norm1, ref.norm2)),
                ("the norms are swapped: norm1 follows the attention sublayer and norm2 the feed-forward one",
                 "post", (sa, ref.ffn), (ref.norm2, ref.norm1)),
            ]
            for message, mode, subs, norms in variants:
                if close(out, _sublayers(x, subs, norms, mode)):
                    raise CheckFailed(message)
        raise CheckFailed(
            "the output differs from the paper's block: x = LayerNorm1(x + SelfAttention(x)), "
            "then x = LayerNorm2(x + FeedForward(x))"
        )

    return check


def check_encoder_block(cls: Callable, points: float | None = None) -> float | None:
    """Check the class ``cls(d_model, num_heads, d_ff)``, ``forward(x, mask=None)``, against the post-norm
    ``attnbook.transformer.EncoderBlock`` with copied weights."""
    cases = _ENC_VISIBLE if points is None else _ENC_VISIBLE + _ENC_HIDDEN
    return score_cases(cases, _check_encoder_case(cls), points)


def _check_decoder_case(cls: Callable) -> Callable:
    what = "DecoderBlock"

    def check(seed, sizes, x, memory, tgt_mask, memory_mask):
        module = build_module(cls, *sizes, forbidden=_FORBIDDEN_BLOCKS, what=f"{what}(d_model, num_heads, d_ff)")
        torch.nn.Module.to(module, x.dtype)
        ref = _randomize(_TR.DecoderBlock(*sizes, norm_first=False), seed).to(x.dtype).eval()
        load_reference_parameters(module, ref, what)
        torch.nn.Module.eval(module)
        kwargs = {k: v.clone() for k, v in (("tgt_mask", tgt_mask), ("memory_mask", memory_mask)) if v is not None}
        with torch.no_grad():
            result = run_student(
                module, x.clone(), memory.clone(), forbidden=_FORBIDDEN_BLOCKS, what=f"{what}.forward", **kwargs
            )
            expected = ref(x, memory, tgt_mask, memory_mask, causal=True)
        out = _check_block_output(result, expected, what)
        if close(out, expected):
            return
        T = x.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        problem = _check_sublayer(
            module, "self_attn", ref.self_attn, (x,), {"mask": causal}, _FORBIDDEN_BLOCKS,
            "self_attn does not match the reference MultiHeadAttention: fix Part 5 first (or use "
            "attnbook.attention.MultiHeadAttention in the block)",
        ) or _check_sublayer(
            module, "cross_attn", ref.cross_attn, (x, memory, memory), {}, _FORBIDDEN_BLOCKS,
            "cross_attn does not match the reference MultiHeadAttention: fix Part 5 first (or use "
            "attnbook.attention.MultiHeadAttention in the block)",
        ) or _check_sublayer(module, "ffn", ref.ffn, (x,), {}, _FORBIDDEN_BLOCKS,
                             "ffn does not match the feed-forward network fc2(relu(fc1(x)))")
        if problem:
            raise CheckFailed(problem)
        norms = (ref.norm1, ref.norm2, ref.norm3)
        sa = lambda h: ref.self_attn(h, mask=tgt_mask, is_causal=True)[0]  # noqa: E731
        ca = lambda h: ref.cross_attn(h, memory, memory, mask=memory_mask)[0]  # noqa: E731
        variants = [(_MODE_MESSAGES[mode], mode, (sa, ca, ref.ffn)) for mode in ("pre", "no_residual", "norm_inside")]
        variants += [
            ("the self-attention is not causal: target position t must not attend to the positions after "
             "it (use causal_mask(T), combined with tgt_mask when there is one)", "post",
             (lambda h: ref.self_attn(h, mask=tgt_mask)[0], ca, ref.ffn)),
            ("tgt_mask is ignored: combine the target padding mask with the causal mask, "
             "tgt_mask & causal_mask(T)", "post", (lambda h: ref.self_attn(h, is_causal=True)[0], ca, ref.ffn)),
            ("cross-attention ignores memory_mask: the source padding must stay hidden from every target position",
             "post", (sa, lambda h: ref.cross_attn(h, memory, memory)[0], ref.ffn)),
            ("cross-attention must take its keys and values from the encoder output memory, and only its "
             "queries from the decoder", "post", (sa, lambda h: ref.cross_attn(h, mask=memory_mask)[0], ref.ffn)),
            ("cross-attention must take its keys and values from the encoder output memory, and only its "
             "queries from the decoder", "post", (sa, lambda h: ref.cross_attn(h)[0], ref.ffn)),
            ("cross-attention must use its own projections, cross_attn, not those of self_attn", "post",
             (sa, lambda h: ref.self_attn(h, memory, memory, mask=memory_mask)[0], ref.ffn)),
        ]
        with torch.no_grad():
            for message, mode, subs in variants:
                try:
                    variant = _sublayers(x, subs, norms, mode)
                except (RuntimeError, ValueError):  # the mistake does not run on these shapes
                    continue
                if close(out, variant):
                    raise CheckFailed(message)
        raise CheckFailed(
            "the output differs from the paper's block: x = LayerNorm1(x + MaskedSelfAttention(x)), "
            "x = LayerNorm2(x + CrossAttention(x, memory)), x = LayerNorm3(x + FeedForward(x))"
        )

    return check


def check_decoder_block(cls: Callable, points: float | None = None) -> float | None:
    """Check the class ``cls(d_model, num_heads, d_ff)``, ``forward(x, memory, tgt_mask=None,
    memory_mask=None)``, against the post-norm ``attnbook.transformer.DecoderBlock`` with copied weights."""
    cases = _DEC_VISIBLE if points is None else _DEC_VISIBLE + _DEC_HIDDEN
    return score_cases(cases, _check_decoder_case(cls), points)


# ===================================================== greedy decoding (Part 8)

_FORBIDDEN_GREEDY = ("attnbook.transformer.greedy_decode",)
_PAD, _BOS, _EOS = 0, 1, 2


def greedy_test_model(seed: int = 0, eos_bias: float = 1.0, *, vocab: int = 11) -> torch.nn.Module:
    """A small random encoder-decoder ``Transformer`` (the ``"tiny"`` preset) to decode with.

    Ids: 0 padding, 1 BOS, 2 EOS. Its output layer never predicts padding or
    BOS, and ``eos_bias`` makes EOS more or less likely, so that sequences
    finish at different steps. The global random state is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        cfg = _TR.TransformerConfig.preset("tiny", src_vocab_size=vocab, tgt_vocab_size=vocab, max_len=32)
        model = _TR.Transformer(cfg)
    with torch.no_grad():
        model.head.bias[_PAD] = model.head.bias[_BOS] = -30.0
        model.head.bias[_EOS] = eos_bias
    return model.eval()


def _greedy_case(seed, eos_bias, B, S, max_len, lengths=None):
    def make():
        ids = _ids(seed, B, S, _PAD, vocab=11, lengths=lengths)
        ids[ids == _BOS] = 3  # the source holds content tokens and padding only
        ids[ids == _EOS] = 4
        return greedy_test_model(seed, eos_bias), ids, _BOS, _EOS, max_len

    return make


# Seeds and EOS biases chosen so that sequences finish at different steps (and, where the case says so,
# some never do), and so that each mistake that _diagnose_greedy names changes the result of some case.
_GREEDY_VISIBLE = [Case("three sources", _greedy_case(14, 1.5, 3, 6, 8, lengths=(6, 6, 6)))]
_GREEDY_HIDDEN = [
    Case("padded sources", _greedy_case(20, 1.5, 4, 7, 10, lengths=(7, 4, 2, 6)), weight=2.0),
    Case("batch of one", _greedy_case(13, 1.5, 1, 5, 9, lengths=(5,))),
    Case("some never finish", _greedy_case(5, 2.0, 3, 5, 6, lengths=(5, 5, 3))),
    Case("one step", _greedy_case(5, 1.0, 2, 4, 1, lengths=(4, 2))),
    Case("padded sources, odd lengths", _greedy_case(31, 2.5, 5, 9, 12, lengths=(9, 3, 7, 1, 5)), weight=2.0),
]


@torch.no_grad()
def _greedy_variant(model, src, bos_id, eos_id, max_len, *, memory_mask=True, after_eos="pad", stop="all",
                    position=-1, prefix=True):
    """Greedy decoding as students get it wrong (the default arguments: right)."""
    pad_id = model.config.pad_id
    memory = model.encode(src)
    mask = _REF.padding_mask(src, pad_id) if memory_mask else None
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(ys if prefix else ys[:, -1:], memory, mask)  # (B, t, V)
        next_id = logits[:, position].argmax(dim=-1)  # (B,)
        if after_eos == "pad":
            next_id = next_id.masked_fill(done, pad_id)
        ys = torch.cat([ys, next_id[:, None]], dim=1)
        done |= next_id == eos_id
        if (stop == "all" and bool(done.all())) or (stop == "first" and bool(done.any())):
            break
    return ys[:, 1:]


def _diagnose_greedy(ids, model, src, bos_id, eos_id, max_len) -> str:
    args = (model, src, bos_id, eos_id, max_len)
    expected = _greedy_variant(*args)
    with_bos = ids.shape[1] == expected.shape[1] + 1 and bool((ids[:, 0] == bos_id).all())
    if with_bos and torch.equal(ids[:, 1:], expected):
        return "the returned ids should not include BOS: return the generated tokens only (EOS included)"
    known = [
        ("a sequence goes on after its EOS: once a sequence has emitted EOS it must only get padding "
         "(model.config.pad_id)", dict(after_eos="keep", stop="never")),
        ("a sequence goes on after its EOS: once a sequence has emitted EOS it must only get padding "
         "(model.config.pad_id)", dict(after_eos="keep")),
        ("decoding goes on after every sequence has finished: stop as soon as all of them have emitted EOS",
         dict(stop="never")),
        ("decoding stopped when the first sequence finished: each sequence stops at its own EOS, and "
         "decoding goes on until all have finished (or max_len)", dict(stop="first")),
        ("the next token must come from the logits of the last position, logits[:, -1]", dict(position=0)),
        ("the decoder must see the whole prefix generated so far (BOS and every token after it), not only "
         "the last token: a Transformer decoder keeps no hidden state between steps", dict(prefix=False)),
        ("the source padding must stay hidden from cross-attention: pass padding_mask(src, pad_id) as "
         "memory_mask", dict(memory_mask=False)),
    ]
    for message, kwargs in known:
        if torch.equal(ids, _greedy_variant(*args, **kwargs)):
            return message
    if ids.shape[1] > max_len:
        return "more than max_len tokens were generated"
    return ("the generated ids differ from greedy decoding: start from BOS and at each step append the most "
            "likely next token (the argmax of the last position's logits)")


def _check_greedy_case(fn: Callable) -> Callable:
    def check(model, src, bos_id, eos_id, max_len):
        expected = _TR.greedy_decode(model, src, bos_id, eos_id, max_len)
        before = src.clone()
        ids = require_tensor(
            run_student(fn, model, src, bos_id, eos_id, max_len, forbidden=_FORBIDDEN_GREEDY, what="greedy_decode"),
            "the result of greedy_decode",
        )
        if not torch.equal(src, before):
            raise CheckFailed("greedy_decode changed src in place")
        if ids.is_floating_point() or ids.dtype == torch.bool:
            raise CheckFailed(f"greedy_decode should return integer token ids (torch.long), got {ids.dtype}")
        if ids.dim() != 2 or ids.shape[0] != src.shape[0]:
            raise CheckFailed("greedy_decode should return a (B, L) tensor: one row of generated ids per source")
        if not torch.equal(ids.long(), expected):
            raise CheckFailed(_diagnose_greedy(ids.long(), model, src, bos_id, eos_id, max_len))

    return check


def check_greedy_decode(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(model, src, bos_id, eos_id, max_len)`` -> (B, L) ids against greedy decoding of random models."""
    cases = _GREEDY_VISIBLE if points is None else _GREEDY_VISIBLE + _GREEDY_HIDDEN
    return score_cases(cases, _check_greedy_case(fn), points)
