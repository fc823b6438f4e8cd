"""Adam's update, measured: why its first steps are large, the reason for a learning-rate warmup.

Adam moves each weight by ``lr * m_hat / (sqrt(v_hat) + eps)``, where ``m_hat``
and ``v_hat`` are bias-corrected moving averages of the gradient and of its
square. :func:`adam_update_rms` reads that ratio, the update per unit of
learning rate, from an optimizer's state after a step. :func:`noise_update_rms`
is what it would be if every gradient were independent noise of one size: 1 on
the first step, where ``m_hat / sqrt(v_hat) = g / |g|``, falling to
``sqrt((1 - beta1) / (1 + beta1))`` (0.23 for ``beta1 = 0.9``) once ``m_hat``
averages over many steps. The first updates are large because the averages
hold few gradients, not because the gradients are large; Liu et al., *On the
Variance of the Adaptive Learning Rate and Beyond* (2020, RAdam) make this
argument for ``v_hat`` and show that a warmup works by keeping those steps
small. Sibling: :mod:`attnbook.train.schedule` (the warmup schedules).
"""

from __future__ import annotations

import math

import torch

from attnbook._checks import number_in, positive_int

__all__ = ["adam_update_rms", "noise_update_rms"]


@torch.no_grad()
def adam_update_rms(optimizer: torch.optim.Optimizer) -> float:
    """Root mean square over every weight of ``m_hat / (sqrt(v_hat) + eps)``: Adam's last update over ``lr``.

    Reads the state of a ``torch.optim.Adam`` or ``AdamW`` after a step (weight
    decay, which AdamW applies apart, is not included); weights without a
    state yet are left out. Call it after each step, e.g. from
    ``optimizer.register_step_post_hook``.

    >>> w = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    >>> adam = torch.optim.Adam([w], lr=0.1)
    >>> w.grad = torch.tensor([1e-3, 5.0, -0.2])    # very different sizes...
    >>> adam.step()
    >>> round(adam_update_rms(adam), 4)             # ...the same first step: 1 each
    1.0
    """
    if not isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        raise TypeError(f"optimizer must be a torch.optim.Adam or AdamW, got {type(optimizer).__name__}")
    total, count = 0.0, 0
    for group in optimizer.param_groups:
        beta1, beta2 = group["betas"]
        for p in group["params"]:
            state = optimizer.state.get(p)
            if not state:
                continue
            t = float(state["step"])
            m_hat = state["exp_avg"] / (1 - beta1**t)
            second = state["max_exp_avg_sq"] if group.get("amsgrad") else state["exp_avg_sq"]
            v_hat = second / (1 - beta2**t)
            update = m_hat / (v_hat.sqrt() + group["eps"])
            total += float(update.double().square().sum())
            count += update.numel()
    if count == 0:
        raise ValueError("the optimizer has taken no step yet: there is no update to measure")
    return math.sqrt(total / count)


def noise_update_rms(step: int, beta1: float = 0.9) -> float:
    """:func:`adam_update_rms` at (1-based) ``step`` if the gradients were independent noise of one size.

    ``m_hat`` is then a weighted mean of ``step`` noise draws with weights
    ``w_i`` summing to 1 and ``v_hat`` about their variance, so the update is
    ``sqrt(sum w_i^2) = sqrt((1 - b) (1 + b^t) / ((1 + b) (1 - b^t)))`` with
    ``b = beta1`` and ``t = step``:

    >>> [round(noise_update_rms(t), 3) for t in (1, 2, 10, 100)]
    [1.0, 0.708, 0.33, 0.229]
    """
    positive_int("step", step)
    b = number_in("beta1", beta1, 0, 1)
    return math.sqrt((1 - b) * (1 + b**step) / ((1 + b) * (1 - b**step)))
