"""Soft and hard attention from the same alignment scores, and the gradient of hard attention.

Given alignment scores ``e`` (B, S) -- for example from
:meth:`attnbook.attention.AdditiveAttention.scores`, ``-inf`` at padding --
and the values ``h`` (B, S, d_v) they score, the weights ``α = softmax(e)``
are a probability distribution over the S positions:

* :func:`soft_attention` takes the expectation, ``c = Σ_j α_j h_j``:
  deterministic and differentiable (Bahdanau et al., 2015);
* :func:`sample_hard_attention` draws one position ``j ~ α`` and returns
  ``c = h_j``: stochastic, and nothing flows back through the draw
  (Xu et al., 2015, "hard" attention).

The gradient of an expected loss ``E_{j~α}[f(h_j)]`` with respect to the
scores therefore needs a Monte-Carlo estimate. :func:`score_function_gradient`
is the score-function (REINFORCE) estimate, ``∇_e E[f] = E[f(h_j) ∇_e log α_j]``
with ``∇_e log α_j = onehot(j) - α``, and a leave-one-out baseline that keeps
it unbiased and cuts its variance; :func:`exact_gradient` is the exact value,
``α_k (f(h_k) - Σ_j α_j f(h_j))``, for checking it (affordable only because S
is small here). :func:`estimator_errors` measures how far repeated estimates
fall from that value, for growing numbers of draws;
:func:`plain_score_function_gradient` is the same estimate without a baseline
and :func:`baseline_ablation` measures the spread of both.

Shape legend: ``B`` batch, ``S`` positions (keys), ``d_v`` value width,
``n`` Monte-Carlo samples (draws).

References: Xu et al., *Show, Attend and Tell* (2015), section 4.1;
Williams, *Simple statistical gradient-following algorithms* (1992);
Kool, van Hoof & Welling, *Buy 4 REINFORCE samples, get a baseline for free!* (2019).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch

from attnbook._checks import float_tensor, positive_int

__all__ = ["soft_attention", "sample_hard_attention", "score_function_gradient", "exact_gradient", "estimator_errors",
           "plain_score_function_gradient", "baseline_ablation"]


def _check_scores_values(scores: object, values: object) -> tuple[torch.Tensor, torch.Tensor]:
    scores = float_tensor("scores", scores)
    values = float_tensor("values", values)
    if scores.dim() != 2:
        raise ValueError(f"scores must have shape (B, S), got {tuple(scores.shape)}")
    if values.dim() != 3 or values.shape[:2] != scores.shape:
        raise ValueError(
            f"values must have shape (B, S, d_v) with the scores' (B, S) = {tuple(scores.shape)}, "
            f"got {tuple(values.shape)}"
        )
    if bool(scores.eq(float("inf")).any() or scores.isnan().any()):
        raise ValueError("scores must be finite or -inf (-inf marks a position that may not be attended)")
    if not bool(torch.isfinite(scores).any(dim=-1).all()):
        raise ValueError("every row of scores needs at least one finite score (one position to attend)")
    return scores, values


def soft_attention(scores: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(context, weights)``: ``weights = softmax(scores)`` over S, ``context = Σ_j weights_j values_j``.

    ``scores`` (B, S) may hold ``-inf`` (masked positions get weight 0);
    ``values`` is (B, S, d_v); ``context`` is (B, d_v), the expected value
    under the weights.

    >>> scores = torch.tensor([[0.0, 0.0, float("-inf")]])     # the third position is padding
    >>> values = torch.tensor([[[2.0], [4.0], [100.0]]])
    >>> soft_attention(scores, values)
    (tensor([[3.]]), tensor([[0.5000, 0.5000, 0.0000]]))
    """
    scores, values = _check_scores_values(scores, values)
    weights = torch.softmax(scores, dim=-1)  # (B, S), rows sum to 1
    context = (weights.unsqueeze(1) @ values).squeeze(1)  # (B, 1, S) @ (B, S, d_v) -> (B, d_v)
    return context, weights


def sample_hard_attention(
    scores: torch.Tensor, values: torch.Tensor, *, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(context, index)``: one position ``j ~ softmax(scores)`` per row, and ``context = values[b, j]``.

    ``index`` is (B,) ``torch.long``; ``context`` (B, d_v) is one of the
    values, never a mixture. A ``-inf`` score is never drawn. ``generator``
    makes the draw reproducible.

    >>> scores = torch.tensor([[0.0, float("-inf")], [float("-inf"), 0.0]])
    >>> values = torch.tensor([[[1.0], [2.0]], [[3.0], [4.0]]])
    >>> context, index = sample_hard_attention(scores, values)
    >>> index, context                                      # the only position each row may pick
    (tensor([0, 1]), tensor([[1.],
            [4.]]))
    """
    scores, values = _check_scores_values(scores, values)
    weights = torch.softmax(scores, dim=-1)  # (B, S)
    index = torch.multinomial(weights, 1, generator=generator).squeeze(1)  # (B,)
    context = values[torch.arange(values.shape[0], device=values.device), index]  # (B, d_v)
    return context, index


def score_function_gradient(
    scores: torch.Tensor,
    values: torch.Tensor,
    f: Callable[[torch.Tensor], torch.Tensor],
    num_samples: int,
    *,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Monte-Carlo estimate (B, S) of ``∂/∂scores E_{j~softmax(scores)}[f(values_j)]``.

    Draws ``n = num_samples`` hard attentions per row, ``j_1 .. j_n``, and
    returns ``1/(n-1) Σ_i (f_i - f̄) (onehot(j_i) - α)`` with ``f_i =
    f(values[b, j_i])`` and ``f̄`` the mean of the n values of ``f`` of the row.
    This is the score-function estimate with each sample's baseline the mean
    of the *other* samples (``f_i - mean_{m≠i} f_m = n/(n-1) (f_i - f̄)``), so
    it is unbiased, and a constant added to ``f`` changes nothing. ``f`` maps
    contexts (B, d_v) to one loss per row (B,). Needs ``n >= 2``.

    >>> _ = torch.manual_seed(0)
    >>> scores, values = torch.randn(1, 3), torch.randn(1, 3, 2)
    >>> f = lambda c: (c ** 2).sum(-1)                        # (B, d_v) -> (B,)
    >>> estimate = score_function_gradient(scores, values, f, num_samples=20000)
    >>> torch.allclose(estimate, exact_gradient(scores, values, f), atol=0.05)
    True
    >>> score_function_gradient(scores, values, lambda c: c.sum(-1) * 0 + 7.0, 10)  # constant f: no gradient
    tensor([[0., 0., 0.]])
    """
    scores, values = _check_scores_values(scores, values)
    if positive_int("num_samples", num_samples) < 2:
        raise ValueError(f"num_samples must be at least 2 (the baseline needs another sample), got {num_samples}")
    weights = torch.softmax(scores, dim=-1)  # (B, S)
    B, S = scores.shape
    index = torch.multinomial(weights, num_samples, replacement=True, generator=generator)  # (B, n)
    rows = torch.arange(B, device=values.device)[:, None]  # (B, 1)
    contexts = values[rows, index]  # (B, n, d_v)
    losses = torch.stack([f(contexts[:, n]) for n in range(num_samples)], dim=1)  # (B, n)
    if losses.shape != (B, num_samples):
        raise ValueError(f"f must map contexts (B, d_v) to one loss per row (B,), got {tuple(losses.shape[:1])}")
    advantage = losses - losses.mean(dim=1, keepdim=True)  # (B, n): f_i - f̄
    onehot = torch.nn.functional.one_hot(index, S).to(scores.dtype)  # (B, n, S)
    score = onehot - weights.unsqueeze(1)  # (B, n, S): ∇ log α_j for each draw
    return (advantage.unsqueeze(-1) * score).sum(dim=1) / (num_samples - 1)  # (B, S)


def exact_gradient(
    scores: torch.Tensor, values: torch.Tensor, f: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    """The exact ``∂/∂scores Σ_j α_j f(values_j)`` (B, S), ``α = softmax(scores)``: ``α_k (f_k - Σ_j α_j f_j)``.

    Evaluates ``f`` at all S values of each row, so it costs S calls of f on
    (B, d_v) contexts: fine for checking an estimate, not for training.

    >>> scores = torch.zeros(1, 2)                            # α = (0.5, 0.5)
    >>> values = torch.tensor([[[1.0], [3.0]]])
    >>> exact_gradient(scores, values, lambda c: c.sum(-1))   # f = (1, 3), mean 2
    tensor([[-0.5000,  0.5000]])
    """
    scores, values = _check_scores_values(scores, values)
    weights = torch.softmax(scores, dim=-1)  # (B, S)
    losses = torch.stack([f(values[:, j]) for j in range(values.shape[1])], dim=1)  # (B, S): f(h_j)
    mean = (weights * losses.masked_fill(weights == 0, 0.0)).sum(dim=-1, keepdim=True)  # (B, 1): E[f]
    return weights * (losses - mean).masked_fill(weights == 0, 0.0)  # (B, S)


def estimator_errors(
    estimators: Mapping[str, Callable[[int], torch.Tensor]],
    exact: torch.Tensor,
    sizes: Sequence[int],
    repeats: int = 300,
) -> dict[str, list[float]]:
    """Mean squared error of each gradient estimator against ``exact`` (1, S), for each number of draws.

    ``estimators`` maps a name to ``estimate(n) -> (1, S)``, one estimate from
    ``n`` draws. For each ``n`` in ``sizes`` (the outer loop), each estimator
    in turn is called ``repeats`` times; the error is the squared distance to
    ``exact`` summed over S and averaged over the repeats. Returns name ->
    one error per size. Estimators that share a generator draw in that order.

    >>> scores, values = torch.zeros(1, 2), torch.tensor([[[0.0], [2.0]]])
    >>> f = lambda c: c.sum(-1)                                    # exact gradient (-0.5, 0.5)
    >>> gen = torch.Generator().manual_seed(0)
    >>> loo = lambda n: score_function_gradient(scores, values, f, n, generator=gen)
    >>> errors = estimator_errors({"baseline": loo}, exact_gradient(scores, values, f), [2, 64], repeats=50)
    >>> errors["baseline"][1] < errors["baseline"][0]               # more draws, less error
    True
    """
    exact = float_tensor("exact", exact)
    positive_int("repeats", repeats)
    errors: dict[str, list[float]] = {name: [] for name in estimators}
    for n in sizes:
        for name, estimate in estimators.items():
            estimates = torch.cat([estimate(n) for _ in range(repeats)])  # (repeats, S)
            if estimates.shape != (repeats, exact.shape[-1]):
                raise ValueError(f"estimator {name!r} must return (1, S) = (1, {exact.shape[-1]}), "
                                 f"got {tuple(estimates.shape[1:])} per call")
            errors[name].append(((estimates - exact) ** 2).sum(1).mean().item())
    return errors


def plain_score_function_gradient(
    scores: torch.Tensor,
    values: torch.Tensor,
    f: Callable[[torch.Tensor], torch.Tensor],
    num_samples: int,
    *,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The score-function estimate (B, S) *without* a baseline: ``1/n Σ_i f_i (onehot(j_i) - α)``.

    Unbiased like :func:`score_function_gradient`, but a constant ``c`` added
    to ``f`` adds ``c/n Σ_i (onehot(j_i) - α)`` to it: zero on average, noise
    in every single estimate. ``n = num_samples >= 1`` draws per row.

    >>> scores, values = torch.zeros(1, 2), torch.tensor([[[0.0], [2.0]]])
    >>> g = torch.Generator().manual_seed(0)
    >>> plain_score_function_gradient(scores, values, lambda c: c.sum(-1) * 0 + 7.0, 10, generator=g).abs().sum() > 0
    tensor(True)
    """
    scores, values = _check_scores_values(scores, values)
    positive_int("num_samples", num_samples)
    weights = torch.softmax(scores, dim=-1)  # (B, S)
    B, S = scores.shape
    index = torch.multinomial(weights, num_samples, replacement=True, generator=generator)  # (B, n)
    contexts = values[torch.arange(B, device=values.device)[:, None], index]  # (B, n, d_v)
    losses = torch.stack([f(contexts[:, n]) for n in range(num_samples)], dim=1)  # (B, n)
    if losses.shape != (B, num_samples):
        raise ValueError(f"f must map contexts (B, d_v) to one loss per row (B,), got {tuple(losses.shape[:1])}")
    score = torch.nn.functional.one_hot(index, S).to(scores.dtype) - weights.unsqueeze(1)  # (B, n, S)
    return (losses.unsqueeze(-1) * score).mean(dim=1)  # (B, S)


def baseline_ablation(
    scores: torch.Tensor,
    values: torch.Tensor,
    f: Callable[[torch.Tensor], torch.Tensor],
    sizes: Sequence[int],
    repeats: int = 400,
    *,
    generator: torch.Generator | None = None,
) -> dict[str, tuple[list[float], torch.Tensor]]:
    """The score-function estimate of one row's gradient with and without its baseline, for each ``n``.

    ``scores`` (1, S) and ``values`` (1, S, d_v) are one row; for each ``n`` in
    ``sizes``, ``repeats`` independent estimates from ``n`` draws each (the row
    repeated, one call per estimator) by :func:`score_function_gradient` ("with
    baseline") and :func:`plain_score_function_gradient` ("without baseline").
    Returns name -> (spread, mean): the spread is, per ``n``, the root of the
    estimates' variance summed over S (the typical distance of one estimate from
    their mean); the mean (len(sizes), S) is their average, which for both
    should be :func:`exact_gradient`.

    >>> scores, values = torch.zeros(1, 2), torch.tensor([[[0.0], [2.0]]])
    >>> f = lambda c: c.sum(-1) + 10.0                         # a loss with a large constant part
    >>> out = baseline_ablation(scores, values, f, [4, 16], repeats=200, generator=torch.Generator().manual_seed(0))
    >>> spread_with, _ = out["with baseline"]
    >>> spread_without, mean_without = out["without baseline"]
    >>> all(w > 5 * b for w, b in zip(spread_without, spread_with))  # without the baseline: far more spread
    True
    >>> error = (mean_without - exact_gradient(scores, values, f)).abs()   # yet centred on the gradient:
    >>> bool((error < 4 * torch.tensor(spread_without)[:, None] / 200 ** 0.5).all())  # within 4 standard errors
    True
    """
    scores, values = _check_scores_values(scores, values)
    if scores.shape[0] != 1:
        raise ValueError(f"baseline_ablation takes one row, scores (1, S), got {tuple(scores.shape)}")
    positive_int("repeats", repeats)
    if repeats < 2:
        raise ValueError(f"repeats must be at least 2 (a spread needs two estimates), got {repeats}")
    rows, many = scores.expand(repeats, -1), values.expand(repeats, -1, -1)
    estimators = {"with baseline": score_function_gradient, "without baseline": plain_score_function_gradient}
    out: dict[str, tuple[list[float], list[torch.Tensor]]] = {name: ([], []) for name in estimators}
    for n in sizes:
        if positive_int("sizes", n) < 2:
            raise ValueError(f"every size must be at least 2 (the baseline needs another draw), got {n}")
        for name, estimate in estimators.items():
            estimates = estimate(rows, many, f, n, generator=generator)  # (repeats, S)
            out[name][0].append(float(estimates.var(dim=0).sum().sqrt()))
            out[name][1].append(estimates.mean(dim=0))
    return {name: (spread, torch.stack(means)) for name, (spread, means) in out.items()}
