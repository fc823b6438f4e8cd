"""Part 7: a linear probe in closed form, ``ridge_probe(train_feats, train_labels, test_feats, test_labels, l2)``.

The student standardises with the training set's statistics, appends a bias
column, solves ``(X^T X + l2 I) W = X^T Y`` for one-hot targets and returns
the test accuracy. A right answer may solve the system any stable way and in
any float precision, so an accuracy within ``TOLERANCE`` (two test rows of
200) of the reference passes. The named mistakes: the test set standardised
with its own statistics, the training accuracy returned, no bias column, no
standardisation, the penalty ignored, a mean over all features at once, a
constant feature's std left unclamped (0 / 0), another default penalty.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_unchanged, snapshot
from ._common import IG

__all__ = ["check_ridge_probe"]

TOLERANCE = 0.011  # two rows of 200 may fall the other way under another solver
L2 = 1e-3  # the statement's default penalty: ridge_probe(..., l2=1e-3)


def _case(seed: int, n_train: int, D: int, K: int, l2: float | None, *, shift: float = 0.0, scale: float = 1.0,
          offset: float = 0.0, prior: tuple[float, ...] | None = None, dtype: torch.dtype = torch.float32,
          strided: bool = False, constant: bool = False, spread: float = 0.0) -> Callable[[], tuple]:
    """Features of K Gaussian classes (N, D); ``shift`` moves the test set, ``scale`` stretches some features,
    ``spread`` moves the mean of feature j by ``spread * j`` (features centred far apart),
    ``prior`` gives the classes unequal shares, ``constant`` makes the last feature 1 everywhere (its standard
    deviation 0). ``l2=None`` calls ``ridge_probe`` without ``l2``: its default."""

    def make():
        g = torch.Generator().manual_seed(seed)
        centres = 0.5 * torch.randn(K, D, generator=g, dtype=torch.float64)  # overlapping classes

        def draw(n):
            p = torch.full((K,), 1.0 / K) if prior is None else torch.tensor(prior)
            labels = torch.multinomial(p, n, replacement=True, generator=g)
            return centres[labels] + torch.randn(n, D, generator=g, dtype=torch.float64), labels

        x_train, y_train = draw(n_train)
        x_test, y_test = draw(200)
        x_test = x_test + shift
        stretch = torch.ones(D, dtype=torch.float64)
        stretch[: D // 2] = scale  # some features on a much larger scale
        x_train, x_test = x_train * stretch + offset, x_test * stretch + offset
        if spread:
            apart = spread * torch.arange(D, dtype=torch.float64)  # (D,): feature j's mean moved by spread * j
            x_train, x_test = x_train + apart, x_test + apart
        if constant:  # a feature that never changes: std 0, clamped to 1e-8, so z = 0
            x_train[:, -1], x_test[:, -1] = 1.0, 1.0
        if strided:
            x_train = x_train.t().contiguous().t()
        return x_train.to(dtype), y_train, x_test.to(dtype), y_test, l2

    return make


VISIBLE = (
    Case("three classes", _case(0, 300, 6, 3, 1e-3)),
    Case("a penalty that matters", _case(20, 40, 24, 3, 20.0)),
    Case("classes of unequal size", _case(21, 200, 4, 3, 1e-3, prior=(0.8, 0.15, 0.05))),
    Case("features centred far apart, a strong penalty", _case(46, 80, 6, 3, 30.0, spread=3.0)),
    Case("a feature that never changes", _case(22, 100, 4, 3, 1e-3, constant=True)),
    # ridge_probe(...) without l2: the statement's signature gives l2=1e-3
    Case("the default penalty", _case(23, 40, 30, 3, None)),
)


def _variants(x_train, y_train, x_test, y_test, l2, default=False):
    """(message, accuracy) of the mistakes, computed by the reference's recipe with one step changed;
    ``default``: ridge_probe was called without l2, so another default penalty comes first."""

    def probe(*, test_stats=False, train_acc=False, bias=True, scaled=True, penalty=l2, mean_all=False,
              clamp=True):
        x = x_train.double()
        mean, std = (x.mean() if mean_all else x.mean(0)), x.std(0).clamp(min=1e-8 if clamp else -math.inf)

        def design(f, own=False):
            f = f.double()
            m, s = (f.mean(0), f.std(0).clamp(min=1e-8)) if own else (mean, std)
            z = (f - m) / s if scaled else f
            return torch.cat([z, torch.ones_like(z[:, :1])], 1) if bias else z

        X = design(x)
        Y = F.one_hot(y_train, int(y_train.max()) + 1).double()
        try:
            W = torch.linalg.solve(X.T @ X + penalty * torch.eye(X.shape[1], dtype=X.dtype), X.T @ Y)
        except torch.linalg.LinAlgError:  # no penalty and a constant feature: this mistake has no answer
            return math.nan
        feats, labels = (x_train, y_train) if train_acc else (x_test, y_test)
        return float(((design(feats, own=test_stats) @ W).argmax(1) == labels).double().mean())

    others = [("called without l2, the probe should use the default penalty, l2=1e-3 (the statement's signature)",
               probe(penalty=q)) for q in (0.0, 1e-2, 0.1, 1.0, 10.0)] if default else []
    return [
        *others,
        ("the test features were standardised with their own mean and standard deviation: use the training "
         "set's, as if the test set arrived one image at a time", probe(test_stats=True)),
        ("this is the accuracy on the training set: a probe is judged on held-out (test) features",
         probe(train_acc=True)),
        ("the bias column is missing: append a column of ones to the standardised features",
         probe(bias=False)),
        ("the features were not standardised: subtract the training mean and divide by the training standard "
         "deviation first", probe(scaled=False)),
        ("the penalty l2 is ignored: solve (X^T X + l2 I) W = X^T Y", probe(penalty=0.0)),
        ("a feature with the same value in every training row has std 0: clamp the std at 1e-8, so that it "
         "standardises to 0, not to 0 / 0 (NaN)", probe(clamp=False)),
        ("the mean was taken over all features at once: standardise each feature (column) with its own training "
         "mean, the mean over the rows (axis 0)", probe(mean_all=True)),
    ]


def _check(fn: Callable) -> Callable:
    def check(x_train, y_train, x_test, y_test, l2):
        before = snapshot(x_train, y_train, x_test, y_test)
        given = () if l2 is None else (l2,)  # None: the default penalty, l2 left out of the call
        result = run_student(fn, x_train, y_train, x_test, y_test, *given, what="ridge_probe")
        l2 = L2 if l2 is None else l2
        require_unchanged(before, x_train, y_train, x_test, y_test,
                          message="ridge_probe changed its inputs in place; compute on new tensors")
        if isinstance(result, torch.Tensor) and result.numel() == 1:
            result = result.item()
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            raise CheckFailed(f"ridge_probe should return the accuracy as a number, got {type(result).__name__}")
        value = float(result)
        if 1.0 < value <= 100.0:
            raise CheckFailed("return the accuracy as a fraction in [0, 1], not a percentage")
        expected = IG.ridge_probe(x_train, y_train, x_test, y_test, l2=l2)
        if not (math.isfinite(value) and abs(value - expected) <= TOLERANCE):
            raise first_match(value, _variants(x_train, y_train, x_test, y_test, l2, not given),
                              "the accuracy differs from that of the least-squares probe on standardised features "
                              "with a bias column",
                              matches=lambda got, variant: abs(got - variant) <= TOLERANCE < abs(variant - expected))

    return check


check_ridge_probe = Part(name="check_ridge_probe", visible=VISIBLE, check=_check,
                         forbidden=("attnbook.probe.ridge_probe", "attnbook.probe.linear_probe"))
