"""Sampling from a GPT: the next-token distribution (temperature, top-k, top-p) and ``generate``.

Shape legend: ``B`` batch, ``T`` sequence length, ``V`` vocabulary size.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attnbook._checks import int_at_least, token_ids

from .layers import KVCache
from .model import GPT

__all__ = ["next_token_probs", "generate"]


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
    use_cache: bool = False,
) -> torch.Tensor:
    """Extend ``ids`` (B, T) -- or one sequence (T,) -- by ``max_new_tokens`` sampled tokens.

    Each step feeds the last ``block_size`` tokens (the model's context; older
    ones are cropped), takes the logits at the last position and draws the
    next token from :func:`next_token_probs` with ``torch.multinomial``.
    ``greedy=True`` or ``temperature=0`` takes the argmax instead. Pass a
    seeded ``generator`` (on the model's device) to repeat a draw. Runs in
    eval mode and restores the model's mode. Returns (B, T + max_new_tokens)
    ids (or (T + max_new_tokens,) for a 1-D prompt).

    ``use_cache=True`` keeps every block's keys and values in a
    :class:`~attnbook.gpt.layers.KVCache`: the prompt runs once, then each step
    runs the model on the one new token, and its logits equal the uncached
    step's (to rounding). Once the context is full (``block_size`` tokens), a
    model with learned positions must see the cropped window at positions
    ``0 ..`` again, so from then on each step runs the window afresh, as
    without a cache. The default is off, so that a seeded draw repeats the
    book's samples exactly.

    >>> from attnbook.gpt import GPTConfig
    >>> _ = torch.manual_seed(0)
    >>> model = GPT(GPTConfig.preset("gpt-nano", vocab_size=10, block_size=4))
    >>> out = generate(model, torch.tensor([[1, 2, 3]]), max_new_tokens=5, top_k=3)
    >>> out.shape, out[0, :3].tolist()           # the prompt, then 5 new tokens
    (torch.Size([1, 8]), [1, 2, 3])
    >>> g = lambda: torch.Generator().manual_seed(7)
    >>> torch.equal(generate(model, out, 5, generator=g()), generate(model, out, 5, generator=g()))
    True
    >>> torch.equal(generate(model, out[:, :2], 4, greedy=True),          # the cache changes no token
    ...             generate(model, out[:, :2], 4, greedy=True, use_cache=True))
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
    cache = None
    try:
        for _ in range(max_new_tokens):
            if use_cache and cache is not None and len(cache) < block_size:
                logits, _ = model(ids[:, -1:], cache=cache)  # (B, 1, V): the new token only
            else:  # no cache, the first step, or a full context: run the last block_size tokens
                cache = KVCache(model.config.n_layer) if use_cache else None
                logits, _ = model(ids[:, -block_size:], cache=cache)  # (B, T', V)
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
