"""Language modelling around a GPT: training windows, the shifted loss written out, perplexity, and
:func:`train_lm`, chapter 4's recipe for training one on a token stream.

Shape legend: ``B`` batch, ``T`` sequence length, ``V`` vocabulary size.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attnbook._checks import positive_int, token_ids
from attnbook.runtime import seed_everything
from attnbook.train import History, fit

from .model import GPT, IGNORE_INDEX, GPTConfig

__all__ = ["random_batch", "next_token_loss", "stream_loss", "perplexity", "train_lm"]


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

    >>> from attnbook.gpt import GPTConfig
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

    >>> from attnbook.gpt import GPTConfig
    >>> _ = torch.manual_seed(0)
    >>> model = GPT(GPTConfig.preset("gpt-nano", vocab_size=10, block_size=8))
    >>> 9.0 < perplexity(model, torch.randint(10, (100,))) < 11.0
    True
    """
    return math.exp(stream_loss(model, data, batch_size=batch_size, max_tokens=max_tokens))


def train_lm(
    ids: torch.Tensor,
    vocab_size: int,
    val_ids: torch.Tensor | None = None,
    *,
    steps: int,
    preset: str = "cpu-fast",
    batch_size: int = 16,
    lr: float = 6e-3,
    evals: int = 4,
    seed: int = 0,
    device: torch.device | str | None = "cpu",
) -> tuple[GPT, History]:
    """A GPT trained on a token stream ``ids`` (N,) with chapter 4's recipe: ``(model, history)``.

    ``seed_everything(seed)``, then a ``GPTConfig.preset(preset)`` model for
    ``vocab_size`` tokens (the tokenizer's), then ``steps`` AdamW steps
    (weight decay 0.1 on the matrices, peak ``lr``, 30 warmup steps, cosine
    decay) on :func:`random_batch` windows of ``block_size`` drawn with a
    generator seeded ``seed``. With ``val_ids`` the history logs
    ``val_loss`` (:func:`stream_loss`) ``evals`` times.

    >>> stream = torch.arange(300) % 10                              # 0 1 2 ... 9 0 1 ...
    >>> model, history = train_lm(stream, 10, stream[:100], steps=10, preset="gpt-nano", batch_size=2,
    ...                           lr=3e-2, evals=1)
    >>> history.steps[-1], history.last["val_loss"] < 1.0            # a cycle of ten: far below ln 10
    (10, True)
    """
    ids = token_ids("ids", ids, positive_int("vocab_size", vocab_size))
    seed_everything(seed)
    model = GPT(GPTConfig.preset(preset, vocab_size=vocab_size))
    block_size = model.config.block_size
    g = torch.Generator().manual_seed(seed)
    eval_fn = None if val_ids is None else lambda m: {"val_loss": stream_loss(m, val_ids)}
    history = fit(model, lambda m, batch: m(*batch)[1],
                  lambda: random_batch(ids, batch_size, block_size, generator=g),
                  steps=steps, optimizer=model.configure_optimizers(lr, weight_decay=0.1),
                  schedule="cosine", warmup_steps=30, device=device, progress=False,
                  eval_fn=eval_fn, eval_every=None if val_ids is None else steps // positive_int("evals", evals))
    return model, history
