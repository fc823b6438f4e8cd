"""Additive and Luong attention worked by hand and against sdpa; the GRU encoder-decoders of chapter 1."""

from __future__ import annotations

import math

import pytest
import torch

from attnbook.attention import (
    AdditiveAttention,
    LuongAttention,
    scaled_dot_product_attention,
)
from attnbook.rnn import (
    SEQ2SEQ_PRESETS,
    AttentionDecoder,
    Encoder,
    PlainDecoder,
    Seq2Seq,
    Seq2SeqConfig,
    greedy_decode,
)
from attnbook.seq2seq import seq2seq_loss

PAD, BOS, EOS = 0, 1, 2
ATTENTIONS = ["additive", "general", "dot", None]


pytestmark = pytest.mark.usefixtures("one_thread")


def hand_attention() -> AdditiveAttention:
    """W = (1, 0)ᵀ, U = I, b = (0, 0.5), v = (1, -1): e_j = tanh(s + z_j1) - tanh(z_j2 + 0.5)."""
    att = AdditiveAttention(query_size=1, key_size=2, attn_size=2)
    with torch.no_grad():
        att.W.weight.copy_(torch.tensor([[1.0], [0.0]]))  # (attn_size, query_size)
        att.U.weight.copy_(torch.eye(2))
        att.U.bias.copy_(torch.tensor([0.0, 0.5]))
        att.v.weight.copy_(torch.tensor([[1.0, -1.0]]))  # (1, attn_size)
    return att


def model(attention: str | None = "additive", seed: int = 0, **changes) -> Seq2Seq:
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig.preset("tiny", src_vocab_size=11, tgt_vocab_size=9, attention=attention, **changes)
    return Seq2Seq(cfg)


def ids(rows: list[list[int]]) -> torch.Tensor:
    """Right-pad rows of ids with PAD into a (B, L) tensor."""
    L = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (L - len(r)) for r in rows])


# ----------------------------------------------------------------------------- additive attention


def test_additive_attention_worked_by_hand() -> None:
    # s = 0.5; keys z_1 = (0, 0), z_2 = (1, -1), z_3 = (2, 2) is padding.
    #   W s = (0.5, 0);  U z_1 + b = (0, 0.5);  U z_2 + b = (1, -0.5)
    #   e_1 = vᵀ tanh(0.5, 0.5)  = tanh 0.5 - tanh 0.5 = 0
    #   e_2 = vᵀ tanh(1.5, -0.5) = tanh 1.5 + tanh 0.5 = 0.905148 + 0.462117 = 1.367265
    #   γ = softmax(0, 1.367265) = (1 / (1 + e^1.367265), ...) = (0.203062, 0.796938), γ_3 = 0
    #   c = 0.203062 z_1 + 0.796938 z_2 = (0.796938, -0.796938)
    att = hand_attention()
    s = torch.tensor([[0.5]])  # (B=1, query_size=1)
    z = torch.tensor([[[0.0, 0.0], [1.0, -1.0], [2.0, 2.0]]])  # (B=1, S=3, key_size=2)
    mask = torch.tensor([[True, True, False]])
    e = att.scores(s, z, mask)
    assert torch.allclose(e[:, :2], torch.tensor([[0.0, 1.367265]]), atol=1e-5)
    assert e[0, 2] == float("-inf")
    context, weights = att(s, z, mask=mask)
    assert torch.allclose(weights, torch.tensor([[0.203062, 0.796938, 0.0]]), atol=1e-5)
    assert torch.allclose(context, torch.tensor([[0.796938, -0.796938]]), atol=1e-5)
    # values other than the keys: c = γ_1 * 10 + γ_2 * 20
    values = torch.tensor([[[10.0], [20.0], [99.0]]])
    context, _ = att(s, z, values, mask)
    assert torch.allclose(context, torch.tensor([[10 * 0.203062 + 20 * 0.796938]]), atol=1e-4)


def test_additive_attention_matches_the_formula_on_random_inputs() -> None:
    torch.manual_seed(0)
    B, S, dq, dk, A = 3, 5, 4, 6, 7
    att = AdditiveAttention(dq, dk, A).double()
    s, z = torch.randn(B, dq, dtype=torch.float64), torch.randn(B, S, dk, dtype=torch.float64)
    e = torch.empty(B, S, dtype=torch.float64)
    for b in range(B):
        for j in range(S):  # e_j = vᵀ tanh(W s + U z_j + b)
            e[b, j] = att.v.weight[0] @ torch.tanh(att.W.weight @ s[b] + att.U.weight @ z[b, j] + att.U.bias)
    context, weights = att(s, z)
    assert torch.allclose(att.scores(s, z), e)
    assert torch.allclose(weights, torch.softmax(e, dim=-1))
    assert torch.allclose(context, torch.einsum("bs,bsd->bd", weights, z))


def test_many_queries_at_once_equal_one_at_a_time() -> None:
    torch.manual_seed(0)
    B, T, S = 2, 4, 5
    for att in (AdditiveAttention(3, 6, 8), LuongAttention(3, 6, method="general")):
        q, k, v = torch.randn(B, T, 3), torch.randn(B, S, 6), torch.randn(B, S, 2)
        mask = torch.tensor([[True] * 5, [True, True, True, False, False]])  # (B, S)
        context, weights = att(q, k, v, mask)  # (B, T, 2), (B, T, S)
        assert context.shape == (B, T, 2) and weights.shape == (B, T, S)
        for t in range(T):
            c_t, w_t = att(q[:, t], k, v, mask)
            assert torch.allclose(context[:, t], c_t, atol=1e-6)
            assert torch.allclose(weights[:, t], w_t, atol=1e-6)
        # the (B, 1, S) padding_mask and a full (B, T, S) mask mean the same here
        for m in (mask[:, None, :], mask[:, None, :].expand(B, T, S)):
            assert torch.allclose(att(q, k, v, m)[0], context, atol=1e-6)


def test_precomputed_keys_give_the_same_result() -> None:
    torch.manual_seed(0)
    att = AdditiveAttention(4, 6, 5)
    s, z = torch.randn(2, 4), torch.randn(2, 7, 6)
    uz = att.project_keys(z)  # (B, S, attn_size), once per sequence
    assert uz.shape == (2, 7, 5)
    for a, b in zip(att(s, z), att(s, z, projected_keys=uz), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("make", [lambda: AdditiveAttention(4, 6, 5), lambda: LuongAttention(4, 6)])
def test_padding_gets_zero_weight_and_does_not_change_the_output(make) -> None:
    torch.manual_seed(0)
    att = make()
    s, z = torch.randn(2, 4), torch.randn(2, 5, 6)
    mask = torch.tensor([[True, True, True, True, True], [True, True, False, False, False]])
    context, weights = att(s, z, mask=mask)
    assert torch.all(weights[1, 2:] == 0)
    assert torch.allclose(weights.sum(-1), torch.ones(2))
    z2 = z.clone()
    z2[1, 2:] = 1e4 * torch.randn(3, 6)  # garbage at the padded positions
    context2, weights2 = att(s, z2, mask=mask)
    assert torch.equal(weights, weights2) and torch.equal(context, context2)
    # the same as attending over the unpadded sequence alone
    c_short, w_short = att(s[1:], z[1:, :2])
    assert torch.allclose(context[1], c_short[0], atol=1e-6)
    assert torch.allclose(weights[1, :2], w_short[0], atol=1e-6)


def test_a_row_without_any_key_gets_zero_weight_and_finite_gradients() -> None:
    torch.manual_seed(0)
    att = AdditiveAttention(3, 4, 5)
    s = torch.randn(2, 3, requires_grad=True)
    z = torch.randn(2, 3, 4, requires_grad=True)
    mask = torch.tensor([[True, False, True], [False, False, False]])
    context, weights = att(s, z, mask=mask)
    assert torch.all(weights[1] == 0) and torch.all(context[1] == 0)
    (context.sum() + weights.sum()).backward()
    for p in (s, z, *att.parameters()):
        assert torch.isfinite(p.grad).all()


def test_additive_attention_gradcheck() -> None:
    torch.manual_seed(0)
    att = AdditiveAttention(3, 4, 5).double()
    s = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    z = torch.randn(2, 4, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    assert torch.autograd.gradcheck(lambda s, z: att(s, z, mask=mask), (s, z))
    context, _ = att(s, z, mask=mask)
    context.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in att.parameters())
    assert torch.all(z.grad[1, 2:] == 0)  # padding receives no gradient


# ----------------------------------------------------------------------------- Luong attention


def test_luong_scores_by_hand_and_against_sdpa() -> None:
    s = torch.tensor([[1.0, 2.0]])
    z = torch.tensor([[[3.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    dot = LuongAttention(2, 2, method="dot")
    assert torch.equal(dot.scores(s, z), torch.tensor([[3.0, 2.0, 3.0]]))  # s·z_j
    general = LuongAttention(2, 2, method="general")
    with torch.no_grad():
        general.W.weight.copy_(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))  # W_a swaps the coordinates
    assert torch.equal(general.scores(s, z), torch.tensor([[6.0, 1.0, 3.0]]))  # sᵀ W_a z_j
    # dot-product attention on q / sqrt(d_k) is the Transformer's scaled dot-product attention
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4, 8), torch.randn(3, 6, 8), torch.randn(3, 6, 5)
    mask = torch.rand(3, 6) > 0.3
    mask[:, 0] = True
    ours = LuongAttention(8, 8, method="dot")(q / math.sqrt(8), k, v, mask)
    ref = scaled_dot_product_attention(q, k, v, mask[:, None, :])
    assert torch.allclose(ours[0], ref[0], atol=1e-6) and torch.allclose(ours[1], ref[1], atol=1e-6)


def test_luong_general_maps_keys_of_another_width() -> None:
    torch.manual_seed(0)
    att = LuongAttention(3, 5, method="general")
    s, z = torch.randn(2, 3), torch.randn(2, 4, 5)
    expected = torch.einsum("bq,qk,bsk->bs", s, att.W.weight, z)  # sᵀ W_a z_j
    assert torch.allclose(att.scores(s, z), expected, atol=1e-6)
    context, weights = att(s, z)
    assert context.shape == (2, 5) and weights.shape == (2, 4)


# ----------------------------------------------------------------------------- attention errors


def test_attention_modules_reject_bad_inputs() -> None:
    att = AdditiveAttention(3, 4, 5)
    s, z = torch.randn(2, 3), torch.randn(2, 6, 4)
    cases = [
        ((torch.randn(2, 7), z), {}, ValueError, "query must have shape"),
        ((torch.randn(2, 2, 2, 3), z), {}, ValueError, "query must have shape"),
        ((s, torch.randn(2, 6, 5)), {}, ValueError, "keys must have shape"),
        ((s, torch.randn(2, 4)), {}, ValueError, "keys must have shape"),
        ((s, torch.randn(3, 6, 4)), {}, ValueError, "same batch size"),
        ((s, torch.randn(2, 0, 4)), {}, ValueError, "at least one position"),
        ((s, z, torch.randn(2, 5, 3)), {}, ValueError, "values must have shape"),
        ((s, z), {"mask": torch.ones(2, 5, dtype=torch.bool)}, ValueError, "mask must have shape"),
        ((s, z), {"mask": torch.ones(6, dtype=torch.bool)}, ValueError, "mask must have shape"),
        ((s, z), {"mask": torch.ones(2, 6)}, TypeError, "boolean"),
        ((s, z), {"projected_keys": torch.randn(2, 5, 5)}, ValueError, "projected_keys"),
        ((s, z), {"projected_keys": torch.randn(2, 6, 4)}, ValueError, "attn_size"),
        ((s.double(), z), {}, TypeError, "dtype"),
        ((s.long(), z), {}, TypeError, "floating-point"),
        (([[1.0, 2.0, 3.0]], z), {}, TypeError, "query must be a torch.Tensor"),
    ]
    for args, kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            att(*args, **kwargs)
    with pytest.raises(ValueError, match="mask must have shape"):  # a (B, T, S) mask needs T queries
        att(s, z, mask=torch.ones(2, 3, 6, dtype=torch.bool))
    with pytest.raises(ValueError, match="attn_size must be a positive int"):
        AdditiveAttention(3, 4, 0)
    with pytest.raises(ValueError, match="query_size == key_size"):
        LuongAttention(3, 4, method="dot")
    with pytest.raises(ValueError, match="'dot' or 'general'"):
        LuongAttention(3, 3, method="concat")


# ----------------------------------------------------------------------------- encoder and decoders


def test_encoder_ignores_padding_and_summary_is_the_final_states() -> None:
    torch.manual_seed(0)
    enc = Encoder(vocab_size=11, embed_dim=5, hidden_size=8)
    src = ids([[4, 5, 6, 7], [8, 9]])
    memory, summary = enc(src)
    assert memory.shape == (2, 4, 8) and summary.shape == (2, 8)
    assert torch.all(memory[1, 2:] == 0)
    alone, alone_summary = enc(torch.tensor([[8, 9]]))
    assert torch.allclose(memory[1, :2], alone[0], atol=1e-6)
    assert torch.allclose(summary[1], alone_summary[0], atol=1e-6)
    # forward direction ends at the last real token, backward direction at the first
    for b, n in enumerate([4, 2]):
        assert torch.allclose(summary[b], torch.cat([memory[b, n - 1, :4], memory[b, 0, 4:]]), atol=1e-6)
    uni = Encoder(vocab_size=11, embed_dim=5, hidden_size=7, bidirectional=False)
    memory, summary = uni(src)
    assert memory.shape == (2, 4, 7) and torch.allclose(summary[1], memory[1, 1], atol=1e-6)


def test_encoder_matches_a_packed_bidirectional_torch_gru() -> None:
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    torch.manual_seed(0)
    enc = Encoder(vocab_size=11, embed_dim=5, hidden_size=8).double()
    ref = torch.nn.GRU(5, 4, batch_first=True, bidirectional=True).double()
    with torch.no_grad():
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            getattr(ref, name).copy_(getattr(enc.gru, name))
            getattr(ref, name + "_reverse").copy_(getattr(enc.gru_reverse, name))
    src = ids([[4, 5, 6, 7, 8], [9, 10], [6, 6, 6, 4]])
    lengths = (src != PAD).sum(1)
    packed = pack_padded_sequence(enc.embed(src), lengths, batch_first=True, enforce_sorted=False)
    out, h_n = ref(packed)
    expected, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # (B, S, 8)
    memory, summary = enc(src)
    assert torch.allclose(memory, expected, atol=1e-12)
    assert torch.allclose(summary, torch.cat([h_n[0], h_n[1]], dim=-1), atol=1e-12)


def test_encoder_rejects_bad_sources() -> None:
    enc = Encoder(vocab_size=11, embed_dim=5, hidden_size=8)
    with pytest.raises(ValueError, match="right-padded"):
        enc(torch.tensor([[0, 4, 5]]))
    with pytest.raises(ValueError, match="at least one token"):
        enc(torch.tensor([[4, 5], [0, 0]]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        enc(torch.tensor([[4, 11]]))
    with pytest.raises(TypeError, match="integer tensor"):
        enc(torch.randn(2, 3))
    with pytest.raises(ValueError, match="even"):
        Encoder(vocab_size=11, embed_dim=5, hidden_size=7)


def test_decoder_steps_and_their_errors() -> None:
    torch.manual_seed(0)
    dec = AttentionDecoder(vocab_size=9, embed_dim=4, hidden_size=6, context_size=8)
    prev, hidden, memory = torch.tensor([1, 3]), torch.zeros(2, 6), torch.randn(2, 5, 8)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    logits, new_hidden, weights = dec.step(prev, hidden, memory, mask)
    assert logits.shape == (2, 9) and new_hidden.shape == (2, 6) and weights.shape == (2, 5)
    assert torch.all(weights[1, 2:] == 0) and torch.allclose(weights.sum(-1), torch.ones(2))
    again = dec.step(prev, hidden, memory, mask, projected_keys=dec.project_keys(memory))
    assert all(torch.equal(a, b) for a, b in zip((logits, new_hidden, weights), again, strict=True))

    cases = [
        ((torch.tensor([[1, 3]]), hidden, memory, mask), ValueError, "prev_token must have shape"),
        ((torch.tensor([1, 9]), hidden, memory, mask), ValueError, "outside the vocabulary"),
        ((prev, torch.zeros(2, 5), memory, mask), ValueError, "hidden must have shape"),
        ((prev, torch.zeros(3, 6), memory, mask), ValueError, "hidden must have shape"),
        ((prev, hidden, torch.randn(2, 5, 7), mask), ValueError, "memory must have shape"),
        ((prev, hidden, memory, mask[:, :4]), ValueError, "mask must have shape"),
        ((prev, hidden.double(), memory, mask), TypeError, "dtype"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            dec.step(*args)
    with pytest.raises(TypeError, match="boolean"):
        dec.step(prev, hidden, memory, mask.long())
    with pytest.raises(ValueError, match="'additive', 'general' or 'dot'"):
        AttentionDecoder(9, 4, 6, 8, attention="concat")

    plain = PlainDecoder(vocab_size=9, embed_dim=4, hidden_size=6, context_size=8)
    logits, new_hidden, weights = plain.step(prev, hidden, memory[:, :1])
    assert logits.shape == (2, 9) and weights is None
    with pytest.raises(ValueError, match="one context vector"):
        plain.step(prev, hidden, memory)


# ----------------------------------------------------------------------------- Seq2Seq


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_seq2seq_shapes_gradients_and_no_nans(attention) -> None:
    m = model(attention)
    src = ids([[4, 5, 6, 7, 8], [9, 10, 4]])
    tgt = ids([[BOS, 3, 4, 5, EOS], [BOS, 6, EOS]])
    logits, weights = m(src, tgt[:, :-1], need_weights=True)
    assert logits.shape == (2, 4, 9) and torch.isfinite(logits).all()
    if attention is None:
        assert weights is None
    else:
        assert weights.shape == (2, 4, 5)
        assert torch.all(weights[1, :, 3:] == 0)
        assert torch.allclose(weights.sum(-1), torch.ones(2, 4), atol=1e-6)
    seq2seq_loss(m, (src, tgt)).backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name
    assert torch.all(m.encoder.embed.weight.grad[PAD] == 0)  # padding is never read


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_seq2seq_output_does_not_depend_on_padding(attention) -> None:
    m = model(attention).eval()
    src = ids([[4, 5, 6, 7, 8], [9, 10, 4]])
    tgt_in = ids([[BOS, 3, 4], [BOS, 6, 7]])
    logits = m(src, tgt_in)
    more_padding = torch.cat([src, torch.full((2, 3), PAD)], dim=1)  # (B, S + 3)
    assert torch.allclose(m(more_padding, tgt_in), logits, atol=1e-6)
    assert torch.allclose(m(src[1:, :3], tgt_in[1:]), logits[1:], atol=1e-6)  # the short one alone


def test_forward_is_the_decoder_step_repeated_with_teacher_forcing() -> None:
    m = model("additive").eval()
    src, tgt_in = ids([[4, 5, 6], [7, 8]]), ids([[BOS, 3, 4, 5], [BOS, 6, 3, 3]])
    logits, weights = m(src, tgt_in, need_weights=True)
    memory, mask, hidden = m.encode(src)
    for t in range(tgt_in.shape[1]):
        step_logits, hidden, w = m.decoder.step(tgt_in[:, t], hidden, memory, mask)
        assert torch.allclose(step_logits, logits[:, t], atol=1e-6)
        assert torch.allclose(w, weights[:, t], atol=1e-6)


def test_greedy_decode_feeds_back_its_own_predictions() -> None:
    m = model("additive")
    src = ids([[4, 5, 6, 7], [8, 9]])
    tokens, attention = greedy_decode(m, src, BOS, EOS, max_len=6)
    assert m.training  # the mode is restored
    L = tokens.shape[1]
    assert 1 <= L <= 6 and attention.shape == (2, L, 4)
    # teacher forcing on its own outputs reproduces them (up to where each sequence ended)
    logits = m.eval()(src, torch.cat([torch.full((2, 1), BOS), tokens[:, :-1]], dim=1))
    for b in range(2):
        row = tokens[b].tolist()
        n = row.index(EOS) + 1 if EOS in row else L
        assert logits[b, :n].argmax(-1).tolist() == row[:n]
        assert all(i == PAD for i in row[n:])
        assert torch.allclose(attention[b, :n].sum(-1), torch.ones(n), atol=1e-6)
        assert torch.all(attention[b, n:] == 0)  # nothing after EOS
    assert torch.all(attention[1, :, 2:] == 0)  # the second source's padding is never attended
    tokens_plain, attention_plain = greedy_decode(model(None), src, BOS, EOS, max_len=6)
    assert attention_plain is None and tokens_plain.shape[0] == 2


def test_greedy_decode_rejects_bad_arguments() -> None:
    m = model("additive")
    src = ids([[4, 5]])
    for kwargs, error, message in [
        (dict(bos_id=BOS, eos_id=EOS, max_len=0), ValueError, "max_len"),
        (dict(bos_id=BOS, eos_id=EOS, max_len=2.0), TypeError, "max_len"),
        (dict(bos_id=9, eos_id=EOS, max_len=3), ValueError, "bos_id"),
        (dict(bos_id=BOS, eos_id=-1, max_len=3), ValueError, "eos_id"),
    ]:
        with pytest.raises(error, match=message):
            greedy_decode(m, src, **kwargs)
    with pytest.raises(TypeError, match="Seq2Seq"):
        greedy_decode(torch.nn.Linear(2, 2), src, BOS, EOS, 3)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        greedy_decode(m, ids([[4, 11]]), BOS, EOS, 3)


def test_seq2seq_rejects_bad_inputs_and_configs() -> None:
    m = model("additive")
    with pytest.raises(ValueError, match="same batch size"):
        m(ids([[4, 5]]), ids([[BOS, 3], [BOS, 4]]))
    with pytest.raises(ValueError, match="tgt_in holds ids"):
        m(ids([[4, 5]]), ids([[BOS, 9]]))
    with pytest.raises(TypeError, match="Seq2SeqConfig"):
        Seq2Seq(dict(src_vocab_size=5, tgt_vocab_size=5))
    for changes, message in [
        (dict(attention="concat"), "attention must be one of"),
        (dict(hidden_size=33), "even hidden_size"),
        (dict(hidden_size=0), "hidden_size must be a positive int"),
        (dict(dropout=1.0), "dropout"),
        (dict(pad_id=9), "pad_id"),
    ]:
        with pytest.raises(ValueError, match=message):
            Seq2SeqConfig.preset("tiny", src_vocab_size=11, tgt_vocab_size=9, **changes)
    with pytest.raises(ValueError, match="unknown preset"):
        Seq2SeqConfig.preset("huge", src_vocab_size=11, tgt_vocab_size=9)
    for name in SEQ2SEQ_PRESETS:
        cfg = Seq2SeqConfig.preset(name, src_vocab_size=11, tgt_vocab_size=9)
        assert Seq2Seq(cfg)(ids([[4]]), ids([[BOS]])).shape == (1, 1, 9)
    assert Seq2SeqConfig(11, 9, hidden_size=7, bidirectional=False).replace(attention="dot").hidden_size == 7


def test_the_split_modules_keep_every_name_importable_from_where_it_was():
    """The alignment models moved to attnbook.alignment, the encoder and decoders to attnbook.rnn_blocks."""
    import attnbook.alignment
    import attnbook.attention
    import attnbook.rnn
    import attnbook.rnn_blocks

    for home, old in ((attnbook.alignment, attnbook.attention), (attnbook.rnn_blocks, attnbook.rnn)):
        for name in home.__all__:
            assert getattr(old, name) is getattr(home, name), (old.__name__, name)
    assert attnbook.attention._AlignmentAttention is attnbook.alignment._AlignmentAttention
    assert attnbook.rnn._DecoderBase is attnbook.rnn_blocks._DecoderBase
