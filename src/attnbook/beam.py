"""Beam search for an encoder-decoder :class:`~attnbook.transformer.Transformer`.

Greedy decoding keeps one prefix and takes the likeliest next token; a choice
that looks best now can lead to a worse whole. Beam search keeps the
``beam_size`` likeliest prefixes instead: at each step every prefix is
extended by every token, and the ``beam_size`` extensions with the highest
total log-probability survive (:func:`beam_step`). A prefix that writes
``<eos>`` among the ``beam_size`` best is finished, and the best live
extensions fill the beam again; the search ends when ``beam_size`` are
finished or the length runs out, and returns the finished one with the best score per token
(``length_penalty=1``; ``0`` compares raw log-probabilities, which favour
short outputs). ``beam_size=1`` is greedy decoding.

Shape legend: ``K`` live beams, ``V`` vocabulary size, ``t`` tokens so far.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnbook._checks import positive_int
from attnbook.attention import padding_mask
from attnbook.transformer import Transformer

__all__ = ["beam_step", "beam_search"]


def beam_step(scores: torch.Tensor, log_probs: torch.Tensor, beam_size: int
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The ``beam_size`` best one-token extensions of ``K`` beams: ``(scores, parents, tokens)``, best first.

    ``scores`` (K,) are the beams' total log-probabilities, ``log_probs``
    (K, V) those of each next token. Every extension scores
    ``scores[k] + log_probs[k, v]``; the best ``min(beam_size, K * V)`` are kept,
    each with the beam it extends (``parents``) and its token. Among equal
    scores, the lower beam, then the lower token, comes first.

    >>> scores = torch.tensor([-1.0, -2.0])                      # two beams
    >>> log_probs = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.1]]))
    >>> new, parents, tokens = beam_step(scores, log_probs, 3)
    >>> new, parents.tolist(), tokens.tolist()                # -1.69, -1.69, then beam 1's token 0
    (tensor([-1.6931, -1.6931, -2.1054]), [0, 0, 1], [0, 1, 0])
    """
    positive_int("beam_size", beam_size)
    if scores.dim() != 1 or log_probs.dim() != 2 or log_probs.shape[0] != scores.shape[0]:
        raise ValueError(f"scores must be (K,) and log_probs (K, V), got {tuple(scores.shape)} and "
                         f"{tuple(log_probs.shape)}")
    V = log_probs.shape[1]
    total = (scores[:, None] + log_probs).flatten()  # (K * V,): beam-major, so ties keep the lower index
    order = torch.sort(total, descending=True, stable=True).indices[: min(beam_size, total.numel())]
    return total[order], order // V, order % V


@torch.no_grad()
def beam_search(model: Transformer, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int,
                beam_size: int = 4, length_penalty: float = 1.0) -> torch.Tensor:
    """The best translation (L,) of one source ``src`` (S,) or (1, S), with its ``<eos>``, without ``<bos>``.

    A finished hypothesis of ``n`` tokens (``<eos>`` included) scores its
    log-probability divided by ``n ** length_penalty``. If none finishes within
    ``max_len`` tokens, the best live one is returned. Runs in eval mode.

    >>> from attnbook.transformer import TransformerConfig, greedy_decode
    >>> _ = torch.manual_seed(0)
    >>> model = Transformer(TransformerConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8))
    >>> src = torch.tensor([3, 4, 5])
    >>> one = beam_search(model, src, bos_id=1, eos_id=2, max_len=5, beam_size=1, length_penalty=0)
    >>> torch.equal(one, greedy_decode(model, src[None], 1, 2, 5)[0])   # one beam is greedy
    True
    """
    positive_int("max_len", max_len)
    src = src[None] if src.dim() == 1 else src
    if src.dim() != 2 or src.shape[0] != 1:
        raise ValueError(f"src must be one sequence, (S,) or (1, S), got {tuple(src.shape)}")
    was_training = model.training
    model.eval()
    try:
        memory = model.encode(src)  # (1, S, C)
        mask = padding_mask(src, model.config.pad_id)  # (1, 1, S)
        beams = torch.full((1, 1), bos_id, dtype=torch.long, device=src.device)  # (K, t): <bos>
        scores = torch.zeros(1, device=src.device)  # (K,)
        finished: list[tuple[float, torch.Tensor]] = []
        for _ in range(max_len):
            K = beams.shape[0]
            logits = model.decode(beams, memory.expand(K, -1, -1), mask.expand(K, -1, -1))  # (K, t, V)
            log_probs = F.log_softmax(logits[:, -1].float(), dim=-1)  # (K, V)
            # twice the beam: enough live extensions remain however many of the best write <eos>
            new, parents, tokens = beam_step(scores, log_probs, 2 * beam_size)
            extended = torch.cat([beams[parents], tokens[:, None]], dim=1)  # (2K, t + 1)
            done = tokens == eos_id
            ranked = torch.arange(len(tokens), device=src.device) < beam_size  # among the beam_size best
            for score, seq in zip(new[done & ranked].tolist(), extended[done & ranked], strict=True):
                finished.append((score / (seq.shape[0] - 1) ** length_penalty, seq[1:]))
            if len(finished) >= beam_size or not bool((~done).any()):
                break
            beams, scores = extended[~done][:beam_size], new[~done][:beam_size]
        if not finished:
            return beams[0, 1:]
        return max(finished, key=lambda pair: pair[0])[1]
    finally:
        model.train(was_training)
