"""Argument checks shared by the modules: one clear error message per kind of mistake.

Each check returns its (validated) argument so that it can wrap an assignment,
and raises ``TypeError`` for a value of the wrong kind or ``ValueError`` for
one of the right kind but out of range, naming the argument and what was given.

>>> positive_int("n_layer", 0)
Traceback (most recent call last):
...
ValueError: n_layer must be a positive int, got 0
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def positive_int(name: str, value: object) -> int:
    """``value`` if it is an int >= 1 (``True`` is not an int here)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def positive_number(name: str, value: object) -> float:
    """``value`` as a float if it is a number > 0 (an int or a float, not a bool).

    >>> positive_number("lr", 0)
    Traceback (most recent call last):
    ...
    ValueError: lr must be a positive number, got 0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def an_int(name: str, value: object) -> int:
    """``value`` if it is an int (not a bool); a ``TypeError`` otherwise.

    >>> an_int("seed", 1.0)
    Traceback (most recent call last):
    ...
    TypeError: seed must be an int, got float 1.0
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    return value


def int_at_least(name: str, value: object, low: int) -> int:
    """``value`` if it is an int >= ``low`` (``positive_int`` is ``low = 1``).

    >>> int_at_least("n_layers", -1, 0)
    Traceback (most recent call last):
    ...
    ValueError: n_layers must be an int >= 0, got -1
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return value


def int_in_range(name: str, value: object, low: int, high: int, meaning: str = "") -> int:
    """``value`` if it is an int in ``low .. high`` (both included); ``meaning`` explains the range.

    >>> int_in_range("k", 5, 0, 4, " (the number of encoder layers)")
    Traceback (most recent call last):
    ...
    ValueError: k must be an int in 0 .. 4 (the number of encoder layers), got 5
    """
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an int in {low} .. {high}{meaning}, got {value!r}")
    return value


def number_in(name: str, value: object, low: float, high: float, ends: str = "[)") -> float:
    """``value`` as a float if it is a number between ``low`` and ``high``.

    ``ends`` says which ends belong to the interval, as in ``"[)"`` (the
    default), ``"(]"``, ``"[]"`` or ``"()"``.

    >>> number_in("top_p", 0, 0, 1, "(]")
    Traceback (most recent call last):
    ...
    ValueError: top_p must be a number in (0, 1], got 0
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        above = value >= low if ends[0] == "[" else value > low
        below = value <= high if ends[1] == "]" else value < high
        if above and below:
            return float(value)
    raise ValueError(f"{name} must be a number in {ends[0]}{low:g}, {high:g}{ends[1]}, got {value!r}")


def dropout_rate(value: object) -> float:
    """``value`` as a float if it is a probability in [0, 1).

    >>> dropout_rate(0)
    0.0
    """
    return number_in("dropout", value, 0.0, 1.0)


def token_ids(name: str, ids: object, vocab_size: int | None = None, dim: int | None = None) -> torch.Tensor:
    """``ids`` if it is an integer tensor (of ``dim`` axes, ids in ``0 .. vocab_size - 1``).

    >>> token_ids("idx", torch.tensor([[1, 5]]), vocab_size=4)
    Traceback (most recent call last):
    ...
    ValueError: idx holds ids in [1, 5], outside the vocabulary 0 .. 3
    """
    if (not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.dtype.is_complex
            or ids.dtype == torch.bool):
        got = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(f"{name} must be an integer tensor of token ids, got {got}")
    if dim is not None and (ids.dim() != dim or ids.numel() == 0):
        want = "(B, length)" if dim == 2 else "(B,)" if dim == 1 else f"{dim} axes"
        raise ValueError(f"{name} must have shape {want} and not be empty, got {tuple(ids.shape)}")
    if vocab_size is not None and ids.numel():
        lo, hi = (int(v) for v in torch.aminmax(ids))  # one device sync for both ends
        if lo < 0 or hi >= vocab_size:
            raise ValueError(f"{name} holds ids in [{lo}, {hi}], outside the vocabulary 0 .. {vocab_size - 1}")
    return ids


def float_tensor(
    name: str, x: object, shape: tuple[int | None, ...] | None = None, described: str = ""
) -> torch.Tensor:
    """``x`` if it is a floating tensor whose shape matches ``shape`` (``None`` = any size there).

    >>> float_tensor("x", torch.zeros(2, 3), (None, 4), "(B, d_model=4)")
    Traceback (most recent call last):
    ...
    ValueError: x must have shape (B, d_model=4), got (2, 3)
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"{name} must be a floating-point tensor, got {got}")
    if shape is not None and (
        x.dim() != len(shape) or any(want is not None and got != want for got, want in zip(x.shape, shape, strict=True))
    ):
        raise ValueError(f"{name} must have shape {described or shape}, got {tuple(x.shape)}")
    return x


def float_sequence(name: str, x: object) -> torch.Tensor:
    """``x`` if it is a floating tensor of shape (..., length, width): an attention's query, keys or values.

    >>> float_sequence("q", torch.zeros(3))
    Traceback (most recent call last):
    ...
    ValueError: q must have shape (..., length, width), got (3,)
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., length, width), got {tuple(x.shape)}")
    return x


def distinct_characters(name: str, chars: Iterable[object]) -> list[str]:
    """``chars`` as a list of distinct one-character strings; a ValueError naming ``name`` otherwise.

    >>> distinct_characters("chars", "abc")
    ['a', 'b', 'c']
    >>> distinct_characters("chars", ["a", "bc"])
    Traceback (most recent call last):
    ...
    ValueError: every entry of chars must be a single character, got 'bc'
    """
    out: list[str] = []
    for c in chars:
        if not isinstance(c, str) or len(c) != 1:
            raise ValueError(f"every entry of {name} must be a single character, got {c!r}")
        out.append(c)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} must not repeat a character")
    return out
