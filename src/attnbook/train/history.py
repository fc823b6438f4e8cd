"""What a run of :func:`~attnbook.train.fit` leaves behind: its :class:`History`, and weight :class:`Snapshots`."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from attnbook._checks import positive_int, positive_number

__all__ = ["History", "Snapshot", "Snapshots"]


@dataclass(repr=False)
@dataclass(repr=False)
class History:
    """What :func:`fit` records: one entry per step, one record per evaluation.

    ``evals`` holds dicts such as ``{"step": 100, "accuracy": 0.93}``;
    ``seconds`` is wall-clock time including evaluation; ``stopped_by`` is
    ``"steps"`` or ``"time"`` (the ``max_seconds`` budget ran out).

    >>> h = History(steps=[1, 2], train_loss=[0.9, 0.5], lr=[1e-3, 1e-3],
    ...             evals=[{"step": 1, "acc": 0.6}, {"step": 2, "acc": 0.8}])
    >>> h.last
    {'step': 2, 'train_loss': 0.5, 'acc': 0.8}
    >>> h.metric("acc")
    ([1, 2], [0.6, 0.8])
    >>> h.best("acc")["step"]
    2
    """

    steps: list[int] = field(default_factory=list)  # 1-based step number of each entry below
    train_loss: list[float] = field(default_factory=list)  # loss of the batch at that step
    lr: list[float] = field(default_factory=list)  # learning rate (first param group) at that step
    evals: list[dict[str, float]] = field(default_factory=list)  # {"step": s, metric: value, ...}
    seconds: float = 0.0  # wall-clock seconds of the whole run
    examples: int = 0  # training examples seen (first dimension of each batch's first tensor)
    stopped_by: str = "steps"  # "steps" or "time"

    @property
    def examples_per_second(self) -> float:
        """Training throughput, evaluation time included."""
        return self.examples / self.seconds if self.seconds > 0 else 0.0

    @property
    def last(self) -> dict[str, float]:
        """The last step, its train loss and the last evaluation's metrics in one dict."""
        out: dict[str, float] = {}
        if self.steps:
            out.update(step=self.steps[-1], train_loss=self.train_loss[-1])
        if self.evals:
            out.update({k: v for k, v in self.evals[-1].items() if k != "step"})
        return out

    def metric(self, name: str) -> tuple[list[int], list[float]]:
        """``(steps, values)`` of ``"train_loss"`` or of one evaluation metric."""
        if name == "train_loss":
            return list(self.steps), list(self.train_loss)
        records = [r for r in self.evals if name in r]
        if not records:
            names = sorted({k for r in self.evals for k in r if k != "step"} | {"train_loss"})
            raise KeyError(f"no metric {name!r} in this history; it has {names}")
        return [int(r["step"]) for r in records], [r[name] for r in records]

    def best(self, name: str, mode: str = "max") -> dict[str, float]:
        """The evaluation record with the highest (``mode="max"``) or lowest (``"min"``) ``name``.

        Pass ``mode="min"`` for losses, perplexity or bits per dimension.
        """
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        steps, values = self.metric(name)
        pick = max if mode == "max" else min
        i = pick(range(len(values)), key=values.__getitem__)
        if name == "train_loss":
            return {"step": steps[i], "train_loss": values[i]}
        return dict(next(r for r in self.evals if r.get("step") == steps[i] and name in r))

    def __repr__(self) -> str:
        last = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in self.last.items())
        return f"History({last}, seconds={self.seconds:.1f}, stopped_by={self.stopped_by!r})"


class Snapshot(NamedTuple):
    """One copy of the weights kept by :class:`Snapshots`."""

    seconds: float  # clock seconds from the Snapshots' creation to this copy
    # the eval_fn call that took it: its step is history.evals[index]["step"]
    index: int  # type: ignore[assignment]  # a public field; it hides tuple.index, which nobody calls
    state: dict[str, torch.Tensor]  # a deep copy of model.state_dict()


class Snapshots:
    """An ``eval_fn`` for :func:`fit` that keeps copies of the weights as training goes.

    Make it just before calling ``fit`` (its seconds count from its creation,
    on ``clock``) and pass it as ``eval_fn`` with an ``eval_every``; it returns
    no metric. With ``at=None`` every call keeps a copy, in ``taken``. With
    ``at=[10, 20]`` only the latest copy taken at or before each of those times
    is kept, in ``latest`` (time -> :class:`Snapshot`), so a long run holds a
    few copies rather than hundreds. Score the copies after training, outside
    the budget: ``probe.load_state_dict(snapshot.state)``.

    >>> from attnbook.train import fit
    >>> model = torch.nn.Linear(2, 1)
    >>> mse = lambda m, b: m(b).pow(2).mean()
    >>> snaps = Snapshots()
    >>> h = fit(model, mse, [torch.ones(4, 2)], steps=6, eval_fn=snaps, eval_every=2,
    ...         device="cpu", progress=False)
    >>> [h.evals[s.index]["step"] for s in snaps.taken]    # the steps of the copies
    [2, 4, 6]
    >>> torch.equal(snaps.taken[-1].state["weight"], model.weight)
    True
    """

    def __init__(self, at: Sequence[float] | None = None, *, clock: Callable[[], float] = time.perf_counter) -> None:
        if at is not None:
            at = list(at)
            for value in at:
                positive_number("at", value)
        self.at = at
        self.clock = clock
        self.taken: list[Snapshot] = []
        self.latest: dict[float, Snapshot] = {}
        self._calls = 0
        self._start = clock()

    def curve(
        self,
        model: torch.nn.Module,
        history: History,
        score: Callable[[torch.nn.Module], float],
        every: int = 1,
    ) -> list[tuple[int, float, float]]:
        """``(step, seconds, score(copy))`` of every ``every``-th copy in ``taken`` and of the last one.

        Loads each copy into a deep copy of ``model`` (``model`` itself is
        left as it is); ``history`` is what :func:`fit` returned, for the steps.

        >>> from attnbook.train import fit
        >>> model = torch.nn.Linear(2, 1)
        >>> snaps = Snapshots()
        >>> h = fit(model, lambda m, b: m(b).pow(2).mean(), [torch.ones(4, 2)], steps=6,
        ...         eval_fn=snaps, eval_every=1, device="cpu", progress=False)
        >>> [step for step, _, _ in snaps.curve(model, h, lambda m: 0.0, every=4)]
        [4, 6]
        """
        positive_int("every", every)
        if not self.taken:
            raise ValueError("no copies were taken: pass the Snapshots as fit's eval_fn with eval_every, at=None")
        probe, curve = copy.deepcopy(model), []
        picked = set(range(every - 1, len(self.taken), every)) | {len(self.taken) - 1}
        for i in sorted(picked):
            probe.load_state_dict(self.taken[i].state)
            step = int(history.evals[self.taken[i].index]["step"])  # fit logs the step of every eval
            curve.append((step, self.taken[i].seconds, score(probe)))
        return curve

    def __call__(self, model: torch.nn.Module) -> dict[str, float]:
        seconds, index = self.clock() - self._start, self._calls
        self._calls += 1
        pending = None if self.at is None else [t for t in self.at if seconds <= t]
        if pending == []:
            return {}  # past every requested time: nothing to keep
        snapshot = Snapshot(seconds, index, copy.deepcopy(model.state_dict()))
        if pending is None:
            self.taken.append(snapshot)
        for t in pending or ():
            self.latest[t] = snapshot
        return {}
