"""attnbook.interpret: embedding geometry and the relations attention heads follow, against loops."""

import pytest
import torch

from attnbook.interpret import character_relations, embedding_geometry, relation_mass


def test_character_relations_match_a_loop_over_positions():
    text = "\nab ab\nba"
    ids = torch.tensor([[ord(c) for c in text]])  # (1, T)
    letter = torch.tensor([[c.isalpha() for c in text]])
    rel = character_relations(ids, letter, newline=ids == ord("\n"))
    T = len(text)
    for t in range(T):
        start = t
        while start > 0 and text[start - 1].isalpha():
            start -= 1
        last_nl = max((j for j in range(t + 1) if text[j] == "\n"), default=None)
        for j in range(T):
            assert rel["previous"][0, t, j] == (j == t - 1)
            assert rel["word start"][0, t, j] == (text[t].isalpha() and j == start and start < t - 1)
            assert rel["newline"][0, t, j] == (j == last_nl)
            assert rel["same char"][0, t, j] == (j < t and text[j] == text[t])
            assert rel["after copy"][0, t, j] == (0 < j < t and text[j - 1] == text[t])


def test_relation_mass_of_uniform_weights_is_the_uniform_baseline():
    N, T = 3, 6
    causal = torch.tril(torch.ones(T, T))
    weights = (causal / causal.sum(-1, keepdim=True)).expand(N, 2, 4, T, T)  # every head uniform
    relation = torch.rand(N, T, T, generator=torch.Generator().manual_seed(0)) < 0.3
    relation &= torch.tril(torch.ones(T, T, dtype=torch.bool))
    head, uniform = relation_mass(weights, relation)
    assert head.shape == (2, 4)
    assert torch.allclose(head, torch.full((2, 4), uniform))
    with pytest.raises(ValueError, match=r"\(N, L, nh, T, T\)"):
        relation_mass(weights[0], relation)


def test_embedding_geometry_skips_the_query_and_non_candidates():
    weight = torch.tensor([[1.0, 0.0], [0.99, 0.1], [0.98, 0.2], [0.0, 1.0]])
    _, near = embedding_geometry(weight, {}, queries=[0, 3], candidates=torch.tensor([True, False, True, True]), k=2)
    assert near == {0: [2, 3], 3: [2, 0]}
    with pytest.raises(ValueError, match="at least two rows"):
        embedding_geometry(weight, {"one": [0]}, queries=[])
    with pytest.raises(ValueError, match=r"boolean \(V,\) = \(4,\)"):
        embedding_geometry(weight, {}, queries=[], candidates=torch.ones(3, dtype=torch.bool))
