"""Part: one decoding step with a key/value cache, ``cached_attention_step(q, k, v, past_k, past_v)``.

The new token's query, key and value are (B, nh, 1, hs); the cache holds the
keys and values of the ``P`` tokens before it, (B, nh, P, hs), ``P`` possibly
0. The step appends the new key and value *after* the cached ones, lets the
query attend (scaled by 1/sqrt(hs)) to all ``P + 1`` keys, itself included,
and returns ``(out (B, nh, 1, hs), keys (B, nh, P+1, hs), values)``. The
reference is :func:`attnbook.gpt.cached_attention`. The named mistakes: the
new token left out of its own attention, the cache extended at the front or
not at all, keys and values swapped, no scaling, a softmax over the wrong
axis, a cache changed in place.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .._compare import close, require_tensor
from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot
from ._common import GPT

__all__ = ["check_cached_attention_step"]


def _case(seed: int, B: int, nh: int, P: int, hs: int, dtype: torch.dtype = torch.float32, *,
          strided: bool = False) -> Callable[[], tuple]:
    """The new token's q, k, v (B, nh, 1, hs) and a cache of P tokens (B, nh, P, hs); ``strided``: the
    cache is a transposed view (same values, other strides)."""

    def make():
        g = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(B, nh, 1, hs, generator=g, dtype=dtype) for _ in range(3))
        if strided:
            past_k, past_v = (torch.randn(B, nh, hs, P, generator=g, dtype=dtype).transpose(2, 3)
                              for _ in range(2))  # (B, nh, P, hs), non-contiguous
        else:
            past_k, past_v = (torch.randn(B, nh, P, hs, generator=g, dtype=dtype) for _ in range(2))
        return q, 2.0 * k, v, 2.0 * past_k, past_v  # larger keys: an unscaled softmax differs clearly

    return make


VISIBLE = (
    Case("three tokens cached, two heads", _case(0, 2, 2, 3, 4)),
    Case("the first step: an empty cache", _case(1, 2, 2, 0, 4)),
    Case("float64", _case(2, 2, 3, 5, 8, torch.float64)),
)


def _attend(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scale: float = 1.0,
            dim: int = -1) -> torch.Tensor:
    scores = q.double() @ keys.double().transpose(-2, -1) * scale / math.sqrt(q.shape[-1])  # (B, nh, 1, n)
    return torch.softmax(scores, dim=dim) @ values.double()  # (B, nh, 1, hs)


def _check_cache(got: torch.Tensor, want: torch.Tensor, new: torch.Tensor, past: torch.Tensor, name: str) -> None:
    require_shape(got, tuple(want.shape), f"the {name} to cache should be (B, nh, P + 1, hs): the cached ones "
                  "and the new token's, along the time axis (dim 2)")
    if close(got, want, want.dtype):
        return
    front = torch.cat([new, past], dim=2)
    if past.shape[2] and close(got, front, want.dtype):
        raise CheckFailed(f"the new {name[:-1]} is put before the cached ones: append it at the end (dim 2), "
                          "so that the cache stays in the order of the positions")
    raise CheckFailed(f"the {name} to cache should be the cached ones followed by the new token's")


def _check(fn: Callable) -> Callable:
    def check_one(q, k, v, past_k, past_v):
        before = snapshot(q, k, v, past_k, past_v)
        result = run_student(fn, q, k, v, past_k, past_v, what="cached_attention_step")
        require_unchanged(before, q, k, v, past_k, past_v,
                          message="cached_attention_step changed its inputs in place: the caller's cache must "
                                  "stay as it was; return the extended keys and values instead")
        if not isinstance(result, tuple) or len(result) != 3:
            raise CheckFailed("cached_attention_step should return a tuple (out, keys, values)")
        out, keys, values = (require_tensor(x, f"{name} returned by cached_attention_step")
                             for x, name in zip(result, ("out", "keys", "values"), strict=True))
        want_out, want_k, want_v = GPT.cached_attention(q, k, v, past_k, past_v)
        if keys.shape == want_k.shape and close(keys, want_v, q.dtype) and close(values, want_k, q.dtype):
            raise CheckFailed("the keys and values are swapped: keys extends past_k with k, values past_v with v")
        if keys.shape[2] == past_k.shape[2] and past_k.shape[2] > 0 and close(keys, past_k, q.dtype):
            raise CheckFailed("the cache was not extended: return the cached keys and values with the new "
                              "token's appended, for the next step to use")
        _check_cache(keys, want_k, k, past_k, "keys")
        _check_cache(values, want_v, v, past_v, "values")
        require_shape(out, tuple(want_out.shape), "out should be (B, nh, 1, hs): one output per head for the "
                      "new token")
        if not close(out, want_out, q.dtype):
            raise first_match(out, [
                ("the new token does not attend to itself: its own key and value belong with the cached ones",
                 lambda: _attend(q, past_k, past_v) if past_k.shape[2] else None),
                ("the scores are not scaled: divide q k^T by sqrt(hs) before the softmax",
                 lambda: _attend(q, want_k, want_v, scale=math.sqrt(q.shape[-1]))),
                ("the softmax runs over the wrong axis: the weights of one query sum to 1 over the P + 1 keys "
                 "(the last axis of the scores)", lambda: _attend(q, want_k, want_v, dim=-2)),
            ], "out is not the new token's attention over the cached keys and its own", q.dtype)

    return check_one


check_cached_attention_step = Part(
    name="check_cached_attention_step",
    visible=VISIBLE,
    check=_check,
    forbidden=("attnbook.gpt.layers.cached_attention", "attnbook.gpt.layers.KVCache"),
)
