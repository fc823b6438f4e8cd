"""Beam search (attnbook.beam): one step against brute force, one beam against greedy decoding, a wide beam
against an exhaustive search over every output."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from attnbook.beam import beam_search, beam_step
from attnbook.transformer import Transformer, TransformerConfig, greedy_decode


def _model(seed: int, V: int = 6) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(TransformerConfig.preset("tiny", src_vocab_size=7, tgt_vocab_size=V)).eval()


@pytest.mark.parametrize("seed", range(4))
def test_a_step_keeps_the_best_extensions_in_order(seed):
    g = torch.Generator().manual_seed(seed)
    scores, log_probs = -torch.rand(3, generator=g), F.log_softmax(torch.randn(3, 5, generator=g), -1)
    new, parents, tokens = beam_step(scores, log_probs, 4)
    every = sorted(((scores[k] + log_probs[k, v]).item(), k, v) for k in range(3) for v in range(5))[::-1][:4]
    assert torch.allclose(new, torch.tensor([s for s, _, _ in every]))
    assert parents.tolist() == [k for _, k, _ in every] and tokens.tolist() == [v for _, _, v in every]
    assert len(beam_step(scores, log_probs, 99)[0]) == 15  # never more than K * V


def test_ties_keep_the_lower_beam_then_token_and_bad_shapes_are_refused():
    _, parents, tokens = beam_step(torch.zeros(2), torch.zeros(2, 3), 4)
    assert parents.tolist() == [0, 0, 0, 1] and tokens.tolist() == [0, 1, 2, 0]
    with pytest.raises(ValueError, match="scores must be"):
        beam_step(torch.zeros(2), torch.zeros(3, 3), 2)


@pytest.mark.parametrize("seed", range(5))
def test_one_beam_is_greedy_decoding(seed):
    model = _model(seed)
    src = torch.randint(3, 7, (5,))
    got = beam_search(model, src, bos_id=1, eos_id=2, max_len=6, beam_size=1, length_penalty=0)
    assert torch.equal(got, greedy_decode(model, src[None], 1, 2, 6)[0])


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_a_beam_wide_enough_finds_the_best_of_every_output(length_penalty):
    """With room for every prefix, beam search returns the finished output of the best normalised score."""
    model, src, V, max_len = _model(7), torch.tensor([[3, 4, 5, 6]]), 6, 3
    memory, mask = model.encode(src), None
    best, best_score = None, -float("inf")
    for n in range(max_len):  # n tokens, then <eos>
        for body in itertools.product([v for v in range(V) if v != 2], repeat=n):  # <eos> ends it
            seq = torch.tensor([1, *body, 2])
            with torch.no_grad():
                logp = F.log_softmax(model.decode(seq[None, :-1], memory, mask)[0], -1)  # (n + 1, V)
            score = logp.gather(1, seq[1:, None]).sum().item() / (n + 1) ** length_penalty
            if score > best_score:
                best, best_score = seq[1:], score
    got = beam_search(model, src, 1, 2, max_len, beam_size=V ** max_len, length_penalty=length_penalty)
    assert torch.equal(got, best)
