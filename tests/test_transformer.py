"""Transformer blocks vs PyTorch's layers with copied weights; the full model trains and decodes."""

from __future__ import annotations

import time

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnbook.attention import MultiHeadAttention, causal_mask, padding_mask
from attnbook.transformer import (
    TRANSFORMER_PRESETS,
    DecoderBlock,
    EncoderBlock,
    FeedForward,
    Transformer,
    TransformerConfig,
    greedy_decode,
)

B, S, T, C, NH, FF = 3, 7, 5, 16, 4, 32
PAD, BOS, EOS = 0, 1, 2


def copy_attention(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    ref.in_proj_weight.copy_(
        torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight])
    )  # (3C, C)
    ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
    ref.out_proj.weight.copy_(ours.out_proj.weight)
    ref.out_proj.bias.copy_(ours.out_proj.bias)


def copy_common(ours: nn.Module, ref: nn.Module, norms: int) -> None:
    copy_attention(ours.self_attn, ref.self_attn)
    for mine, theirs in ((ours.ffn.fc1, ref.linear1), (ours.ffn.fc2, ref.linear2)):
        theirs.weight.copy_(mine.weight)
        theirs.bias.copy_(mine.bias)
    for i in range(1, norms + 1):
        getattr(ref, f"norm{i}").weight.copy_(getattr(ours, f"norm{i}").weight)
        getattr(ref, f"norm{i}").bias.copy_(getattr(ours, f"norm{i}").bias)


def randomize(module: nn.Module) -> None:
    """Non-trivial biases and LayerNorm affines, so that a wrong copy or a wrong order shows."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias") or "norm" in name:
                p.normal_(mean=1.0 if name.endswith("norm1.weight") else 0.0, std=0.5)


def pad_ids(lengths: list[int], total: int) -> torch.Tensor:
    return (torch.arange(total)[None, :] < torch.tensor(lengths)[:, None]).long()


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_matches_torch(norm_first: bool) -> None:
    torch.manual_seed(0)
    ours = EncoderBlock(C, NH, FF, norm_first=norm_first).double().eval()
    randomize(ours)
    ref = (
        nn.TransformerEncoderLayer(
            C, NH, FF, dropout=0.0, activation="relu", batch_first=True, norm_first=norm_first
        )
        .double()
        .eval()
    )
    with torch.no_grad():
        copy_common(ours, ref, norms=2)
    x = torch.randn(B, S, C, dtype=torch.float64)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-10, rtol=1e-8)
    mask = padding_mask(pad_ids([S, 4, 2], S), PAD)  # (B, 1, S)
    torch.testing.assert_close(
        ours(x, mask), ref(x, src_key_padding_mask=~mask.squeeze(1)), atol=1e-10, rtol=1e-8
    )
    # an attention mask of shape (S, S), True = may attend (PyTorch's: True = blocked)
    torch.testing.assert_close(
        ours(x, causal_mask(S)), ref(x, src_mask=~causal_mask(S)), atol=1e-10, rtol=1e-8
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_block_matches_torch(norm_first: bool) -> None:
    torch.manual_seed(0)
    ours = DecoderBlock(C, NH, FF, norm_first=norm_first).double().eval()
    randomize(ours)
    ref = (
        nn.TransformerDecoderLayer(
            C, NH, FF, dropout=0.0, activation="relu", batch_first=True, norm_first=norm_first
        )
        .double()
        .eval()
    )
    with torch.no_grad():
        copy_common(ours, ref, norms=3)
        copy_attention(ours.cross_attn, ref.multihead_attn)
    y = torch.randn(B, T, C, dtype=torch.float64)
    memory = torch.randn(B, S, C, dtype=torch.float64)
    src_mask = padding_mask(pad_ids([S, 4, 2], S), PAD)  # (B, 1, S)
    tgt_mask = padding_mask(pad_ids([T, T, 3], T), PAD)  # (B, 1, T)
    expected = ref(
        y,
        memory,
        tgt_mask=~causal_mask(T),
        tgt_key_padding_mask=~tgt_mask.squeeze(1),
        memory_key_padding_mask=~src_mask.squeeze(1),
    )
    torch.testing.assert_close(ours(y, memory, tgt_mask, src_mask), expected, atol=1e-10, rtol=1e-8)
    # with the weights kept, the output is the same
    out = ours(y, memory, tgt_mask, src_mask, need_weights=True)
    torch.testing.assert_close(out, expected, atol=1e-10, rtol=1e-8)
    # no mask at all when causal=False
    torch.testing.assert_close(ours(y, memory, causal=False), ref(y, memory), atol=1e-10, rtol=1e-8)


def test_feedforward_matches_formula_and_gelu() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    for act, fn in (("relu", F.relu), ("gelu", F.gelu), (torch.tanh, torch.tanh)):
        ffn = FeedForward(8, 16, activation=act)
        torch.testing.assert_close(ffn(x), ffn.fc2(fn(ffn.fc1(x))))
    with pytest.raises(ValueError, match="activation must be one of"):
        FeedForward(8, 16, activation="swish")


def test_blocks_keep_attention_weights_on_request() -> None:
    torch.manual_seed(0)
    enc, dec = EncoderBlock(C, NH, FF), DecoderBlock(C, NH, FF)
    x, y = torch.randn(B, S, C), torch.randn(B, T, C)
    mask = padding_mask(pad_ids([S, 4, 2], S), PAD)
    enc(x, mask, need_weights=True)
    assert enc.attn_weights.shape == (B, NH, S, S) and not enc.attn_weights.requires_grad
    assert (enc.attn_weights[2, :, :, 2:] == 0).all()
    dec(y, x, memory_mask=mask, need_weights=True)
    assert dec.self_attn_weights.shape == (B, NH, T, T)
    assert dec.cross_attn_weights.shape == (B, NH, T, S)
    assert (dec.self_attn_weights.triu(1) == 0).all()  # causal by default
    assert (dec.cross_attn_weights[1, :, :, 4:] == 0).all()
    enc(x)  # without the flag, nothing stale is left behind
    dec(y, x)
    assert enc.attn_weights is None and dec.self_attn_weights is None and dec.cross_attn_weights is None


@pytest.mark.parametrize("norm_first", [False, True])
def test_blocks_forward_backward_no_nans(norm_first: bool) -> None:
    torch.manual_seed(0)
    enc = EncoderBlock(C, NH, FF, dropout=0.1, norm_first=norm_first).train()
    dec = DecoderBlock(C, NH, FF, dropout=0.1, norm_first=norm_first, activation="gelu").train()
    ffn = FeedForward(C, FF, dropout=0.1)
    x = torch.randn(B, S, C, requires_grad=True)
    y = torch.randn(B, T, C, requires_grad=True)
    mask = padding_mask(pad_ids([S, 4, 2], S), PAD)
    mem = enc(x, mask)
    out = dec(y, mem, memory_mask=mask) + ffn(y)
    out.square().mean().backward()
    assert out.shape == (B, T, C)
    for p in [x, y, *enc.parameters(), *dec.parameters(), *ffn.parameters()]:
        assert p.grad is not None and torch.isfinite(p.grad).all()


def test_blocks_reject_bad_inputs() -> None:
    enc, dec = EncoderBlock(8, 2, 16), DecoderBlock(8, 2, 16)
    with pytest.raises(ValueError, match=r"x must have shape \(B, length, d_model=8\)"):
        enc(torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match="memory must have shape"):
        dec(torch.randn(2, 3, 8), torch.randn(2, 4, 6))
    with pytest.raises(ValueError, match="does not broadcast"):
        enc(torch.randn(2, 3, 8), torch.ones(2, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="divisible by num_heads"):
        EncoderBlock(10, 3, 16)
    with pytest.raises(ValueError, match="dropout"):
        DecoderBlock(8, 2, 16, dropout=1.5)


# --- configuration -----------------------------------------------------------------------------


def test_config_presets_and_validation() -> None:
    for name in TRANSFORMER_PRESETS:
        cfg = TransformerConfig.preset(name, src_vocab_size=10, tgt_vocab_size=11)
        assert cfg.d_model % cfg.num_heads == 0
    assert (
        TransformerConfig.preset("cpu-fast", src_vocab_size=5, tgt_vocab_size=5, dropout=0.2).dropout == 0.2
    )
    with pytest.raises(ValueError, match="unknown preset"):
        TransformerConfig.preset("huge", src_vocab_size=5, tgt_vocab_size=5)
    bad = [
        (dict(d_model=30, num_heads=4), "divisible by num_heads"),
        (dict(positions="rotary"), "positions must be"),
        (dict(d_model=3, num_heads=1), "even d_model"),
        (dict(pad_id=10), "pad_id"),
        (dict(dropout=-0.1), "dropout"),
        (dict(num_encoder_layers=0), "num_encoder_layers"),
        (dict(activation="tanh"), "activation"),
    ]
    for changes, match in bad:
        with pytest.raises(ValueError, match=match):
            TransformerConfig(src_vocab_size=10, tgt_vocab_size=10, **changes)
    cfg = TransformerConfig(src_vocab_size=10, tgt_vocab_size=10)
    assert cfg.replace(norm_first=True).norm_first and not cfg.norm_first
    with pytest.raises(ValueError, match="positions"):
        cfg.replace(positions="none")
    assert cfg.to_dict()["d_model"] == 64


# --- the full model -----------------------------------------------------------------------------


def tiny(**changes: object) -> Transformer:
    return Transformer(TransformerConfig.preset("tiny", src_vocab_size=13, tgt_vocab_size=13, **changes))


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"norm_first": True},
        {"positions": "learned"},
        {"tie_weights": True, "dropout": 0.1, "activation": "gelu"},
    ],
)
def test_transformer_forward_backward_no_nans(changes: dict) -> None:
    torch.manual_seed(0)
    model = tiny(**changes).train()
    src = torch.tensor([[3, 4, 5, 6, 0], [7, 8, 0, 0, 0]])
    tgt_in = torch.tensor([[1, 6, 5, 4], [1, 8, 7, 0]])
    logits = model(src, tgt_in)
    assert logits.shape == (2, 4, 13)
    F.cross_entropy(
        logits.transpose(1, 2), torch.tensor([[6, 5, 4, 2], [8, 7, 2, 0]]), ignore_index=PAD
    ).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    if changes.get("tie_weights"):
        assert model.head.weight is model.tgt_embed.weight


def test_transformer_final_norm_only_for_pre_norm() -> None:
    assert isinstance(tiny().encoder_norm, nn.Identity)
    assert isinstance(tiny(norm_first=True).decoder_norm, nn.LayerNorm)


def test_padding_does_not_change_the_output() -> None:
    """Adding pad tokens to the source leaves the logits as they were."""
    torch.manual_seed(0)
    model = tiny().eval()
    src, tgt_in = torch.tensor([[3, 4, 5]]), torch.tensor([[1, 5, 4]])
    padded = torch.tensor([[3, 4, 5, 0, 0]])
    torch.testing.assert_close(model(src, tgt_in), model(padded, tgt_in), atol=1e-5, rtol=1e-5)


def test_decoder_is_causal() -> None:
    """Changing a later target token never changes the logits of earlier positions."""
    torch.manual_seed(0)
    model = tiny().eval()
    src = torch.tensor([[3, 4, 5, 6]])
    a = model(src, torch.tensor([[1, 6, 5, 4]]))
    b = model(src, torch.tensor([[1, 6, 9, 9]]))
    torch.testing.assert_close(a[:, :2], b[:, :2])
    assert not torch.allclose(a[:, 2:], b[:, 2:])


def test_attention_weights_collected_per_layer() -> None:
    torch.manual_seed(0)
    model = Transformer(
        TransformerConfig.preset(
            "tiny", src_vocab_size=13, tgt_vocab_size=13, num_encoder_layers=2, num_decoder_layers=3
        )
    )
    src, tgt_in = torch.tensor([[3, 4, 5, 0]]), torch.tensor([[1, 5, 4]])
    model(src, tgt_in, need_weights=True)
    maps = model.attention_weights()
    assert [w.shape for w in maps["encoder"]] == [(1, 2, 4, 4)] * 2
    assert [w.shape for w in maps["decoder"]] == [(1, 2, 3, 3)] * 3
    assert [w.shape for w in maps["cross"]] == [(1, 2, 3, 4)] * 3
    model(src, tgt_in)
    assert all(w is None for ws in model.attention_weights().values() for w in ws)


def test_transformer_rejects_bad_inputs() -> None:
    model = tiny()
    src, tgt_in = torch.tensor([[3, 4]]), torch.tensor([[1, 5]])
    with pytest.raises(TypeError, match="src must be an integer tensor"):
        model(src.float(), tgt_in)
    with pytest.raises(ValueError, match=r"src must have shape \(B, length\)"):
        model(torch.tensor([3, 4]), tgt_in)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.tensor([[3, 13]]), tgt_in)
    with pytest.raises(ValueError, match="same batch size"):
        model(src, torch.tensor([[1, 5], [1, 6]]))
    with pytest.raises(ValueError, match="more than config.max_len"):
        model(torch.full((1, 200), 3), tgt_in)
    with pytest.raises(TypeError, match="TransformerConfig"):
        Transformer({"d_model": 8})  # type: ignore[arg-type]


# --- training and decoding -----------------------------------------------------------------------


def reverse_batch(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Source: 3-6 random digits (ids 3..12), padded; target: the digits reversed, then EOS, padded."""
    g = torch.Generator().manual_seed(seed)
    src = torch.full((n, 6), PAD)
    tgt = torch.full((n, 7), PAD)
    for i in range(n):
        L = int(torch.randint(3, 7, (1,), generator=g))
        digits = torch.randint(3, 13, (L,), generator=g)
        src[i, :L] = digits
        tgt[i, :L] = digits.flip(0)
        tgt[i, L] = EOS
    return src, tgt


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("changes", [{}, {"norm_first": True, "positions": "learned"}])
def test_overfits_reverse_and_greedy_decode_returns_it(changes: dict) -> None:
    torch.manual_seed(0)
    model = tiny(**changes)
    src, tgt = reverse_batch(16, seed=1)
    tgt_in = torch.cat([torch.full((16, 1), BOS), tgt[:, :-1]], dim=1)  # shifted right: (B, 7)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    start = time.perf_counter()
    for step in range(400):  # noqa: B007 - read after the loop, in the failure message
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.transpose(1, 2), tgt, ignore_index=PAD)  # (B, V, T) vs (B, T)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if loss.item() < 0.01:
            break
    elapsed = time.perf_counter() - start
    assert loss.item() < 0.01, f"loss {loss.item():.3f} after {step + 1} steps"
    assert elapsed < 30
    model.train()
    out = greedy_decode(model, src, bos_id=BOS, eos_id=EOS, max_len=10)
    assert model.training  # mode restored
    width = int((tgt != PAD).sum(1).max())  # longest target, EOS included
    assert out.shape == (16, width)  # stopped once every sequence had its EOS
    assert torch.equal(out, tgt[:, :width])


def test_greedy_decode_stops_each_sequence_at_eos() -> None:
    """A model rigged to emit EOS at different steps: finished rows get padding."""

    class Scripted(Transformer):
        def decode(self, tgt_in, memory, memory_mask, *, need_weights=False):  # type: ignore[override]
            Bq, t = tgt_in.shape
            logits = torch.zeros(Bq, t, self.config.tgt_vocab_size)
            plan = torch.tensor([[5, 2, 7, 7], [6, 6, 6, 2]])  # row 0 ends at step 2, row 1 at step 4
            logits[torch.arange(Bq), -1, plan[:, min(t - 1, 3)]] = 1.0
            return logits

    model = Scripted(TransformerConfig.preset("tiny", src_vocab_size=13, tgt_vocab_size=13))
    out = greedy_decode(model, torch.tensor([[3, 4], [5, 6]]), bos_id=BOS, eos_id=EOS, max_len=10)
    assert out.tolist() == [[5, 2, 0, 0], [6, 6, 6, 2]]
    out = greedy_decode(model, torch.tensor([[3, 4], [5, 6]]), bos_id=BOS, eos_id=EOS, max_len=3)
    assert out.tolist() == [[5, 2, 0], [6, 6, 6]]  # cut at max_len, no EOS for row 1


def test_greedy_decode_rejects_bad_arguments() -> None:
    model = tiny()
    src = torch.tensor([[3, 4]])
    with pytest.raises(ValueError, match="max_len must be at least 1"):
        greedy_decode(model, src, BOS, EOS, 0)
    with pytest.raises(ValueError, match="config.max_len"):
        greedy_decode(model, src, BOS, EOS, 1000)
    with pytest.raises(ValueError, match="bos_id must differ from the padding id"):
        greedy_decode(model, src, PAD, EOS, 5)
    with pytest.raises(ValueError, match="eos_id=99 is outside"):
        greedy_decode(model, src, BOS, 99, 5)
    with pytest.raises(TypeError, match="attnbook Transformer"):
        greedy_decode(nn.Linear(2, 2), src, BOS, EOS, 5)  # type: ignore[arg-type]


def test_the_blocks_stay_importable_from_attnbook_transformer():
    import attnbook.transformer
    import attnbook.transformer_blocks

    for name in attnbook.transformer_blocks.__all__:
        assert getattr(attnbook.transformer, name) is getattr(attnbook.transformer_blocks, name), name


@pytest.mark.parametrize("sizes", [(8, 2, 16), (12, 3, 6), (16, 1, 64), (6, 6, 10), (20, 4, 20), (512, 8, 2048)])
def test_encoder_block_parameters_counts_the_built_block(sizes):
    """The formula of chapter 2's Part 12 equals the count of the block built with those sizes, in both norm
    placements (the norm's place adds no parameter), and does not change with the number of heads."""
    from attnbook.transformer_blocks import encoder_block_parameters

    d_model, num_heads, d_ff = sizes
    with torch.device("meta"):  # counted, not allocated
        blocks = [EncoderBlock(d_model, num_heads, d_ff, norm_first=first) for first in (False, True)]
    assert all(encoder_block_parameters(*sizes) == sum(p.numel() for p in b.parameters()) for b in blocks)
    assert encoder_block_parameters(d_model, 1, d_ff) == encoder_block_parameters(*sizes)


def test_encoder_block_parameters_refuses_bad_sizes():
    from attnbook.transformer_blocks import encoder_block_parameters

    with pytest.raises(ValueError, match="divisible by num_heads"):
        encoder_block_parameters(10, 3, 8)
    with pytest.raises(ValueError, match="d_ff must be a positive int"):
        encoder_block_parameters(8, 2, 0)
