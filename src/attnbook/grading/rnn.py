"""Checks for chapter 1's exercises (``solutions/01-rnn-attention``).

Each ``check_*`` compares the student's object with a private copy of the
reference in :mod:`attnbook.attention`, :mod:`attnbook.rnn` or
:mod:`attnbook.hard_attention` and explains a failure in words. Called without
``points`` it runs the visible cases and raises on the first failure; with
``points`` it runs every case and returns the points earned.

The parts, in the notebook's order: additive (Bahdanau) alignment scores with
a padding mask, Luong's dot-product scores, the weights and the context vector
(soft attention), one step of a GRU decoder with attention, sampling hard
attention, and the score-function estimate of hard attention's gradient.

Modules are compared by parameter name, as in chapter 2: the checker builds
the student's class, copies the reference's (random) parameters into it and
compares outputs. The two random parts are checked statistically with fixed
seeds: the checker seeds both the generator it passes and torch's global one,
so a grade never changes between runs, and every tolerance is six standard
errors of the sample it judges, so that a right answer drawing its samples in
any other correct way fails with a probability below 1e-7 per case.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import torch

from .engine import Case, score_cases
from ._core import (
    CheckFailed,
    build_module,
    close,
    fresh_module,
    load_reference_parameters,
    require_tensor,
    run_method,
    run_student,
)

__all__ = [
    "check_additive_scores",
    "check_luong_scores",
    "check_soft_attention",
    "check_decoder_step",
    "check_sample_hard_attention",
    "check_score_function_gradient",
    "HardAttentionLoss",
]

_ATT = fresh_module("attnbook.attention")
_RNN = fresh_module("attnbook.rnn")
_HARD = fresh_module("attnbook.hard_attention")
# The copy of attnbook.rnn imported its attention from the public module, which a notebook could have
# patched before the checker was imported: point it at the private copy.
_RNN.AdditiveAttention, _RNN.LuongAttention = _ATT.AdditiveAttention, _ATT.LuongAttention

_FORBIDDEN_SCORES = (
    "attnbook.attention.AdditiveAttention",
    "attnbook.attention.LuongAttention",
    "attnbook.attention._AlignmentAttention",
)
_FORBIDDEN_SOFT = ("attnbook.hard_attention.soft_attention",) + _FORBIDDEN_SCORES
_FORBIDDEN_DECODER = (
    "attnbook.rnn.AttentionDecoder",
    "attnbook.rnn.PlainDecoder",
    "attnbook.rnn._DecoderBase",
    "attnbook.rnn.Seq2Seq",
)
_FORBIDDEN_HARD = (
    "attnbook.hard_attention.sample_hard_attention",
    "attnbook.hard_attention.score_function_gradient",
    "attnbook.hard_attention.exact_gradient",
    "attnbook.hard_attention.soft_attention",
)
_NEG = -1e4  # a masked score may be -inf or any value at most this (e.g. -1e9): its weight is 0 either way


# ------------------------------------------------------------------ helpers


def _apply_mask(e: torch.Tensor, how: str = "-inf", *, mask: torch.Tensor | None) -> torch.Tensor:
    """Scores e (B, S) masked as asked, or as students get it wrong: "-inf", "inverted", "zero" or "none"."""
    if mask is None or how == "none":
        return e
    if how == "inverted":
        return e.masked_fill(mask, float("-inf"))
    return e.masked_fill(~mask, float("-inf") if how == "-inf" else 0.0)


def _masked(x: torch.Tensor) -> torch.Tensor:
    """Where a score counts as masked (-inf, or a large negative stand-in such as -1e9)."""
    return x.detach() <= _NEG


def same_scores(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Scores agree: masked in the same places, and close where not masked."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    if not torch.equal(_masked(a), _masked(b)):
        return False
    keep = ~_masked(b)
    if not bool(keep.any()):
        return True
    return close(a.detach()[keep], b.detach()[keep], b.dtype)


def _randomize(module: torch.nn.Module, seed: int, scale: float = 0.7) -> torch.nn.Module:
    """Fill every parameter with seeded Gaussian noise of std ``scale`` (so that tanh does not saturate)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * scale)
    return module.eval()


def _lengths_mask(g: torch.Generator, B: int, S: int, lengths: Sequence[int] | None) -> torch.Tensor:
    """(B, S) boolean mask, True at the first ``lengths[b]`` positions (at least one)."""
    if lengths is None:
        lengths = torch.randint(1, S + 1, (B,), generator=g).tolist()
    return torch.arange(S)[None, :] < torch.tensor(lengths)[:, None]  # (B, S)


# =============================================================== Part 1: additive scores


def _additive_case(seed, B, S, sizes, *, masked=False, lengths=None, dtype=torch.float32):
    """(seed, (query_size, key_size, attn_size), s (B, q), z (B, S, k), mask (B, S) or None)."""

    def make():
        g = torch.Generator().manual_seed(seed)
        q, k, _ = sizes
        s = torch.randn(B, q, generator=g, dtype=dtype)  # (B, query_size): the decoder state
        z = torch.randn(B, S, k, generator=g, dtype=dtype)  # (B, S, key_size): the annotations
        mask = _lengths_mask(g, B, S, lengths) if masked else None
        return seed, sizes, s, z, mask

    return make


_ADD_VISIBLE = [Case("padding mask", _additive_case(1, 2, 4, (3, 5, 6), masked=True, lengths=(4, 2)))]
_ADD_HIDDEN = [
    Case("no mask", _additive_case(101, 3, 5, (4, 6, 8))),
    Case("batch of one, one real key", _additive_case(102, 1, 6, (2, 3, 4), masked=True, lengths=(1,))),
    Case("as many sequences as keys", _additive_case(103, 4, 4, (5, 5, 3), masked=True), weight=2.0),
    Case("float64, padding", _additive_case(104, 3, 7, (6, 4, 5), masked=True, dtype=torch.float64)),
    Case("wide attention layer", _additive_case(105, 2, 9, (8, 8, 32), masked=True), weight=2.0),
]


def _additive_variants(ref, s, z, mask):
    """(message, scores) for the mistakes students make, computed from the reference's pieces."""
    W, U, v = ref.W, ref.U, ref.v
    Ws, Uz = W(s), U(z)  # (B, A), (B, S, A)
    right = torch.tanh(Ws.unsqueeze(1) + Uz)  # (B, S, A)

    fill = functools.partial(_apply_mask, mask=mask)

    variants = []
    if mask is not None:
        e = v(right).squeeze(-1)
        variants += [
            ("the mask is applied the wrong way round: True marks the real keys, so it is the positions where "
             "the mask is False that get -inf", fill(e, "inverted")),
            ("the mask is ignored: the scores of padded keys must be -inf", fill(e, "none")),
            ("masked scores were set to 0 instead of -inf; a score of 0 still gets weight after the softmax",
             fill(e, "zero")),
        ]
    variants += [
        ("tanh is missing: the alignment model is vᵀ tanh(W s + U z_j), a small MLP, not a linear map",
         fill(v(Ws.unsqueeze(1) + Uz).squeeze(-1))),
        ("tanh is applied after v: the alignment model is vᵀ tanh(W s + U z_j), with tanh inside",
         fill(torch.tanh(v(Ws.unsqueeze(1) + Uz)).squeeze(-1))),
    ]
    if s.shape[0] == z.shape[1]:  # (B, A) + (B, S, A) broadcasts when B == S, pairing the wrong rows
        variants.append((
            "W s was added to U z_j without a key axis: (B, A) + (B, S, A) pairs the state of one sequence "
            "with the keys of another; give W s the shape (B, 1, A) (unsqueeze(1)) first",
            fill(v(torch.tanh(Ws.unsqueeze(0) + Uz)).squeeze(-1)),
        ))
    if W.weight.shape == U.weight.shape:
        variants.append((
            "W and U are swapped: W multiplies the decoder state s, U (with the bias) the keys z_j",
            fill(v(torch.tanh(U(s).unsqueeze(1) + W(z))).squeeze(-1)),
        ))
    return variants


def _check_additive_case(cls: Callable) -> Callable:
    what = "AdditiveAttention"

    def check(seed, sizes, s, z, mask):
        module = build_module(cls, *sizes, forbidden=_FORBIDDEN_SCORES, what=f"{what}(query_size, key_size, attn_size)")
        torch.nn.Module.to(module, s.dtype)
        ref = _randomize(_ATT.AdditiveAttention(*sizes), seed).to(s.dtype)
        load_reference_parameters(module, ref, what)
        args = (s.clone(), z.clone()) + (() if mask is None else (mask.clone(),))
        with torch.no_grad():
            try:
                result = run_method(module, "scores", *args, forbidden=_FORBIDDEN_SCORES, what=f"{what}.scores")
            except CheckFailed as err:
                if "must match the size of tensor" in str(err):  # (B, A) + (B, S, A) without a key axis
                    raise CheckFailed(f"{err} -- W s is (B, A) and U z is (B, S, A): give W s the shape "
                                      "(B, 1, A) (unsqueeze(1)) so that it broadcasts over the keys") from None
                raise
            expected = ref.scores(s, z, mask)
        e = require_tensor(result, f"the result of {what}.scores")
        if tuple(e.shape) != tuple(expected.shape):
            raise CheckFailed(f"{what}.scores should return (B, S): one score per sequence and key")
        if e.dtype != s.dtype:
            raise CheckFailed(f"for {s.dtype} inputs the scores should be {s.dtype} too")
        if same_scores(e, expected):
            return
        if torch.isnan(e).any():
            raise CheckFailed("the scores contain NaN")
        with torch.no_grad():
            for message, variant in _additive_variants(ref, s, z, mask):
                if same_scores(e, variant):
                    raise CheckFailed(message)
        if mask is not None and not torch.equal(_masked(e), ~mask):
            raise CheckFailed("the scores must be -inf exactly where the mask is False (the padding)")
        raise CheckFailed("the scores differ from e_j = vᵀ tanh(W s + U z_j)")

    return check


def check_additive_scores(cls: Callable, points: float | None = None) -> float | None:
    """Check the class ``cls(query_size, key_size, attn_size)`` with ``W``, ``U``, ``v`` and
    ``scores(query, keys, mask=None)`` -> (B, S) against ``attnbook.attention.AdditiveAttention``."""
    cases = _ADD_VISIBLE if points is None else _ADD_VISIBLE + _ADD_HIDDEN
    return score_cases(cases, _check_additive_case(cls), points)


# =============================================================== Part 2: Luong's scores


def _luong_case(seed, B, S, q, k, *, general=True, masked=False, dtype=torch.float32):
    """(query (B, q), keys (B, S, k), W (q, k) or None, mask (B, S) or None)."""

    def make():
        g = torch.Generator().manual_seed(seed)
        query = torch.randn(B, q, generator=g, dtype=dtype)
        keys = torch.randn(B, S, k, generator=g, dtype=dtype)
        W = torch.randn(q, k, generator=g, dtype=dtype) / math.sqrt(k) if general else None
        mask = _lengths_mask(g, B, S, None) if masked else None
        return query, keys, W, mask

    return make


_LUONG_VISIBLE = [
    Case("dot", _luong_case(2, 2, 5, 4, 4, general=False)),
    Case("general, padding mask", _luong_case(3, 2, 4, 5, 5, masked=True)),
]
_LUONG_HIDDEN = [
    Case("dot, padding mask", _luong_case(201, 3, 6, 16, 16, general=False, masked=True), weight=2.0),
    Case("general, W not square", _luong_case(202, 2, 5, 6, 3), weight=2.0),
    Case("general, float64, padding", _luong_case(203, 4, 7, 5, 3, masked=True, dtype=torch.float64)),
    Case("batch of one, one key", _luong_case(204, 1, 1, 4, 2)),
]


def _luong_reference(query, keys, W, mask):
    method = "dot" if W is None else "general"
    ref = _ATT.LuongAttention(query.shape[-1], keys.shape[-1], method=method).to(query.dtype)
    if W is not None:
        with torch.no_grad():
            ref.W.weight.copy_(W)  # nn.Linear(key_size, query_size) stores W_a as (query_size, key_size)
    with torch.no_grad():
        return ref.scores(query, keys, mask)


def _luong_diagnosis(e, query, keys, W, mask) -> str:
    projected = keys if W is None else keys @ W.T  # (B, S, q): W z_j
    raw = (projected @ query.unsqueeze(-1)).squeeze(-1)  # (B, S)

    fill = functools.partial(_apply_mask, mask=mask)

    known = [("Luong's score is not scaled: e_j = sᵀ z_j (or sᵀ W z_j) without the Transformer's 1/sqrt(d)",
              fill(raw / math.sqrt(query.shape[-1]))),
             ("the scores went through a softmax: return the scores e, the weights come in Part 3",
              fill(raw).softmax(-1))]
    if mask is not None:
        known += [
            ("the mask is applied the wrong way round: True marks the real keys, so it is the positions where "
             "the mask is False that get -inf", fill(raw, "inverted")),
            ("the mask is ignored: the scores of padded keys must be -inf", fill(raw, "none")),
            ("masked scores were set to 0 instead of -inf; a score of 0 still gets weight after the softmax",
             fill(raw, "zero")),
        ]
    if W is not None and W.shape[0] == W.shape[1]:
        known.append(("W is transposed: e_j = sᵀ W z_j, so W maps the key z_j into the query's space (W z_j), "
                      "or equivalently s W multiplies the keys", fill(((keys @ W) @ query.unsqueeze(-1)).squeeze(-1))))
    for message, variant in known:
        if same_scores(e, variant):
            return message
    return "the scores differ from e_j = sᵀ z_j (dot) or e_j = sᵀ W z_j (general)"


def _check_luong_case(fn: Callable) -> Callable:
    def check(query, keys, W, mask):
        before = [x.clone() for x in (query, keys)]
        kwargs = {} if mask is None else {"mask": mask.clone()}
        e = require_tensor(
            run_student(fn, query, keys, None if W is None else W.clone(), forbidden=_FORBIDDEN_SCORES,
                        what="luong_scores", **kwargs),
            "the result of luong_scores",
        )
        if any(not torch.equal(a, b) for a, b in zip(before, (query, keys))):
            raise CheckFailed("luong_scores changed query or keys in place; compute on new tensors instead")
        expected = _luong_reference(query, keys, W, mask)
        if tuple(e.shape) != tuple(expected.shape):
            raise CheckFailed("luong_scores should return (B, S): one score per sequence and key")
        if e.dtype != query.dtype:
            raise CheckFailed(f"for {query.dtype} inputs the scores should be {query.dtype} too")
        if not same_scores(e, expected):
            raise CheckFailed(_luong_diagnosis(e, query, keys, W, mask))

    return check


def check_luong_scores(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(query, keys, W=None, mask=None)`` -> (B, S) against ``attnbook.attention.LuongAttention``."""
    cases = _LUONG_VISIBLE if points is None else _LUONG_VISIBLE + _LUONG_HIDDEN
    return score_cases(cases, _check_luong_case(fn), points)


# =============================================================== Part 3: soft attention


def _soft_case(seed, B, S, d_v, *, masked=False, lengths=None, dtype=torch.float32, scale=2.0):
    """(scores (B, S) with -inf at the padding, values (B, S, d_v))."""

    def make():
        g = torch.Generator().manual_seed(seed)
        scores = torch.randn(B, S, generator=g, dtype=dtype) * scale
        values = torch.randn(B, S, d_v, generator=g, dtype=dtype)
        if masked:
            scores = scores.masked_fill(~_lengths_mask(g, B, S, lengths), float("-inf"))
        return scores, values

    return make


_SOFT_VISIBLE = [Case("padding", _soft_case(4, 2, 5, 3, masked=True, lengths=(5, 3)))]
_SOFT_HIDDEN = [
    Case("no padding", _soft_case(301, 3, 4, 6)),
    Case("batch of one, one real key", _soft_case(302, 1, 5, 2, masked=True, lengths=(1,))),
    Case("float64, padding", _soft_case(303, 4, 6, 5, masked=True, dtype=torch.float64), weight=2.0),
    Case("as many sequences as keys", _soft_case(304, 5, 5, 5, masked=True), weight=2.0),
    Case("large scores", _soft_case(305, 3, 4, 2, scale=100.0)),  # exp(e) overflows in float32
]


def _soft_weights_diagnosis(w, scores) -> str:
    real = torch.isfinite(scores)
    known = [
        ("the softmax runs over the wrong axis: each sequence's weights (over its S keys, the last axis) "
         "must sum to 1", torch.softmax(scores, dim=0).nan_to_num(0.0)),
        ("-inf scores were replaced by 0 before the softmax, so padded keys get weight; keep the -inf",
         torch.softmax(scores.masked_fill(~real, 0.0), dim=-1)),
    ]
    student = w.detach().nan_to_num(0.0)
    for message, variant in known:
        if close(student, variant):
            return message
    if torch.isnan(w).any():
        return ("the weights contain NaN: exp of a large score overflows to inf (use torch.softmax, which "
                "subtracts each row's maximum first)")
    if (w.detach().abs() * ~real).max() > 1e-6:
        return "keys with a score of -inf (padding) get non-zero weight"
    if not close(w.detach().sum(-1), torch.ones(w.shape[:-1], dtype=w.dtype)):
        return "the weights of a sequence do not sum to 1"
    return "the weights differ from softmax(scores) over the keys"


def _check_soft_case(fn: Callable) -> Callable:
    def check(scores, values):
        before = [x.clone() for x in (scores, values)]
        result = run_student(fn, scores, values, forbidden=_FORBIDDEN_SOFT, what="soft_attention")
        if not isinstance(result, tuple) or len(result) != 2:
            raise CheckFailed("soft_attention should return a pair (context, weights)")
        context = require_tensor(result[0], "context (the first value returned)")
        w = require_tensor(result[1], "weights (the second value returned)")
        if any(not torch.equal(a, b) for a, b in zip(before, (scores, values))):
            raise CheckFailed("soft_attention changed scores or values in place; compute on new tensors instead")
        expected_c, expected_w = _HARD.soft_attention(scores, values)
        if tuple(w.shape) != tuple(expected_w.shape):
            raise CheckFailed("weights should have shape (B, S), like the scores")
        if tuple(context.shape) != tuple(expected_c.shape):
            raise CheckFailed("context should have shape (B, d_v): one vector per sequence, as wide as the values "
                              "(a batched product needs a (B, 1, S) @ (B, S, d_v) shape, then squeeze)")
        if w.dtype != scores.dtype or context.dtype != scores.dtype:
            raise CheckFailed(f"for {scores.dtype} inputs the results should be {scores.dtype} too")
        if not close(w, expected_w):
            raise CheckFailed(_soft_weights_diagnosis(w, scores))
        if close(context, expected_c):
            return
        if close(context, values.mean(dim=1)):
            raise CheckFailed("the context is the plain average of the values; weigh each z_j by its γ_j")
        if close(context, values.sum(dim=1)):
            raise CheckFailed("the context is the plain sum of the values; weigh each z_j by its γ_j")
        raise CheckFailed("the weights are right but the context is not Σ_j γ_j z_j")

    return check


def check_soft_attention(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(scores, values)`` -> ``(context, weights)`` against ``attnbook.hard_attention.soft_attention``."""
    cases = _SOFT_VISIBLE if points is None else _SOFT_VISIBLE + _SOFT_HIDDEN
    return score_cases(cases, _check_soft_case(fn), points)


# =============================================================== Part 4: one decoder step


def _decoder_case(seed, B, S, sizes, *, masked=True, lengths=None, dtype=torch.float32):
    """(seed, sizes (V, E, H, C, A), prev_token (B,), hidden (B, H), memory (B, S, C), mask (B, S) or None)."""

    def make():
        g = torch.Generator().manual_seed(seed)
        V, _, H, C, _ = sizes
        prev = torch.randint(0, V, (B,), generator=g)
        hidden = torch.randn(B, H, generator=g, dtype=dtype).tanh()  # a GRU state lies in (-1, 1)
        memory = torch.randn(B, S, C, generator=g, dtype=dtype)
        mask = _lengths_mask(g, B, S, lengths) if masked else None
        if mask is not None:
            memory = memory * mask[:, :, None]  # the encoder's memory is zero at the padding
        return seed, sizes, prev, hidden, memory, mask

    return make


_DEC_VISIBLE = [Case("padded source", _decoder_case(5, 2, 5, (9, 4, 6, 8, 5), lengths=(5, 3)))]
_DEC_HIDDEN = [
    Case("no mask", _decoder_case(401, 3, 4, (7, 5, 6, 4, 3), masked=False)),
    Case("embedding as wide as the context", _decoder_case(402, 3, 6, (11, 6, 4, 6, 5)), weight=2.0),
    Case("batch of one, one source token", _decoder_case(403, 1, 1, (5, 3, 4, 2, 3), masked=False)),
    Case("float64, padding", _decoder_case(404, 4, 7, (10, 4, 8, 6, 6), dtype=torch.float64), weight=2.0),
]


def _decoder_variants(ref, prev, hidden, memory, mask):
    """(message, (logits, hidden, weights)) of typical mistakes, from the reference's pieces."""
    e = ref.embed(prev)  # (B, E)
    ctx, w = ref.attention(hidden, memory, mask=mask)  # (B, C), (B, S)
    ctx_nomask, w_nomask = ref.attention(hidden, memory)
    new = ref.cell(torch.cat([e, ctx], -1), hidden)  # (B, H)

    def out(*parts):
        return ref.out(torch.cat(parts, -1))

    tries = [
        ("the mask is not passed to the attention: padded source positions must get weight 0",
         lambda: (out(ref.cell(torch.cat([e, ctx_nomask], -1), hidden), ctx_nomask, e),
                  ref.cell(torch.cat([e, ctx_nomask], -1), hidden), w_nomask)),
        ("the GRU cell's input is [E y_{t-1}; c_t]: the embedding first, then the context",
         lambda: (out(ref.cell(torch.cat([ctx, e], -1), hidden), ctx, e), ref.cell(torch.cat([ctx, e], -1), hidden), w)),
        ("the output layer must read the new state s_t (the GRU cell's output), not s_{t-1}",
         lambda: (out(hidden, ctx, e), new, w)),
        ("the output layer reads [s_t; c_t; E y_{t-1}] in this order", lambda: (out(new, e, ctx), new, w)),
        ("the output layer reads [s_t; c_t; E y_{t-1}] in this order", lambda: (out(ctx, new, e), new, w)),
        ("the output layer reads [s_t; c_t; E y_{t-1}] in this order", lambda: (out(e, ctx, new), new, w)),
    ]
    for message, make in tries:
        try:
            yield message, make()
        except (RuntimeError, ValueError, TypeError):  # the mistake does not run on these sizes
            continue


def _check_decoder_case(cls: Callable) -> Callable:
    what = "AttentionDecoder"

    def check(seed, sizes, prev, hidden, memory, mask):
        V, E, H, C, A = sizes
        module = build_module(cls, *sizes, forbidden=_FORBIDDEN_DECODER,
                              what=f"{what}(vocab_size, embed_dim, hidden_size, context_size, attn_size)")
        torch.nn.Module.to(module, hidden.dtype)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            ref = _RNN.AttentionDecoder(V, E, H, C, attention="additive", attn_size=A)
        ref = ref.to(hidden.dtype).eval()
        load_reference_parameters(module, ref, what)
        torch.nn.Module.eval(module)
        args = (prev.clone(), hidden.clone(), memory.clone()) + (() if mask is None else (mask.clone(),))
        with torch.no_grad():
            try:
                result = run_method(module, "step", *args, forbidden=_FORBIDDEN_DECODER, what=f"{what}.step")
            except CheckFailed as err:
                if "values must be a floating-point tensor" in str(err):
                    raise CheckFailed(f"{err} -- the mask went in as the values: the attention's signature is "
                                      "(query, keys, values=None, mask=None), so pass it by name, mask=mask") from None
                raise
            expected = ref.step(prev, hidden, memory, mask)
        if not isinstance(result, tuple) or len(result) != 3:
            raise CheckFailed("step should return a triple (logits, hidden, weights)")
        names = ("logits (B, vocab_size)", "the new hidden state (B, hidden_size)", "the attention weights (B, S)")
        got = [require_tensor(x, name) for x, name in zip(result, names)]
        for x, want, name in zip(got, expected, names):
            if tuple(x.shape) != tuple(want.shape):
                raise CheckFailed(f"step should return {name} in this place")
            if x.dtype != want.dtype:
                raise CheckFailed(f"for {want.dtype} inputs the results should be {want.dtype} too")
        if all(close(x, want) for x, want in zip(got, expected)):
            return
        with torch.no_grad():
            for message, variant in _decoder_variants(ref, prev, hidden, memory, mask):
                if all(close(x, v) for x, v in zip(got, variant)):
                    raise CheckFailed(message)
        if not close(got[2], expected[2]):
            if close(got[2], ref.attention.scores(hidden, memory, mask).nan_to_num(0.0, neginf=0.0)):
                raise CheckFailed("step returns the scores e instead of the weights γ = softmax(e)")
            raise CheckFailed("the attention weights differ from self.attention(hidden, memory, mask=mask): "
                              "the query is the previous state s_{t-1}, the keys and values are the memory")
        if close(got[0], expected[0]) and close(got[1], hidden):
            raise CheckFailed("step must return the new state s_t (the GRU cell's output), not the state it was given")
        if not close(got[1], expected[1]):
            raise CheckFailed("the new state differs from s_t = GRUCell([E y_{t-1}; c_t], s_{t-1})")
        raise CheckFailed("the logits differ from W_o [s_t; c_t; E y_{t-1}] (self.out)")

    return check


def check_decoder_step(cls: Callable, points: float | None = None) -> float | None:
    """Check ``cls(vocab_size, embed_dim, hidden_size, context_size, attn_size).step(prev_token, hidden,
    memory, mask=None)`` -> ``(logits, hidden, weights)`` against ``attnbook.rnn.AttentionDecoder.step``."""
    cases = _DEC_VISIBLE if points is None else _DEC_VISIBLE + _DEC_HIDDEN
    return score_cases(cases, _check_decoder_case(cls), points)


# =============================================================== Part 5: hard attention

_Z = 6.0  # tolerances are _Z standard errors: a two-sided normal tail of 2e-9 per number compared


def _hard_inputs(seed, rows, S, d_v, *, masked, dtype):
    """``rows`` distinct score rows (some -inf if ``masked``) and their values."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(rows, S, generator=g, dtype=dtype) * 1.2
    values = torch.randn(rows, S, d_v, generator=g, dtype=dtype)
    if masked:
        lengths = [S - 1 - (r % max(1, S - 2)) for r in range(rows)]  # at least two real keys per row
        scores = scores.masked_fill(~_lengths_mask(g, rows, S, lengths), float("-inf"))
    return scores, values


def _sample_case(seed, rows, S, d_v, copies, *, masked=False, dtype=torch.float32):
    """(seed, base scores (rows, S), base values, copies): the student samples ``copies`` times per row."""

    def make():
        scores, values = _hard_inputs(seed, rows, S, d_v, masked=masked, dtype=dtype)
        return seed, scores, values, copies

    return make


_SAMPLE_VISIBLE = [Case("two rows, one padded", _sample_case(6, 2, 4, 3, 2000, masked=True))]
_SAMPLE_HIDDEN = [
    Case("no padding", _sample_case(501, 3, 5, 2, 3000)),
    Case("float64, padding", _sample_case(502, 2, 6, 4, 3000, masked=True, dtype=torch.float64), weight=2.0),
    Case("one row, many keys", _sample_case(503, 1, 9, 3, 4000, masked=True)),
]


def _tile(scores: torch.Tensor, values: torch.Tensor, copies: int):
    """Row ``i`` of the result is base row ``i % rows``: (copies * rows, S), (copies * rows, S, d_v)."""
    return scores.repeat(copies, 1), values.repeat(copies, 1, 1)


def _seeded(seed: int, fn: Callable, *args, **kwargs):
    """Run ``fn`` with a seeded generator passed in and torch's global generator seeded too (restored after)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return fn(*args, generator=torch.Generator().manual_seed(seed), **kwargs)


def _check_sample_case(fn: Callable) -> Callable:
    what = "sample_hard_attention"

    def check(seed, base_scores, base_values, copies):
        scores, values = _tile(base_scores, base_values, copies)
        before = [x.clone() for x in (scores, values)]
        result = _seeded(seed, run_student, fn, scores, values, forbidden=_FORBIDDEN_HARD, what=what)
        if not isinstance(result, tuple) or len(result) != 2:
            raise CheckFailed(f"{what} should return a pair (context, index)")
        context = require_tensor(result[0], "context (the first value returned)")
        index = require_tensor(result[1], "index (the second value returned)")
        if any(not torch.equal(a, b) for a, b in zip(before, (scores, values))):
            raise CheckFailed(f"{what} changed scores or values in place")
        B, S = scores.shape
        if index.is_floating_point() or index.dtype == torch.bool:
            raise CheckFailed(f"index should hold integer positions (torch.long), got {index.dtype}")
        if tuple(index.shape) != (B,):
            raise CheckFailed("index should have shape (B,): one sampled position per sequence")
        if tuple(context.shape) != tuple(values.shape[::2]):
            raise CheckFailed("context should have shape (B, d_v): one value vector per sequence")
        if int(index.min()) < 0 or int(index.max()) >= S:
            raise CheckFailed("index holds positions outside 0 .. S - 1")
        index = index.long()
        picked = values[torch.arange(B), index]  # (B, d_v)
        if not torch.equal(context, picked):
            soft = _HARD.soft_attention(scores, values)[0]
            if close(context, soft):
                raise CheckFailed("the context is the weighted average Σ γ_j z_j (soft attention); hard attention "
                                  "returns the one value z_j at the sampled position j")
            raise CheckFailed("the context must be the value at the sampled position, values[b, index[b]]")
        if bool(torch.isinf(scores[torch.arange(B), index]).any()):
            raise CheckFailed("a position with score -inf (padding) was sampled; its probability is 0")
        rows = base_scores.shape[0]
        counts = torch.zeros(rows, S, dtype=torch.float64)
        counts.index_put_((torch.arange(B) % rows, index), torch.ones(B, dtype=torch.float64), accumulate=True)
        freq = counts / copies  # (rows, S)
        p = torch.softmax(base_scores.double(), dim=-1)  # (rows, S)
        tol = _Z * (p * (1 - p) / copies).sqrt() + 1.0 / copies
        if bool(((freq - p).abs() <= tol).all()):
            return
        picks = index.reshape(copies, rows)  # (copies, rows)
        if bool((picks == p.argmax(-1)).all()):
            raise CheckFailed("every draw picks the most likely position (argmax); hard attention samples "
                              "position j with probability γ_j = softmax(scores)_j")
        if bool((picks == picks[:1]).all()) or bool((index == index[0]).all()):
            raise CheckFailed("every sequence gets the same draw: each row needs its own sample")
        real = torch.isfinite(base_scores)
        uniform = real / real.sum(-1, keepdim=True)
        if bool(((freq - uniform).abs() <= _Z * (uniform * (1 - uniform) / copies).sqrt() + 1.0 / copies).all()):
            raise CheckFailed("positions are drawn uniformly; they must be drawn with probabilities softmax(scores)")
        raise CheckFailed("the positions are not drawn with probabilities softmax(scores): over many draws, "
                          "their frequencies differ from the weights")

    return check


def check_sample_hard_attention(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(scores, values, generator=None)`` -> ``(context, index)``: one-hot picks with the right
    frequencies (a statistical test with a fixed seed)."""
    cases = _SAMPLE_VISIBLE if points is None else _SAMPLE_VISIBLE + _SAMPLE_HIDDEN
    return score_cases(cases, _check_sample_case(fn), points)


class HardAttentionLoss:
    """A loss of the context, ``f(c) = Σ_i (c_i - target_i)² / d_v + offset``: (B, d_v) -> (B,) (any leading axes).

    Nonlinear, so that the gradient at the soft context differs from hard
    attention's; ``offset`` adds a constant, which a baseline must cancel.
    """

    def __init__(self, d_v: int, seed: int, offset: float = 0.0) -> None:
        self.target = torch.randn(d_v, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        self.offset = offset

    def __call__(self, context: torch.Tensor) -> torch.Tensor:
        target = self.target.to(context.device, context.dtype)
        return ((context - target) ** 2).mean(dim=-1) + self.offset

    def __repr__(self) -> str:
        return "HardAttentionLoss()"


def _estimate_case(seed, rows, S, d_v, num_samples, copies, *, offset=0.0, masked=False, dtype=torch.float32):
    """(seed, base scores, base values, f, num_samples, copies)."""

    def make():
        scores, values = _hard_inputs(seed, rows, S, d_v, masked=masked, dtype=dtype)
        return seed, scores, values, HardAttentionLoss(d_v, seed, offset), num_samples, copies

    return make


_EST_VISIBLE = [Case("five samples", _estimate_case(7, 2, 4, 3, 5, 1500, masked=True))]
_EST_HIDDEN = [
    Case("two samples", _estimate_case(601, 2, 4, 3, 2, 4000), weight=2.0),
    Case("a large constant in the loss", _estimate_case(602, 2, 5, 2, 8, 1000, offset=1000.0), weight=2.0),
    Case("float64, padding", _estimate_case(603, 3, 6, 4, 4, 1500, masked=True, dtype=torch.float64)),
]


def _soft_gradient(scores, values, f):
    """∂ f(Σ_j γ_j z_j) / ∂ scores: the gradient of soft attention's loss."""
    with torch.enable_grad():
        e = scores.detach().double().clone().requires_grad_(True)
        context = (torch.softmax(e, -1).unsqueeze(1) @ values.double()).squeeze(1)  # (B, d_v)
        (grad,) = torch.autograd.grad(f(context).sum(), e)
    return grad


def _per_row_stats(estimates: torch.Tensor, rows: int, copies: int):
    """Mean and standard deviation over the copies of each base row: (rows, S) each."""
    x = estimates.detach().double().reshape(copies, rows, -1)  # (copies, rows, S)
    return x.mean(dim=0), x.std(dim=0)


def _estimator_diagnosis(mean, sd, ref_sd, expected, scores, values, f, num_samples, copies) -> str:
    """Name the mistake behind an average estimate that is not the gradient."""
    slack = _Z * torch.maximum(sd, ref_sd) / math.sqrt(copies) + 1e-6

    def near(target):
        return bool(((mean - target).abs() <= slack).all())

    p = torch.softmax(scores.double(), -1)  # (rows, S)
    losses = torch.stack([f(values[:, j].double()) for j in range(values.shape[1])], 1)  # (rows, S)
    losses = losses.masked_fill(p == 0, 0.0)
    centred = (losses - (p * losses).sum(-1, keepdim=True)) * p  # γ_j (f_j - E f)
    grad_of_p = p * centred - p * (p * centred).sum(-1, keepdim=True)  # Σ_j γ_j (f_j - E f) ∂γ_j/∂e_k
    if bool((mean.abs() <= 1e-7).all()):
        return ("the estimate is always zero: if every draw picks the same position (argmax), f_n - f̄ is 0; "
                "and a gradient cannot flow through the sampled index: use ∇ log γ_j = onehot(j) - γ")
    if bool((sd > 4 * ref_sd + 1e-6).any()):
        return ("the estimate is far too noisy when f has a large constant part: subtract the baseline f̄ "
                "(a constant added to f must not change the estimate)")
    known = [
        ("the sign is flipped: the estimate is of +∂E[f]/∂scores, Σ (f_n - f̄)(onehot(j_n) - γ) / (N - 1)",
         -expected),
        ("divide by N - 1, not N: f̄ includes f_n itself, which shrinks the estimate by (N - 1)/N "
         "(with N - 1 it is the leave-one-out baseline, and unbiased)", expected * (num_samples - 1) / num_samples),
        ("this looks like the gradient of f at the soft context Σ γ_j z_j (the weights instead of a sample); "
         "hard attention's gradient must come from the score function ∇ log γ_j", _soft_gradient(scores, values, f)),
        ("the estimate multiplies by the gradient of γ_j instead of the gradient of log γ_j = onehot(j) - γ",
         grad_of_p),
    ]
    for message, target in known:
        if near(target):
            return message
    return ("on average the estimate differs from the gradient of E[f(z_j)]: "
            "Σ_n (f_n - f̄)(onehot(j_n) - γ) / (N - 1)")


def _check_estimate_case(fn: Callable) -> Callable:
    what = "score_function_gradient"

    def check(seed, base_scores, base_values, f, num_samples, copies):
        scores, values = _tile(base_scores, base_values, copies)
        before = [x.clone() for x in (scores, values)]
        estimate = require_tensor(
            _seeded(seed, run_student, fn, scores, values, f, num_samples, forbidden=_FORBIDDEN_HARD, what=what),
            f"the result of {what}",
        )
        if any(not torch.equal(a, b) for a, b in zip(before, (scores, values))):
            raise CheckFailed(f"{what} changed scores or values in place")
        if tuple(estimate.shape) != tuple(scores.shape):
            raise CheckFailed(f"{what} should return (B, S): one partial derivative per score")
        if estimate.dtype != scores.dtype:
            raise CheckFailed(f"for {scores.dtype} inputs the estimate should be {scores.dtype} too")
        if not bool(torch.isfinite(estimate).all()):
            raise CheckFailed("the estimate contains NaN or inf (at a padded position γ_j = 0: its entry is 0)")
        rows = base_scores.shape[0]
        mean, sd = _per_row_stats(estimate, rows, copies)
        reference = _seeded(seed + 1, _HARD.score_function_gradient, scores, values, f, num_samples)
        _, ref_sd = _per_row_stats(reference, rows, copies)
        expected = _HARD.exact_gradient(base_scores.double(), base_values.double(), f)  # (rows, S)
        # Six standard errors of the mean of `copies` independent estimates, with 25 % room for
        # the error of the standard deviation itself; float32 rounding adds a little.
        tol = 1.25 * _Z * ref_sd / math.sqrt(copies) + (1e-9 if scores.dtype == torch.float64 else 1e-5)
        if bool(((mean - expected).abs() <= tol).all()):
            return
        raise CheckFailed(_estimator_diagnosis(mean, sd, ref_sd, expected, base_scores, base_values, f,
                                               num_samples, copies))

    return check


def check_score_function_gradient(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(scores, values, f, num_samples, generator=None)`` -> (B, S): on average over many rows the
    estimate is the exact gradient of E[f(z_j)] (a statistical test with a fixed seed)."""
    cases = _EST_VISIBLE if points is None else _EST_VISIBLE + _EST_HIDDEN
    return score_cases(cases, _check_estimate_case(fn), points)
