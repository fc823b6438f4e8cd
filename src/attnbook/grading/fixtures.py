"""The objects that checks hand to the student's code: small random models and test losses.

They hold no reference answer, so they are the one part of ``attnbook.grading``
that the sandboxed worker's copy of attnbook keeps (notebooks build them in
their own cells too). A model crosses to the worker as its class, config and
weights; a loss through its ``__wire__``.

>>> model = greedy_test_model(seed=3)
>>> model.head.bias[:3].tolist()
[-30.0, -30.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch

from attnbook.gpt import GPT, GPTConfig
from attnbook.transformer import Transformer, TransformerConfig

ModelT = TypeVar("ModelT", bound=torch.nn.Module)

PAD, BOS, EOS = 0, 1, 2  # the ids of greedy_test_model


def greedy_test_model(seed: int = 0, eos_bias: float = 1.0, *, vocab: int = 11) -> Transformer:
    """A small random encoder-decoder ``Transformer`` (the ``"tiny"`` preset) to decode with.

    Ids: 0 padding, 1 BOS, 2 EOS. Its output layer never predicts padding or
    BOS, and ``eos_bias`` makes EOS more or less likely, so that sequences
    finish at different steps. The global random state is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        cfg = TransformerConfig.preset("tiny", src_vocab_size=vocab, tgt_vocab_size=vocab, max_len=32)
        model = Transformer(cfg)
    with torch.no_grad():
        model.head.bias[PAD] = model.head.bias[BOS] = -30.0
        model.head.bias[EOS] = eos_bias
    return model.eval()


def far_from_uniform(build: Callable[[], ModelT], seed: int, std: float) -> ModelT:
    """``build()`` under ``seed``, its weight matrices redrawn from N(0, std²), in eval mode.

    Large weights make the predictions far from uniform, so that a wrong
    probability shows. The global random state is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build()
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() > 1:
                    p.normal_(0.0, std)
    return model.eval()


def perplexity_test_model(seed: int = 0, *, vocab_size: int = 12, block_size: int = 8) -> GPT:
    """A small random GPT whose predictions are far from uniform, in eval mode."""
    cfg = GPTConfig(vocab_size=vocab_size, block_size=block_size, n_layer=2, n_head=2, n_embd=16)
    return far_from_uniform(lambda: GPT(cfg), seed, 0.6)


class HardAttentionLoss:
    """A loss of the context, ``f(c) = Σ_i (c_i - target_i)² / d_v + offset``: (B, d_v) -> (B,) (any leading axes).

    Nonlinear, so that the gradient at the soft context differs from hard
    attention's; ``offset`` adds a constant, which a baseline must cancel.
    """

    def __init__(self, d_v: int, seed: int, offset: float = 0.0) -> None:
        self.d_v, self.seed, self.offset = d_v, seed, offset
        self.target = torch.randn(d_v, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)

    def __call__(self, context: torch.Tensor) -> torch.Tensor:
        target = self.target.to(context.device, context.dtype)
        return ((context - target) ** 2).mean(dim=-1) + self.offset

    def __repr__(self) -> str:
        return "HardAttentionLoss()"

    def __wire__(self) -> tuple[str, dict]:
        return f"{__name__}.HardAttentionLoss", {"d_v": self.d_v, "seed": self.seed, "offset": self.offset}
