"""Part 4: word embeddings as a product, ``embed(ids, W)`` = one_hot(ids) W, and the tied output layer
``tied_logits(h, W)`` = h Wᵀ.

``W`` is the (V, d_model) table whose row ``i`` is the vector of word ``i``
(``nn.Embedding``'s weight: the transpose of the chapter's d × V matrix E).
The check of ``embed`` compares with the row lookup ``W[ids]`` (the same
numbers) and then makes sure that the answer *is* a product, by what only a
product does. It adds zero terms: every table holds a -0.0 in a row that an id
uses (and a positive entry in another row of that column), which a lookup copies
and a product turns into 0.0 (-0.0 + 0.0 = 0.0, in any order of summation). So
no case looks different from the others: an answer that multiplies only when it
sees something unusual in ``W`` looks rows up on an ordinary table and fails
there. And it reads every row: on a probe table with NaN in the rows that no id
uses, a product gives NaN everywhere (0 × NaN is NaN) while a lookup, even one
that adds 0.0, does not. No √d_model scale belongs to either function (the model
applies it afterwards).

>>> kind, ids, W = _embed_case(0, 2, 5, 7, 7)()
>>> kind, tuple(ids.shape), tuple(W.shape), int(ids.max())
('embed', (2, 5), (7, 7), 6)
>>> r = int(ids[0, 0]); float(W[r, 0]), bool(W[r, 0].signbit()), bool(W[(r + 1) % 7, 0] > 0)
(-0.0, True, True)
>>> kind, ids, W = _probe_case(1, 2, 4, 9, 6)()
>>> bool(W[int(ids.max()) + 1:].isnan().all()), bool(W[: int(ids.max()) + 1].isnan().any())
(True, False)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from .._compare import close, require_tensor
from .._core import run_student
from .._shared import randn_strided
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot

FORBIDDEN = ("torch.nn.functional.embedding", "torch.nn.Embedding", "torch.embedding")


def _ids(g: torch.Generator, B: int, T: int, V: int, top: int | None = None) -> torch.Tensor:
    """(B, T) ids below ``top`` (default V); the largest allowed id occurs, so the one-hot width shows."""
    top = V if top is None else top
    ids = torch.randint(top, (B, T), generator=g)  # (B, T)
    ids[0, -1] = top - 1
    return ids


def _negative_zero(W: torch.Tensor, ids: torch.Tensor) -> None:
    """-0.0 at column 0 of the row of ``ids[0, 0]``, a positive entry at column 0 of the next row, in place.

    A product one_hot @ W sums -0.0 with +0.0 terms (0 times that positive entry) and gives +0.0 whatever the
    order; a lookup copies the -0.0.
    """
    r = int(ids[0, 0])
    other = (r + 1) % W.shape[0]
    W[r, 0] = -0.0
    W[other, 0] = W[other, 0].abs() + 0.1


def _embed_case(seed, B, T, V, d, dtype=torch.float32, *, top=None, strided=False):
    """ids (B, T) and W (V, d), W with a -0.0 in a row an id uses (:func:`_negative_zero`); ``strided``: W is
    the transpose of a (d, V) tensor and ids of a (T, B) one."""

    def make():
        g = torch.Generator().manual_seed(seed)
        W = randn_strided((V, d), g, dtype, (0, 1) if strided else None)
        ids = _ids(g, B, T, V, top)
        _negative_zero(W, ids)
        return "embed", ids.t().contiguous().t() if strided else ids, W

    return make


def _probe_case(seed, B, T, V, d):
    """ids use words 0 .. V - 3 only; the rows of the two unused words are NaN."""

    def make():
        g = torch.Generator().manual_seed(seed)
        W = torch.randn(V, d, generator=g)  # (V, d)
        W[V - 2:] = float("nan")
        return "probe", _ids(g, B, T, V, top=V - 2), W

    return make


def _tied_case(seed, B, T, V, d, dtype=torch.float32, *, strided=False):
    """h (B, T, d) and W (V, d); ``strided``: h is a (T, B, d) tensor transposed, W a (d, V) one."""

    def make():
        g = torch.Generator().manual_seed(seed)
        h = randn_strided((B, T, d), g, dtype, (0, 1) if strided else None)
        W = randn_strided((V, d), g, dtype, (0, 1) if strided else None) / math.sqrt(d)
        return "tied", h, W

    return make


# ------------------------------------------------------------------ diagnosis


def _rows(W: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Row ``ids[b, t]`` of ``W`` for every position, zeros where the id falls outside 0 .. V - 1."""
    V = W.shape[0]
    inside = (ids >= 0) & (ids < V)
    return W.double()[ids.clamp(0, V - 1)] * inside[..., None]  # (B, T, d)


def _embed_problem(out: torch.Tensor, ids: torch.Tensor, W: torch.Tensor) -> str:
    d = W.shape[1]
    known = [
        ("the embeddings were multiplied by sqrt(d_model): this part asks for one_hot(ids) @ W alone (the "
         "model scales the embeddings itself, afterwards)", lambda: _rows(W, ids) * math.sqrt(d)),
        ("the embeddings were divided by sqrt(d_model): this part asks for one_hot(ids) @ W alone, with no scale",
         lambda: _rows(W, ids) / math.sqrt(d)),
        ("each id selects the wrong row, one off: id i is the one-hot vector with its 1 at position i "
         "(counting from 0), which selects row i of W", lambda: _rows(W, ids - 1)),
        ("each id selects the wrong row, one off: id i is the one-hot vector with its 1 at position i "
         "(counting from 0), which selects row i of W", lambda: _rows(W, ids + 1)),
    ]
    if W.shape[0] == d:
        known.insert(0, ("the word vectors are the rows of W (V, d_model), which is Eᵀ: the result is "
                         "one_hot(ids) @ W, row ids[t] of W, not a column of W",
                         lambda: _rows(W.t(), ids)))
    for message, compute in known:
        if close(out.detach().double(), compute(), W.dtype):
            return message
    return "the embeddings differ from one_hot(ids) @ W: each position gets the row of W that its id selects"


def _explain_failure(fn: Callable, ids: torch.Tensor, W: torch.Tensor, err: CheckFailed) -> None:
    """If ``embed`` failed because of its one-hot vectors' width or dtype, and works once they fit, say so."""
    if "not implemented" in str(err) or "reference implementation" in str(err):
        return
    width = int(ids.max()) + 1
    retries = []
    if width != W.shape[0]:
        retries.append((W[:width], "embed fails when the largest id is below V - 1: the one-hot vectors need "
                        "V = W.shape[0] entries, one per word of the vocabulary (F.one_hot(ids) alone makes "
                        "ids.max() + 1)"))
    if W.dtype != torch.float32:
        retries.append((W.float(), f"embed fails for a {W.dtype} table W and works for float32: make the one-hot "
                        "vectors in W's dtype (.to(W.dtype)), not float32"))
    for table, message in retries:
        try:
            run_student(fn, ids, table, what="embed")
        except CheckFailed:
            continue
        raise CheckFailed(message) from None


def _check_embed(fn: Callable, ids: torch.Tensor, W: torch.Tensor, *, probe: bool = False) -> None:
    before = snapshot(ids, W)
    try:
        result = run_student(fn, ids, W, what="embed")
    except CheckFailed as err:
        _explain_failure(fn, ids, W, err)
        raise
    out = require_tensor(result, "the result of embed(ids, W)")
    require_unchanged(before[:1], ids, message="embed changed ids in place; build new tensors instead")
    if not probe:
        require_unchanged(before[1:], W, message="embed changed W in place; build new tensors instead")
    B, T = ids.shape
    if tuple(out.shape) in ((B, W.shape[1], T), (W.shape[1], B, T)):
        raise CheckFailed("the word vectors come out along the wrong axis: embed should return (B, T, d_model), "
                          "one row vector per token (one-hot rows (B, T, V) times W (V, d_model))")
    require_shape(out, (B, T, W.shape[1]), "embed should return (B, T, d_model): one row of W per token")
    if out.dtype != W.dtype:
        raise CheckFailed(f"for a {W.dtype} table W the embeddings should be {W.dtype} too: make the one-hot "
                          "vectors in W's dtype")
    if probe:
        if torch.isfinite(out).all():
            raise CheckFailed("embed looks up rows (W[ids], index_select, ...) instead of multiplying one-hot vectors "
                              "with W: a product reads every row of W, so a NaN in a row no id uses must show "
                              "in the result")
        return
    looked_up = W[ids]  # (B, T, d)
    if not close(out, looked_up):
        raise CheckFailed(_embed_problem(out, ids, W))
    if (torch.signbit(out.detach()) & torch.signbit(looked_up) & (looked_up == 0)).any():
        raise CheckFailed("embed looks up rows (W[ids], index_select, ...) instead of multiplying one-hot vectors "
                          "with W: a product adds the zero terms of the other rows to each entry, so a -0.0 in W "
                          "comes out as 0.0, where a lookup copies it")


def _check_tied(fn: Callable, h: torch.Tensor, W: torch.Tensor) -> None:
    before = snapshot(h, W)
    out = require_tensor(run_student(fn, h, W, what="tied_logits"), "the result of tied_logits(h, W)")
    require_unchanged(before, h, W, message="tied_logits changed h or W in place; build new tensors instead")
    B, T, d = h.shape
    V = W.shape[0]
    require_shape(out, (B, T, V), "tied_logits should return (B, T, V): one score per word of the vocabulary")
    if out.dtype != h.dtype:
        raise CheckFailed(f"for {h.dtype} inputs the logits should be {h.dtype} too")
    expected = h.double() @ W.double().t()  # (B, T, V)
    if close(out, expected, h.dtype):
        return
    known = [
        ("the logits were scaled by sqrt(d_model): the tied output layer is h Wᵀ, with no scale",
         expected * math.sqrt(d)),
        ("the logits were divided by sqrt(d_model): the tied output layer is h Wᵀ, with no scale",
         expected / math.sqrt(d)),
        ("tied_logits should return the logits (scores), not probabilities: leave the softmax to the loss",
         torch.softmax(expected, -1)),
        ("tied_logits should return the logits (scores), not log-probabilities: leave the log-softmax to the loss",
         torch.log_softmax(expected, -1)),
    ]
    if V == d:
        known.insert(0, ("the logits are h W, not h Wᵀ: the score of word i is the dot product of h with row i "
                         "of W, so multiply by the transpose", h.double() @ W.double()))
    for message, variant in known:
        if close(out.detach().double(), variant, h.dtype):
            raise CheckFailed(message)
    raise CheckFailed("the logits differ from h Wᵀ: the score of word i is the dot product of h with row i of W")


def _check(embed_fn: Callable, tied_fn: Callable) -> Callable:
    """check_one(kind, *args): "embed" and "probe" check embed, "tied" checks tied_logits."""
    checks = {"embed": functools.partial(_check_embed, embed_fn),
              "probe": functools.partial(_check_embed, embed_fn, probe=True),
              "tied": functools.partial(_check_tied, tied_fn)}
    return lambda kind, *args: checks[kind](*args)


check_embeddings = Part(
    name="check_embeddings",
    visible=(
        Case("embeddings", _embed_case(401, 2, 5, 8, 8)),
        Case("embeddings, a longer vocabulary", _embed_case(402, 3, 4, 11, 6)),
        Case("embeddings, a float64 table", _embed_case(406, 2, 3, 5, 4, torch.float64)),
        Case("embeddings are a product with W", _probe_case(403, 2, 5, 9, 4)),
        Case("tied logits", _tied_case(404, 2, 3, 6, 6)),
        Case("tied logits, a longer vocabulary", _tied_case(405, 2, 4, 10, 4)),
    ),
    check=_check,
    forbidden=FORBIDDEN,
)
