"""Part 4: one step of a GRU decoder with attention, ``step(prev_token, hidden, memory, mask)``.

The checker builds the student's ``AttentionDecoder``, copies a seeded
reference's parameters into it by name and compares the logits, the new state
and the attention weights with ``attnbook.rnn.AttentionDecoder.step``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import close, require_tensor
from .._core import build_module, load_reference_parameters, run_method
from ..engine import Case, Part
from ..errors import CheckFailed
from ._common import RNN, hinted, lengths_mask, strided

WHAT = "AttentionDecoder"


def _case(seed, B, S, sizes, *, masked=True, lengths=None, all_padded=False, noncontiguous=False,
          dtype=torch.float32):
    """(seed, sizes (V, E, H, C, A), prev_token (B,), hidden (B, H), memory (B, S, C), mask (B, S) or None)."""

    def make():
        g = torch.Generator().manual_seed(seed)
        V, _, H, C, _ = sizes
        prev = torch.randint(0, V, (B,), generator=g)
        hidden = torch.randn(B, H, generator=g, dtype=dtype).tanh()  # a GRU state lies in (-1, 1)
        memory = torch.randn(B, S, C, generator=g, dtype=dtype)
        mask = lengths_mask(g, B, S, lengths, all_padded=all_padded) if masked else None
        if mask is not None:
            memory = memory * mask[:, :, None]  # the encoder's memory is zero at the padding
        if noncontiguous:
            hidden, memory, mask = strided(hidden), strided(memory), None if mask is None else strided(mask)
        return seed, sizes, prev, hidden, memory, mask

    return make


def _variants(ref, prev, hidden, memory, mask):
    """(message, (logits, hidden, weights)) of typical mistakes, from the reference's pieces."""
    e = ref.embed(prev)  # (B, E)
    ctx, w = ref.attention(hidden, memory, mask=mask)  # (B, C), (B, S)
    ctx_nomask, w_nomask = ref.attention(hidden, memory)
    new = ref.cell(torch.cat([e, ctx], -1), hidden)  # (B, H)

    def out(*parts):
        return ref.out(torch.cat(parts, -1))

    def stepped(cell_input, c, weights):  # a step whose GRU cell reads cell_input, its output layer c
        state = ref.cell(torch.cat(cell_input, -1), hidden)
        return out(state, c, e), state, weights

    order = "the output layer reads [s_t; c_t; E y_{t-1}] in this order"
    tries = [
        ("the mask is not passed to the attention: padded source positions must get weight 0",
         lambda: stepped([e, ctx_nomask], ctx_nomask, w_nomask)),
        ("the GRU cell's input is [E y_{t-1}; c_t]: the embedding first, then the context",
         lambda: stepped([ctx, e], ctx, w)),
        ("the output layer must read the new state s_t (the GRU cell's output), not s_{t-1}",
         lambda: (out(hidden, ctx, e), new, w)),
        (order, lambda: (out(new, e, ctx), new, w)),
        (order, lambda: (out(ctx, new, e), new, w)),
        (order, lambda: (out(e, ctx, new), new, w)),
    ]
    for message, make in tries:
        try:
            yield message, make()
        except (RuntimeError, ValueError, TypeError):  # the mistake does not run on these sizes
            continue


def _check(cls: Callable) -> Callable:
    def check_one(seed, sizes, prev, hidden, memory, mask):
        V, E, H, C, A = sizes
        module = build_module(cls, *sizes, what=f"{WHAT}(vocab_size, embed_dim, hidden_size, context_size, attn_size)")
        run_method(module, "to", hidden.dtype, what=f"{WHAT}.to")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            ref = RNN.AttentionDecoder(V, E, H, C, attention="additive", attn_size=A)
        ref = ref.to(hidden.dtype).eval()
        load_reference_parameters(module, ref, WHAT)
        run_method(module, "eval", what=f"{WHAT}.eval")
        args = (prev.clone(), hidden.clone(), memory.clone()) + (() if mask is None else (mask.clone(),))
        with torch.no_grad():
            with hinted("values must be a floating-point tensor",
                        "the mask went in as the values: the attention's signature is "
                        "(query, keys, values=None, mask=None), so pass it by name, mask=mask"):
                result = run_method(module, "step", *args, what=f"{WHAT}.step")
            expected = ref.step(prev, hidden, memory, mask)
        if not isinstance(result, tuple) or len(result) != 3:
            raise CheckFailed("step should return a triple (logits, hidden, weights)")
        names = ("logits (B, vocab_size)", "the new hidden state (B, hidden_size)", "the attention weights (B, S)")
        got = [require_tensor(x, name) for x, name in zip(result, names, strict=True)]
        for x, want, name in zip(got, expected, names, strict=True):
            if tuple(x.shape) != tuple(want.shape):
                raise CheckFailed(f"step should return {name} in this place")
            if x.dtype != want.dtype:
                raise CheckFailed(f"for {want.dtype} inputs the results should be {want.dtype} too")
        if all(close(x, want) for x, want in zip(got, expected, strict=True)):
            return
        with torch.no_grad():
            for message, variant in _variants(ref, prev, hidden, memory, mask):
                if all(close(x, v) for x, v in zip(got, variant, strict=True)):
                    raise CheckFailed(message)
        if not close(got[2], expected[2]):
            if close(got[2], ref.attention.scores(hidden, memory, mask).nan_to_num(0.0, neginf=0.0)):
                raise CheckFailed("step returns the scores e instead of the weights α = softmax(e)")
            raise CheckFailed("the attention weights differ from self.attention(hidden, memory, mask=mask): "
                              "the query is the previous state s_{t-1}, the keys and values are the memory")
        if close(got[0], expected[0]) and close(got[1], hidden):
            raise CheckFailed("step must return the new state s_t (the GRU cell's output), not the state it was given")
        if not close(got[1], expected[1]):
            raise CheckFailed("the new state differs from s_t = GRUCell([E y_{t-1}; c_t], s_{t-1})")
        raise CheckFailed("the logits differ from W_o [s_t; c_t; E y_{t-1}] (self.out)")

    return check_one


check_decoder_step = Part(
    name="check_decoder_step",
    visible=(Case("padded source", _case(5, 2, 5, (9, 4, 6, 8, 5), lengths=(5, 3))),),
    check=_check,
    # the public classes as the notebook names them (attnbook.rnn re-exports the decoders of rnn_blocks),
    # the shared base at its home
    forbidden=("attnbook.rnn.AttentionDecoder", "attnbook.rnn.PlainDecoder", "attnbook.rnn_blocks._DecoderBase",
               "attnbook.rnn.Seq2Seq"),
)
