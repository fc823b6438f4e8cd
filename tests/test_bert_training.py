"""attnbook.bert.training: the course's text as BERT rows, the baselines, and the two loops."""

import math

import pytest
import torch
import torch.nn.functional as F

from attnbook.bert import BertConfig, BertForPreTraining, BertForSequenceClassification, freeze_all_but_top, mlm_loss
from attnbook.bert.training import (
    CLS,
    MASK,
    PAD,
    SEP,
    SPECIAL_TOKENS,
    WordVocab,
    bow_baseline,
    classification_accuracy,
    classifier_from_pretrained,
    encode_sentences,
    finetune,
    mlm_batch,
    nsp_rows,
    pack_sentences,
    pretrain,
    pretraining_loss,
    pretraining_metrics,
    shakespeare_speeches,
    unigram_mlm_loss,
    words,
)

TINY = dict(hidden_size=32, num_attention_heads=2, intermediate_size=64, max_position_embeddings=32,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def tiny_config(vocab_size: int, **overrides) -> BertConfig:
    return BertConfig.preset("cpu-tiny", vocab_size=vocab_size, **{**TINY, **overrides})


def test_words_and_vocab_round_trip():
    assert words("O Romeo, Romeo! wherefore art thou") == ["o", "romeo", ",", "romeo", "!", "wherefore", "art",
                                                             "thou"]
    vocab = WordVocab.build(["the cat sat", "the dog sat", "the end"], max_size=7)
    assert vocab.tokens[:5] == list(SPECIAL_TOKENS)
    assert vocab.tokens[5:] == ["the", "sat"]  # most frequent first; the vocabulary is full
    assert vocab.encode("The cat") == [5, 1]  # cat did not make it: [UNK]
    assert vocab.decode([CLS, 5, 6, SEP, PAD, PAD]) == "[CLS] the sat [SEP]"
    with pytest.raises(ValueError, match="max_size"):
        WordVocab.build(["a"], max_size=5)
    with pytest.raises(ValueError, match="start with"):
        WordVocab(["a", "b"])


def test_speeches_keep_lines_and_drop_directions():
    text = "# HAMLET\n\n## ACT I\n\nBERNARDO:\nWho's there?\n\nFRANCISCO:\nNay, answer me:\n_Exit_\nstand.\n"
    assert shakespeare_speeches(text) == [["Who's there?"], ["Nay, answer me:", "stand."]]
    assert shakespeare_speeches(text, min_lines=2) == [["Nay, answer me:", "stand."]]


def test_pack_sentences_keeps_running_text_in_order():
    sentences = [[5 + i] * (1 + i % 7) for i in range(40)] + [[99] * 50]  # the last one is cut
    rows = pack_sentences(sentences, max_len=16)  # (N, 16)
    assert rows.shape[1] == 16 and bool((rows[:, 0] == CLS).all())
    flat = [t for t in rows.flatten().tolist() if t not in (PAD, CLS)]
    pieces = [s[:14] + [SEP] for s in sentences]
    assert flat == [t for p in pieces for t in p]  # every sentence once, in order, each ended by [SEP]
    assert bool((rows[:, 1:] != PAD).sum(1).gt(8).all())  # rows are filled, not one sentence each
    with pytest.raises(ValueError, match="max_len"):
        pack_sentences(sentences, max_len=2)


def test_nsp_rows_segments_and_balance():
    groups = [[[10 + 10 * g + i] * 3 for i in range(6)] for g in range(30)] + [[[7], [8]]]  # last: too short
    rows = nsp_rows(groups, max_len=12, generator=torch.Generator().manual_seed(0))
    ids, types, label = rows["input_ids"], rows["token_type_ids"], rows["next_sentence_label"]
    assert ids.shape == (30 * 5, 12) and types.shape == ids.shape
    assert int(label.sum()) == 30 * 3  # make_nsp_pairs replaces floor(5 / 2) = 2 of 5 pairs in each speech
    for row, seg, lab in zip(ids.tolist(), types.tolist(), label.tolist(), strict=True):
        first_sep = row.index(SEP)
        a, b = row[1], row[first_sep + 1]
        assert seg[: first_sep + 1] == [0] * (first_sep + 1) and seg[first_sep + 1] == 1
        assert (b == a + 1) == (lab == 0)  # label 0: B is the line after A


def test_encode_sentences_and_unigram_baseline():
    vocab = WordVocab.build(["good good film", "bad film"])
    rows = encode_sentences(["good film", "bad bad bad bad bad"], vocab, max_len=6)
    assert vocab.tokens[5:] == ["film", "good", "bad"]  # ties in frequency: alphabetical
    assert rows.tolist() == [[CLS, 6, 5, SEP, PAD, PAD], [CLS, 7, 7, 7, 7, SEP]]
    train = torch.tensor([CLS, 5, 5, 6, SEP, PAD])
    labels = torch.tensor([-100, 5, 6, -100])
    counts = torch.tensor([3.0, 2.0, 1.0])  # ids 5, 6, 7: seen 2, 1, 0 times, plus one each
    p5, p6 = counts[0] / counts.sum(), counts[1] / counts.sum()
    expected = -(math.log(p5) + math.log(p6)) / 2
    assert unigram_mlm_loss(train, labels, vocab_size=8) == pytest.approx(expected)
    with pytest.raises(ValueError, match="no position"):
        unigram_mlm_loss(train, torch.full((3,), -100), vocab_size=8)


def test_bow_baseline_learns_a_separable_task():
    good = [f"a fine film number {i}" for i in range(20)]
    bad = [f"a dull film number {i}" for i in range(20)]
    acc = bow_baseline(good[:15] + bad[:15], [1] * 15 + [0] * 15, good[15:] + bad[15:], [1] * 5 + [0] * 5)
    assert acc == 1.0


def test_mlm_batch_masks_only_words_and_all_mask_hides_every_choice():
    ids = pack_sentences([[5 + i % 50] * 5 for i in range(400)], max_len=20)
    rows = {"input_ids": ids}
    index = torch.arange(len(ids))
    batch = mlm_batch(rows, index, vocab_size=60, generator=torch.Generator().manual_seed(0))
    special = ids < len(SPECIAL_TOKENS)
    assert bool((batch["labels"][special] == -100).all())
    assert bool((batch["attention_mask"] == (ids != PAD)).all())
    chosen = batch["labels"] != -100
    assert 0.12 < chosen.sum() / (~special).sum() < 0.18
    masked = batch["input_ids"][chosen] == MASK
    assert 0.7 < masked.float().mean() < 0.9  # 80/10/10: not all chosen are [MASK]
    every = mlm_batch(rows, index, vocab_size=60, generator=torch.Generator().manual_seed(0), all_mask=True)
    assert bool((every["labels"] == batch["labels"]).all())  # same choice of positions...
    assert bool((every["input_ids"][chosen] == MASK).all())  # ...all of them hidden


def test_pretraining_loss_equals_mlm_loss_plus_nsp():
    torch.manual_seed(0)
    model = BertForPreTraining(tiny_config(40))
    groups = [[[5 + (3 * g + i) % 35] * 4 for i in range(5)] for g in range(8)]
    rows = nsp_rows(groups, max_len=12, generator=torch.Generator().manual_seed(1))
    batch = mlm_batch(rows, torch.arange(len(rows["input_ids"])), 40, generator=torch.Generator().manual_seed(2))
    mlm_logits, nsp_logits = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    expected = mlm_loss(mlm_logits, batch["labels"]) + F.cross_entropy(nsp_logits, batch["next_sentence_label"])
    assert pretraining_loss(model, batch).item() == pytest.approx(expected.item(), rel=1e-5)
    metrics = pretraining_metrics(model, batch, chunk=7)  # chunks must not change the scores
    assert metrics["mlm_loss"] == pytest.approx(mlm_loss(mlm_logits, batch["labels"]).item(), rel=1e-5)
    assert set(metrics) == {"mlm_loss", "mlm_accuracy", "visible_accuracy", "nsp_accuracy"}


def copy_corpus(n: int, seed: int = 0) -> torch.Tensor:
    """Rows of sentences that repeat one word six times: the context gives every masked word away."""
    g = torch.Generator().manual_seed(seed)
    word = torch.randint(5, 15, (n,), generator=g)
    return pack_sentences([[w] * 6 for w in word.tolist()], max_len=14)


def test_pretrain_beats_the_unigram_baseline_and_copies_visible_tokens():
    torch.manual_seed(0)
    model = BertForPreTraining(tiny_config(15))
    rows, val = {"input_ids": copy_corpus(256)}, {"input_ids": copy_corpus(32, seed=1)}
    history = pretrain(model, rows, val, steps=80, batch_size=32, lr=3e-3, eval_every=80, device="cpu")
    last = history.evals[-1]
    held_out = mlm_batch(val, torch.arange(len(val["input_ids"])), 15,
                         generator=torch.Generator().manual_seed(10_000))
    unigram = unigram_mlm_loss(rows["input_ids"], held_out["labels"], 15)
    assert last["mlm_loss"] < 0.5 * unigram
    assert last["visible_accuracy"] > 0.9


@pytest.mark.parametrize("static", [True, False])
def test_static_masking_repeats_the_same_masks(monkeypatch, static):
    from attnbook.bert import training

    seen = []

    def recording_loss(model, batch):
        seen.extend(zip(batch["input_ids"].tolist(), batch["labels"].tolist(), strict=True))
        return training.pretraining_loss.__wrapped__(model, batch)

    recording_loss.__wrapped__ = training.pretraining_loss
    monkeypatch.setattr(training, "pretraining_loss", recording_loss)
    torch.manual_seed(0)
    model = BertForPreTraining(tiny_config(15))
    rows, val = {"input_ids": copy_corpus(8)}, {"input_ids": copy_corpus(4, seed=1)}
    training.pretrain(model, rows, val, steps=3, batch_size=64, static_masking=static, device="cpu")
    distinct = {(tuple(i), tuple(y)) for i, y in seen}
    assert len(seen) == 3 * 64
    assert (len(distinct) <= 8) == static  # static: one masking per row; dynamic: a new one each draw


def test_finetune_frozen_layers_stay_put_and_head_learns():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(6, 20, (256, 10), generator=g)
    labels = (ids == 6).any(1).long()  # is token 6 in the sentence?
    ids[:, 0], ids[:, -1] = CLS, SEP
    model = BertForSequenceClassification(tiny_config(20, num_hidden_layers=2), num_labels=2)
    trainable = freeze_all_but_top(model, 1)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    assert trainable == sum(p.numel() for p in model.parameters() if p.requires_grad)
    history = finetune(model, ids[:200], labels[:200], ids[200:], labels[200:], steps=120, lr=3e-3,
                       device="cpu", eval_every=60, also_score={"train": (ids[:200], labels[:200])})
    assert all(torch.equal(p, frozen[n]) for n, p in model.named_parameters() if n in frozen)
    assert history.evals[-1]["accuracy"] > 0.85
    assert [e["step"] for e in history.evals] == [60, 120]
    assert history.evals[-1]["train_accuracy"] == classification_accuracy(model, ids[:200], labels[:200])
    assert classification_accuracy(model, ids[200:], labels[200:], chunk=5) == history.evals[-1]["accuracy"]
    with pytest.raises(ValueError, match="same length"):
        finetune(model, ids, labels[:3], ids, labels, steps=1)


def test_classifier_from_pretrained_copies_the_encoder_not_the_head():
    torch.manual_seed(0)
    pretrained = BertForPreTraining(tiny_config(30))
    classifier = classifier_from_pretrained(pretrained, num_labels=3)
    ids = torch.tensor([[CLS, 7, 8, SEP, PAD]])
    pretrained.eval(), classifier.eval()
    assert torch.equal(pretrained.bert(ids)[1], classifier.bert(ids)[1])  # same pooled [CLS]
    assert classifier(ids).shape == (1, 3)
    classifier.bert.embeddings.word_embeddings.weight.data.zero_()  # a copy, not shared
    assert pretrained.bert.embeddings.word_embeddings.weight.abs().sum() > 0
