"""Positional encodings: the formula by hand, its properties, and the two modules."""

from __future__ import annotations

import math

import pytest
import torch

from attnbook.positional import (
    LearnedPositions,
    SinusoidalPositions,
    relative_shift_matrix,
    sinusoidal_positions,
)


@pytest.mark.parametrize(("t", "col"), [(0, 0), (0, 1), (1, 0), (1, 1), (7, 4), (7, 5), (50, 14), (99, 31)])
def test_entries_match_the_formula_by_hand(t: int, col: int) -> None:
    d = 32
    P = sinusoidal_positions(100, d, dtype=torch.float64)
    i = col // 2
    angle = t / 10000 ** (2 * i / d)
    expected = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    assert P[t, col].item() == pytest.approx(expected, abs=1e-12)


def test_small_table_worked_by_hand() -> None:
    # d = 2: a single pair with frequency 1: rows are (sin t, cos t)
    P = sinusoidal_positions(3, 2, dtype=torch.float64)
    expected = torch.tensor(
        [[0.0, 1.0], [math.sin(1), math.cos(1)], [math.sin(2), math.cos(2)]], dtype=torch.float64
    )
    torch.testing.assert_close(P, expected)


def test_shape_dtype_device() -> None:
    P = sinusoidal_positions(7, 6)
    assert P.shape == (7, 6) and P.dtype == torch.float32 and P.device.type == "cpu"
    assert sinusoidal_positions(7, 6, dtype=torch.float64).dtype == torch.float64


def test_bounded_and_unique_rows() -> None:
    P = sinusoidal_positions(512, 64, dtype=torch.float64)
    assert P.abs().max() <= 1.0
    # every row has norm sqrt(d/2): each (sin, cos) pair has norm 1
    torch.testing.assert_close(P.norm(dim=1), torch.full((512,), math.sqrt(32), dtype=torch.float64))
    dist = torch.cdist(P, P) + torch.eye(512, dtype=torch.float64) * 1e9
    assert dist.min() > 1e-3  # no two positions share a vector
    assert torch.unique(P.round(decimals=6), dim=0).shape[0] == 512


def test_distance_depends_only_on_offset() -> None:
    P = sinusoidal_positions(64, 16, dtype=torch.float64)
    d = (P[10] - P[13]).norm(), (P[40] - P[43]).norm()
    torch.testing.assert_close(d[0], d[1])


@pytest.mark.parametrize("k", [1, 3, 17, -5, 0])
def test_shift_is_a_fixed_linear_map(k: int) -> None:
    d, T = 16, 64
    P = sinusoidal_positions(T, d, dtype=torch.float64)
    M = relative_shift_matrix(k, d, dtype=torch.float64)
    lo, hi = max(0, -k), T - max(0, k)
    for t in range(lo, hi):
        torch.testing.assert_close(M @ P[t], P[t + k], atol=1e-10, rtol=0)
    # a rotation: orthogonal, and M_{-k} undoes M_k
    torch.testing.assert_close(M @ M.T, torch.eye(d, dtype=torch.float64))
    torch.testing.assert_close(
        relative_shift_matrix(-k, d, dtype=torch.float64) @ M, torch.eye(d, dtype=torch.float64)
    )


def test_shift_matrix_composes() -> None:
    M2, M3, M5 = (relative_shift_matrix(k, 8, dtype=torch.float64) for k in (2, 3, 5))
    torch.testing.assert_close(M2 @ M3, M5)


def test_shift_matrix_worked_by_hand() -> None:
    M = relative_shift_matrix(2, 4, dtype=torch.float64)  # frequencies 1 and 1/100
    c0, s0, c1, s1 = math.cos(2), math.sin(2), math.cos(0.02), math.sin(0.02)
    expected = torch.tensor(
        [[c0, s0, 0, 0], [-s0, c0, 0, 0], [0, 0, c1, s1], [0, 0, -s1, c1]], dtype=torch.float64
    )
    torch.testing.assert_close(M, expected)


def test_odd_width_is_rejected_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="d_model must be even"):
        sinusoidal_positions(4, 5)
    with pytest.raises(ValueError, match="d_model must be even"):
        relative_shift_matrix(1, 5)
    with pytest.raises(ValueError, match="d_model must be even"):
        SinusoidalPositions(8, 5)


@pytest.mark.parametrize(("T", "d"), [(0, 4), (-1, 4), (3, 0), (2.5, 4)])
def test_bad_sizes(T: object, d: object) -> None:
    with pytest.raises(ValueError, match="positive int"):
        sinusoidal_positions(T, d)  # type: ignore[arg-type]


def test_shift_needs_an_int_offset() -> None:
    with pytest.raises(TypeError, match="k must be an int"):
        relative_shift_matrix(1.5, 4)  # type: ignore[arg-type]


def test_sinusoidal_module_adds_the_table() -> None:
    pos = SinusoidalPositions(16, 8)
    x = torch.randn(3, 10, 8)
    torch.testing.assert_close(pos(x), x + sinusoidal_positions(10, 8))
    assert list(pos.parameters()) == [] and "pe" not in pos.state_dict()
    # beyond max_len the formula is still defined
    torch.testing.assert_close(pos(torch.zeros(1, 20, 8))[0], sinusoidal_positions(20, 8))
    # follows the module's dtype
    pos64 = pos.double()
    assert pos64(torch.zeros(1, 4, 8, dtype=torch.float64)).dtype == torch.float64


def test_learned_module_adds_its_table_and_learns() -> None:
    torch.manual_seed(0)
    pos = LearnedPositions(max_len=12, d_model=6)
    x = torch.randn(2, 5, 6, requires_grad=True)
    y = pos(x)
    torch.testing.assert_close(y, x + pos.weight[:5])
    y.sum().backward()
    assert torch.isfinite(pos.weight.grad).all()
    assert (pos.weight.grad[:5] == 2).all() and (pos.weight.grad[5:] == 0).all()  # summed over B=2
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_learned_positions_refuse_long_inputs() -> None:
    pos = LearnedPositions(max_len=4, d_model=6)
    pos(torch.zeros(1, 4, 6))
    with pytest.raises(ValueError, match=r"T=5 exceeds max_len=4"):
        pos(torch.zeros(1, 5, 6))


@pytest.mark.parametrize("module", [SinusoidalPositions(8, 4), LearnedPositions(8, 4)])
def test_modules_check_their_input(module: torch.nn.Module) -> None:
    with pytest.raises(ValueError, match=r"\(B, T, d_model=4\)"):
        module(torch.zeros(2, 3, 5))
    with pytest.raises(ValueError, match=r"\(B, T, d_model=4\)"):
        module(torch.zeros(3, 4))
    with pytest.raises(TypeError, match="floating-point"):
        module(torch.zeros(2, 3, 4, dtype=torch.long))
