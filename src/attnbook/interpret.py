"""What a small trained model learned, read off its weights: embedding rows and attention heads.

Chapter 2 asks two questions of a character-level model:

* :func:`embedding_geometry` -- which rows of an embedding table (V, d) have
  moved together: the mean cosine similarity within groups of tokens (and over
  all pairs, the baseline), and each query row's nearest neighbours;
* :func:`character_relations` and :func:`relation_mass` -- which relation
  between query and key each attention head follows: masks (N, T, T) for the
  previous character, the start of the current word, the last newline, an
  earlier copy of the same character and the character after such a copy
  (what an induction head reads), and the mean weight a head puts on them.

Attention weights are ``(N, L, nh, T, T)``, queries on the rows, as
``torch.stack(model.attention_weights(), dim=1)`` gives them for
:class:`attnbook.gpt.GPT`; masks are boolean, ``True`` where the key stands in
the relation. Sibling modules: :mod:`attnbook.attention_plots` draws the
weights, :mod:`attnbook.probe` reads features with a linear probe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F

from attnbook._checks import positive_int

__all__ = ["embedding_geometry", "character_relations", "relation_mass"]


def _mean_similarity(unit: torch.Tensor, idx: Sequence[int]) -> float:
    """Mean cosine similarity over the pairs of distinct rows ``idx`` of unit rows (V, d)."""
    sim = unit[idx] @ unit[idx].T  # (n, n)
    n = len(idx)
    return ((sim.sum() - sim.trace()) / (n * (n - 1))).item()


def embedding_geometry(
    weight: torch.Tensor,
    groups: Mapping[str, Sequence[int]],
    queries: Sequence[int],
    candidates: torch.Tensor | None = None,
    k: int = 4,
) -> tuple[dict[str, float], dict[int, list[int]]]:
    """``(similarity, nearest)`` of an embedding table ``weight`` (V, d).

    ``similarity[name]`` is the mean cosine similarity over the pairs of
    distinct rows of each group (ids, at least two), and ``"all pairs"`` the
    same over all V rows; ``nearest[q]`` lists the ``k`` rows most similar to
    row ``q``, itself left out, among ``candidates`` (V,) (default: all).

    >>> weight = torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.0]])   # (V=4, d=2)
    >>> sims, near = embedding_geometry(weight, {"first two": [0, 1]}, queries=[0], k=2)
    >>> round(sims["first two"], 3), round(sims["all pairs"], 3), near
    (0.994, -0.148, {0: [1, 2]})
    """
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError(f"weight must be an embedding table (V, d), got {getattr(weight, 'shape', weight)!r}")
    V = weight.shape[0]
    k = positive_int("k", k)
    if candidates is None:
        candidates = torch.ones(V, dtype=torch.bool)
    if candidates.shape != (V,) or candidates.dtype != torch.bool:
        raise ValueError(
            f"candidates must be a boolean (V,) = ({V},) mask, got {candidates.dtype} {tuple(candidates.shape)}"
        )
    for name, idx in groups.items():
        if len(idx) < 2:
            raise ValueError(f"group {name!r} needs at least two rows to have a pair, got {list(idx)}")
    unit = F.normalize(weight.detach(), dim=1)  # (V, d): rows of length 1
    sims = {name: _mean_similarity(unit, list(idx)) for name, idx in groups.items()}
    sims["all pairs"] = _mean_similarity(unit, list(range(V)))
    nearest = {}
    for q in queries:
        sim = unit @ unit[q]  # (V,)
        sim[~candidates] = -2  # below any cosine: never picked
        nearest[q] = [i for i in sim.topk(k + 1).indices.tolist() if i != q][:k]  # the row itself is first
    return sims, nearest


def character_relations(ids: torch.Tensor, letter: torch.Tensor, newline: torch.Tensor) -> dict[str, torch.Tensor]:
    """Masks (N, T, T), query on the rows, of five relations a key can have to a query in text.

    ``ids`` (N, T) are character ids; ``letter`` and ``newline`` (N, T) say
    which of them are letters (of a word) and line breaks. The relations:
    ``"previous"`` (the key just before), ``"word start"`` (the first letter
    of the query's word, when that is neither the previous character nor the
    query), ``"newline"`` (the latest line break at or before the query),
    ``"same char"`` (an earlier key with the query's character) and
    ``"after copy"`` (an earlier key that follows a copy of the query's
    character: where an induction head looks).

    >>> ids = torch.tensor([[0, 1, 2, 3, 1]])                  # "\\nab a" with 0 = "\\n", 3 = " "
    >>> rel = character_relations(ids, letter=(ids == 1) | (ids == 2), newline=ids == 0)
    >>> rel["same char"][0, 4].nonzero().flatten().tolist(), rel["after copy"][0, 4].nonzero().flatten().tolist()
    ([1], [2])
    """
    if ids.dim() != 2 or letter.shape != ids.shape or newline.shape != ids.shape:
        raise ValueError(
            f"ids, letter and newline must all be (N, T), got {tuple(ids.shape)}, {tuple(letter.shape)}, "
            f"{tuple(newline.shape)}"
        )
    N, T = ids.shape
    pos = torch.arange(T)
    # the first letter of the word containing t: after the last non-letter
    last_gap = torch.where(letter, -1, pos).cummax(dim=1).values
    word_start = last_gap + 1  # (N, T)
    prev_x = torch.cat([torch.full((N, 1), -1), ids[:, :-1]], dim=1)  # (N, T): the character before
    before = pos[None, :] < pos[:, None]  # (T, T) strictly earlier keys
    last_nl = torch.where(newline, pos, -1).cummax(dim=1).values  # (N, T)
    return {  # (N, T, T) each
        "previous": (pos[None, :] == pos[:, None] - 1).expand(N, T, T),
        "word start": (pos[None, None, :] == word_start[:, :, None]) & (letter & (word_start < pos - 1))[:, :, None],
        "newline": pos[None, None, :] == last_nl[:, :, None],
        "same char": (ids[:, None, :] == ids[:, :, None]) & before,
        "after copy": (prev_x[:, None, :] == ids[:, :, None]) & before,
    }


def relation_mass(weights: torch.Tensor, relation: torch.Tensor) -> tuple[torch.Tensor, float]:
    """``(per_head (L, nh), uniform)``: the mean weight on related keys, over queries that have one.

    ``weights`` (N, L, nh, T, T) are causal attention weights and ``relation``
    (N, T, T) a mask from :func:`character_relations`; ``uniform`` is what a
    head that spreads its weight evenly over the past would score.

    >>> w = torch.tensor([[1.0, 0.0], [0.25, 0.75]]).expand(1, 1, 1, 2, 2)   # (N, L, nh, T, T)
    >>> previous = torch.tensor([[[False, False], [True, False]]])          # (N, T, T)
    >>> head, uniform = relation_mass(w, previous)
    >>> head.tolist(), uniform
    ([[0.25]], 0.5)
    """
    if weights.dim() != 5 or relation.shape != (weights.shape[0], *weights.shape[-2:]):
        raise ValueError(
            f"weights must be (N, L, nh, T, T) and relation (N, T, T) with the same N and T, got "
            f"{tuple(weights.shape)} and {tuple(relation.shape)}"
        )
    T = weights.shape[-1]
    pos = torch.arange(T)
    past = pos[None, :] <= pos[:, None]  # (T, T) causal
    has = relation.any(-1)  # (N, T): queries with a related key
    on = (weights * relation[:, None, None]).sum(-1)  # (N, L, nh, T)
    head = (on * has[:, None, None]).sum((0, 3)) / has.sum()  # (L, nh)
    uniform = ((relation & past).sum(-1) / (pos + 1) * has).sum() / has.sum()
    return head, uniform.item()
