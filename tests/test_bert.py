"""attnbook.bert: embeddings by hand, bidirectional attention, masking statistics, NSP pairs,
freezing, NaN-free training steps, and clear errors for bad inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnbook.bert import (
    IGNORE_INDEX,
    BertConfig,
    BertEmbeddings,
    BertForPreTraining,
    BertForSequenceClassification,
    BertModel,
    freeze_all_but_top,
    make_nsp_pairs,
    mask_tokens,
    mlm_loss,
)

V = 41
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
SPECIAL = [PAD, UNK, CLS, SEP, MASK]


pytestmark = pytest.mark.usefixtures("one_thread")


def tiny(**overrides: object) -> BertConfig:
    fields = dict(
        vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=24, max_position_embeddings=12,
    )
    return BertConfig(**{**fields, **overrides})  # type: ignore[arg-type]


def batch(B: int = 3, T: int = 9, seed: int = 0):
    """[CLS] a... [SEP] b... [SEP] [PAD]... with segment ids 0 for A and 1 for B."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(len(SPECIAL), V, (B, T), generator=g)
    seg = torch.zeros(B, T, dtype=torch.long)
    mask = torch.ones(B, T, dtype=torch.long)
    for b in range(B):
        n = T - b  # the b-th sequence has b padding tokens
        ids[b, 0], ids[b, 3], ids[b, n - 1] = CLS, SEP, SEP
        seg[b, 4:n] = 1
        ids[b, n:], mask[b, n:] = PAD, 0
    return ids, seg, mask


# ----------------------------------------------------------------------------- config


def test_presets_and_config_errors() -> None:
    base = BertConfig.preset("bert-base")
    assert (base.num_hidden_layers, base.hidden_size, base.num_attention_heads, base.vocab_size) == (12, 768, 12, 30522)
    assert base.max_position_embeddings == 512 and base.layer_norm_eps == 1e-12
    large = BertConfig.preset("bert-large")
    assert (large.num_hidden_layers, large.hidden_size, large.num_attention_heads) == (24, 1024, 16)
    t = BertConfig.preset("cpu-tiny", vocab_size=500)
    assert (t.num_hidden_layers, t.hidden_size, t.vocab_size) == (2, 128, 500) and 2 <= t.num_attention_heads <= 4
    with pytest.raises(ValueError, match="unknown preset"):
        BertConfig.preset("bert-huge")
    with pytest.raises(ValueError, match="divisible"):
        tiny(hidden_size=15)
    with pytest.raises(ValueError, match="pad_token_id"):
        tiny(pad_token_id=V)
    with pytest.raises(ValueError, match="dropout"):
        tiny(hidden_dropout_prob=1.0)
    with pytest.raises(ValueError, match="hidden_act"):
        tiny(hidden_act="relu")
    with pytest.raises(TypeError, match="BertConfig"):
        BertModel({"vocab_size": V})


# ----------------------------------------------------------------------------- the model


def test_embeddings_are_layernorm_of_the_three_sums() -> None:
    torch.manual_seed(0)
    emb = BertEmbeddings(tiny()).eval()
    ids, seg, _ = batch()
    x = emb.word_embeddings.weight[ids] + emb.token_type_embeddings.weight[seg]
    x = x + emb.position_embeddings.weight[: ids.shape[1]]  # (T, C) broadcast over B
    expected = F.layer_norm(x, (16,), emb.LayerNorm.weight, emb.LayerNorm.bias, eps=1e-12)
    torch.testing.assert_close(emb(ids, seg), expected)
    torch.testing.assert_close(emb(ids), emb(ids, torch.zeros_like(ids)))  # default: segment 0
    assert not torch.allclose(emb(ids, seg), emb(ids, (seg + 1) % 2))  # segments matter
    assert not emb.word_embeddings.weight[PAD].detach().any()  # [PAD] starts at zero


def test_attention_is_bidirectional_and_ignores_padding() -> None:
    torch.manual_seed(0)
    model = BertModel(tiny()).eval()
    ids, seg, mask = batch()
    seq, pooled = model(ids, seg, mask)
    later = ids.clone()
    later[0, 6] = 7 if ids[0, 6] != 7 else 8
    assert not torch.allclose(model(later, seg, mask)[0][0, 1], seq[0, 1])  # a later token changes an earlier one
    repadded = ids.clone()
    repadded[mask == 0] = 9  # whatever sits under the padding...
    out = model(repadded, seg, mask)[0]
    real = mask.bool()
    torch.testing.assert_close(out[real], seq[real])  # ...does not reach the real tokens
    torch.testing.assert_close(pooled, torch.tanh(model.pooler.dense(seq[:, 0])))  # the pooler reads [CLS]
    seq_w, pooled_w, att = model(ids, seg, mask, return_attentions=True)
    torch.testing.assert_close(seq_w, seq)  # explicit and fused attention agree
    assert len(att) == 2 and att[0].shape == (3, 2, 9, 9)
    torch.testing.assert_close(att[1].sum(-1), torch.ones(3, 2, 9))
    assert float(att[0][2, :, :, 7:].abs().max()) == 0.0  # the third sequence's 2 padding keys


def test_bert_blocks_use_bert_details() -> None:
    model = BertModel(tiny(attention_probs_dropout_prob=0.2, hidden_dropout_prob=0.05))
    block = model.encoder.layer[0]
    assert block.norm_first is False and block.norm1.eps == block.norm2.eps == 1e-12
    assert block.self_attn.dropout == 0.2 and block.dropout1.p == 0.05
    assert model.embeddings.dropout.p == 0.05


@pytest.mark.parametrize("cls", [BertModel, BertForPreTraining, BertForSequenceClassification])
def test_forward_and_backward_have_no_nans(cls) -> None:
    torch.manual_seed(0)
    model = cls(tiny()).train()  # dropout on
    ids, seg, mask = batch()
    out = model(ids, seg, mask)
    loss = sum(o.float().pow(2).mean() for o in (out if isinstance(out, tuple) else (out,)))
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
    assert all(torch.isfinite(o).all() for o in (out if isinstance(out, tuple) else (out,)))


def test_pretraining_heads_shapes_tying_and_a_training_step() -> None:
    torch.manual_seed(0)
    model = BertForPreTraining(tiny())
    ids, seg, mask = batch(B=4)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    inputs, labels = mask_tokens(ids, SPECIAL, V, torch.Generator().manual_seed(0), 0.3, mask_id=MASK)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    nsp_labels = torch.tensor([0, 1, 0, 1])
    losses = []
    for _ in range(30):  # the same batch: the loss must go down
        mlm, nsp = model(inputs, seg, mask)
        assert mlm.shape == (4, 9, V) and nsp.shape == (4, 2)
        loss = mlm_loss(mlm, labels) + F.cross_entropy(nsp, nsp_labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_sequence_classifier_reads_the_pooled_cls() -> None:
    torch.manual_seed(0)
    model = BertForSequenceClassification(tiny(), num_labels=3).eval()
    ids, seg, mask = batch()
    logits = model(ids, seg, mask)
    assert logits.shape == (3, 3)
    torch.testing.assert_close(logits, model.classifier(model.bert(ids, seg, mask)[1]))
    with pytest.raises(ValueError, match="num_labels"):
        BertForSequenceClassification(tiny(), num_labels=0)


def test_mean_pooling_averages_the_real_tokens_only() -> None:
    torch.manual_seed(0)
    model = BertForSequenceClassification(tiny(), num_labels=2, pooling="mean").eval()
    ids, seg, mask = batch()
    seq = model.bert(ids, seg, mask)[0]  # (B, T, C)
    expected = torch.stack([seq[b, mask[b].bool()].mean(0) for b in range(len(ids))])  # padding left out
    torch.testing.assert_close(model(ids, seg, mask), model.classifier(expected))
    torch.testing.assert_close(model(ids, seg), model.classifier(model.bert(ids, seg)[0].mean(1)))  # no mask
    with pytest.raises(ValueError, match="pooling must be 'cls' or 'mean'"):
        BertForSequenceClassification(tiny(), pooling="max")


def test_clear_errors_for_bad_ids_masks_and_segments() -> None:
    model = BertModel(tiny())
    ids, seg, mask = batch()
    with pytest.raises(ValueError, match=r"input_ids holds ids in \[.*\], outside the vocabulary 0 .. 40"):
        model(ids + V)
    with pytest.raises(TypeError, match="input_ids must be an integer tensor"):
        model(ids.float())
    with pytest.raises(ValueError, match=r"input_ids must have shape \(B, length\)"):
        model(ids[0])
    with pytest.raises(ValueError, match="max_position_embeddings=12"):
        model(torch.full((1, 13), 7))
    with pytest.raises(ValueError, match=r"token_type_ids holds segment ids in \[1, 2\], outside 0 .. 1"):
        model(ids, seg + 1)
    with pytest.raises(ValueError, match="token_type_ids must have the shape of input_ids"):
        model(ids, seg[:, :5])
    with pytest.raises(ValueError, match="attention_mask must have the shape of input_ids"):
        model(ids, seg, mask[:, None])
    with pytest.raises(ValueError, match="only 0 .padding. and 1"):
        model(ids, seg, mask * 2)
    with pytest.raises(TypeError, match="attention_mask must be a tensor"):
        model(ids, seg, mask.tolist())
    empty = mask.clone()
    empty[1] = 0
    with pytest.raises(ValueError, match="at least one real token"):
        model(ids, seg, empty)
    model(ids, seg, mask.float())  # 0.0/1.0 floats are fine, as in Hugging Face


# ----------------------------------------------------------------------------- masking


def test_mask_tokens_statistics_over_many_tokens() -> None:
    """Over 400k tokens: 15 +- 0.5 % of the ordinary tokens chosen, 80/10/10 +- 1 % of those;
    specials and padding never chosen; random replacements never special, spread over the vocabulary."""
    vocab = 100  # ~60 random replacements per ordinary id: enough to see uniformity
    ids, seg, mask = batch(B=400, T=1000, seed=1)  # ids < V; spread them over the larger vocabulary
    ordinary = ~torch.isin(ids, torch.tensor(SPECIAL))
    ids[ordinary] = torch.randint(len(SPECIAL), vocab, (int(ordinary.sum()),),
                                  generator=torch.Generator().manual_seed(2))
    inputs, labels = mask_tokens(ids, [PAD, CLS, SEP, UNK], vocab, torch.Generator().manual_seed(3), mask_id=MASK)
    chosen = labels != IGNORE_INDEX
    assert ordinary.sum() > 100_000
    assert not chosen[~ordinary].any() and torch.equal(inputs[~ordinary], ids[~ordinary])
    assert torch.equal(labels[chosen], ids[chosen]) and (labels[~chosen] == IGNORE_INDEX).all()
    assert torch.equal(inputs[~chosen], ids[~chosen])  # nothing changes outside the chosen positions
    rate = chosen.sum() / ordinary.sum()
    assert abs(rate - 0.15) < 0.005, rate
    n = chosen.sum()
    masked = (inputs[chosen] == MASK).sum() / n
    kept = (inputs[chosen] == ids[chosen]).sum() / n
    randomised = 1 - masked - kept
    assert abs(masked - 0.8) < 0.01 and abs(kept - 0.1) < 0.01 and abs(randomised - 0.1) < 0.01
    replaced = inputs[chosen & (inputs != MASK) & (inputs != ids)]
    assert not torch.isin(replaced, torch.tensor(SPECIAL)).any()
    counts = torch.bincount(replaced, minlength=vocab)[len(SPECIAL):]
    assert 0.5 * counts.float().mean() < counts.min() and counts.max() < 1.5 * counts.float().mean()
    # the spread between draws too: per-sequence chosen counts vary like a binomial, not a fixed count
    per_seq = chosen.sum(1).float() / ordinary.sum(1)
    assert 0.3 < per_seq.std() / (0.15 * 0.85 / ordinary.sum(1).float().mean()).sqrt() < 3


def test_mask_tokens_is_reproducible_and_leaves_ids_alone() -> None:
    ids, _, _ = batch(B=5, T=12)
    before = ids.clone()
    a = mask_tokens(ids, SPECIAL, V, torch.Generator().manual_seed(0), mask_id=MASK)
    b = mask_tokens(ids, SPECIAL, V, torch.Generator().manual_seed(0), mask_id=MASK)
    c = mask_tokens(ids, SPECIAL, V, torch.Generator().manual_seed(1), mask_id=MASK)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and not torch.equal(a[1], c[1])
    assert torch.equal(ids, before)
    inputs, labels = mask_tokens(ids, [PAD, CLS, SEP], V, mask_id=MASK, mlm_probability=1.0)
    assert (labels != IGNORE_INDEX).sum() == torch.isin(ids, torch.tensor(SPECIAL), invert=True).sum()


def test_mask_tokens_errors() -> None:
    ids, _, _ = batch()
    with pytest.raises(ValueError, match="mlm_probability"):
        mask_tokens(ids, SPECIAL, V, mlm_probability=0.0, mask_id=MASK)
    with pytest.raises(ValueError, match="mask_id"):
        mask_tokens(ids, SPECIAL, V, mask_id=V)
    with pytest.raises(ValueError, match="special_ids"):
        mask_tokens(ids, [-1], V, mask_id=MASK)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        mask_tokens(ids, SPECIAL, 10, mask_id=MASK)
    with pytest.raises(ValueError, match="every id is special"):
        mask_tokens(torch.tensor([[0, 1]]), [0], 2, mask_id=1)
    with pytest.raises(TypeError, match="ids must be an integer tensor"):
        mask_tokens(ids.float(), SPECIAL, V, mask_id=MASK)


def test_mlm_loss_counts_the_chosen_positions_only() -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, V, generator=g, requires_grad=True)
    labels = torch.full((2, 5), IGNORE_INDEX)
    labels[0, 1], labels[1, 3], labels[1, 4] = 7, 8, 9
    picked = logits[[0, 1, 1], [1, 3, 4]]  # (3, V): the chosen positions
    torch.testing.assert_close(mlm_loss(logits, labels), F.cross_entropy(picked, torch.tensor([7, 8, 9])))
    mlm_loss(logits, labels).backward()
    assert logits.grad[0, 0].abs().sum() == 0 and logits.grad[0, 1].abs().sum() > 0  # no loss elsewhere
    with pytest.raises(ValueError, match="all -100"):
        mlm_loss(logits, torch.full((2, 5), IGNORE_INDEX))
    with pytest.raises(ValueError, match=r"labels must have shape \(B, T\)"):
        mlm_loss(logits, labels[:, :3])


# ----------------------------------------------------------------------------- NSP and freezing


def test_nsp_pairs_are_balanced_and_random_b_is_never_the_next_line() -> None:
    lines = [f"line {i}" for i in range(41)]
    counts = torch.zeros(len(lines))
    for seed in range(50):
        pairs = make_nsp_pairs(lines, torch.Generator().manual_seed(seed))
        assert [a for a, _, _ in pairs] == lines[:-1]
        assert sum(is_next for *_, is_next in pairs) == 20  # exactly half of the 40 pairs
        for i, (_, b, is_next) in enumerate(pairs):
            assert (b == lines[i + 1]) == is_next
            if not is_next:
                counts[lines.index(b)] += 1
    assert counts.min() > 0  # every other line can be the random one (line 0 included)
    assert make_nsp_pairs(["x", "y"], torch.Generator().manual_seed(0))[0][2] in (True, False)
    with pytest.raises(ValueError, match="at least 2"):
        make_nsp_pairs(["only one"])
    with pytest.raises(TypeError, match="sequence of lines"):
        make_nsp_pairs("not a list of lines")


def test_freeze_all_but_top_counts() -> None:
    cfg = tiny()
    C, D = cfg.hidden_size, cfg.intermediate_size  # D: the FFN's inner width
    per_layer = 4 * (C * C + C) + (C * D + D) + (D * C + C) + 2 * 2 * C  # attention, FFN, two LayerNorms
    pooler, head = C * C + C, C * 3 + 3
    model = BertForSequenceClassification(cfg, num_labels=3)
    for k in (2, 0, 1):  # in this order: freezing must not depend on earlier calls
        assert freeze_all_but_top(model, k) == k * per_layer + pooler + head
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(n.startswith(("bert.encoder.layer.1.", "bert.pooler.", "classifier.")) for n in trainable)
    assert "classifier.weight" in trainable and "bert.pooler.dense.weight" in trainable
    assert freeze_all_but_top(model.bert, 1) == per_layer + pooler  # a bare BertModel works too
    with pytest.raises(ValueError, match=r"k must be an int in 0 .. 2"):
        freeze_all_but_top(model, 3)
    with pytest.raises(TypeError, match="BertModel"):
        freeze_all_but_top(torch.nn.Linear(2, 2), 0)


@pytest.mark.gpu
def test_cuda_forward_matches_cpu_and_trains_under_bf16_autocast() -> None:
    from attnbook.runtime import autocast

    torch.manual_seed(0)
    model = BertForPreTraining(tiny()).eval()
    ids, seg, mask = batch()
    cpu_mlm, cpu_nsp = model(ids, seg, mask)
    cuda = torch.device("cuda")
    model = model.to(cuda)
    gpu_mlm, gpu_nsp = model(ids.to(cuda), seg.to(cuda), mask.to(cuda))
    torch.testing.assert_close(gpu_mlm.cpu(), cpu_mlm, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(gpu_nsp.cpu(), cpu_nsp, rtol=1e-3, atol=1e-3)
    model.train()
    inputs, labels = mask_tokens(ids, SPECIAL, V, torch.Generator().manual_seed(0), 0.3, mask_id=MASK)
    with autocast(cuda):
        mlm, _ = model(inputs.to(cuda), seg.to(cuda), mask.to(cuda))
        loss = mlm_loss(mlm.float(), labels.to(cuda))
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_uniform_mlm_loss_is_ln_v_and_refuses_a_bad_vocabulary() -> None:
    import math

    from attnbook.bert import uniform_mlm_loss

    assert uniform_mlm_loss(1) == 0.0 and math.isclose(uniform_mlm_loss(8000), 8.987, abs_tol=1e-3)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="vocab_size must be a positive int"):
            uniform_mlm_loss(bad)


def test_shuffle_changes_is_zero_without_positions_and_checks_its_inputs() -> None:
    from attnbook.bert import shuffle_changes

    torch.manual_seed(0)
    config = BertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=12)
    model = BertModel(config).eval()
    ids = torch.tensor([CLS, 7, 8, 9, 10, 11, SEP])
    perms = torch.stack([torch.randperm(5, generator=torch.Generator().manual_seed(s)) for s in range(4)])
    perms[0] = torch.arange(5)  # the identity: nothing moves, with positions or not
    words, cls = shuffle_changes(model, ids, perms)
    assert words.shape == cls.shape == (4,) and float(words[0]) < 1e-6 and float(cls[0]) < 1e-6
    assert float(words[1:].min()) > 1e-3
    with torch.no_grad():
        model.embeddings.position_embeddings.weight.zero_()
    words, cls = shuffle_changes(model, ids, perms)
    assert float(words.max()) < 1e-5 and float(cls.max()) < 1e-5
    with pytest.raises(ValueError, match="permutation"):
        shuffle_changes(model, ids, torch.tensor([[0, 0, 1, 2, 3]]))
    with pytest.raises(ValueError, match=r"\(K, 5\)"):
        shuffle_changes(model, ids, torch.tensor([[0, 1, 2]]))
    with pytest.raises(ValueError, match="n >= 1"):
        shuffle_changes(model, ids[:2], torch.zeros(1, 0, dtype=torch.long))
