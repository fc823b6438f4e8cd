"""attnbook.seq2seq: batching, loss and scoring, for the GRU Seq2Seq and the Transformer alike."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnbook import rnn, transformer
from attnbook.data import CharVocab
from attnbook.rnn import Seq2Seq, Seq2SeqConfig
from attnbook.seq2seq import (
    LengthBuckets,
    accuracy_by_length,
    aligned_translation,
    encode_pairs,
    encode_split,
    exact_match,
    seq2seq_loss,
    translate,
)
from attnbook.transformer import Transformer, TransformerConfig

PAD, BOS, EOS = 0, 1, 2
PAIRS = [("3 mar 1999", "1999-03-03"), ("17/11/2024", "2024-11-17"), ("Jan 5, 1961", "1961-01-05"),
         ("28 août 2040", "2040-08-28"), ("9.2.1975", "1975-02-09"), ("1 dic 2001", "2001-12-01")]


pytestmark = pytest.mark.usefixtures("one_thread")


def ids(rows: list[list[int]]) -> torch.Tensor:
    """Right-pad rows of ids with PAD into a (B, L) tensor."""
    L = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (L - len(r)) for r in rows])


def make(kind: str, vocab_size: int, seed: int = 0) -> Seq2Seq | Transformer:
    """A tiny model of each kind the helpers serve: 'gru', 'gru-plain' (no attention) or 'transformer'."""
    torch.manual_seed(seed)
    if kind == "transformer":
        return Transformer(TransformerConfig.preset("tiny", src_vocab_size=vocab_size, tgt_vocab_size=vocab_size))
    attention = None if kind == "gru-plain" else "additive"
    return Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=vocab_size, tgt_vocab_size=vocab_size,
                                        attention=attention))


KINDS = ["gru", "gru-plain", "transformer"]


# ----------------------------------------------------------------------------- data


def test_encode_pairs_wraps_targets_and_pads() -> None:
    v = CharVocab("abc")  # a=4, b=5, c=6
    src, tgt = encode_pairs([("ab", "c"), ("c", "ba")], v, v)
    assert src.tolist() == [[4, 5], [6, PAD]]
    assert tgt.tolist() == [[BOS, 6, EOS, PAD], [BOS, 5, 4, EOS]]


def test_encode_pairs_errors() -> None:
    v = CharVocab("abc")
    with pytest.raises(ValueError, match="non-empty"):
        encode_pairs([], v, v)
    with pytest.raises(TypeError, match="tuple of str"):
        encode_pairs([("a", 1)], v, v)
    with pytest.raises(TypeError, match="CharVocab"):
        encode_pairs([("a", "b")], v, "abc")


def test_length_buckets_cover_every_example_once_per_epoch() -> None:
    torch.manual_seed(0)
    lengths = torch.randint(1, 9, (50,))
    src = torch.where(torch.arange(8)[None] < lengths[:, None], 5, PAD)  # (50, 8), right-padded
    src[:, 0] = torch.arange(50) + 10  # the example's index, to recover it from a batch
    tgt = ids([[BOS, 4, EOS]] * 50)
    buckets = LengthBuckets(src, tgt, batch_size=8, seed=0, pool=2)
    assert len(buckets) == 7
    epochs = []
    for _ in range(2):
        seen = []
        for s, t in buckets:
            assert s.shape[0] <= 8 and s.shape[1] == int((s != PAD).sum(1).max())  # trimmed
            assert t.shape == (s.shape[0], 3)
            seen += (s[:, 0] - 10).tolist()
        assert sorted(seen) == list(range(50))
        epochs.append(seen)
    assert epochs[0] != epochs[1]  # reshuffled
    assert len(list(LengthBuckets(src, tgt, batch_size=8, drop_last=True))) == 6 == len(
        LengthBuckets(src, tgt, batch_size=8, drop_last=True)
    )
    with pytest.raises(ValueError, match="same number"):
        LengthBuckets(src, tgt[:3], batch_size=8)
    with pytest.raises(ValueError, match="batch_size"):
        LengthBuckets(src, tgt, batch_size=0)


# ----------------------------------------------------------------------------- loss


@pytest.mark.parametrize("kind", KINDS)
def test_loss_is_cross_entropy_of_the_shifted_target_without_padding(kind) -> None:
    m = make(kind, vocab_size=11)
    src = ids([[4, 5, 6, 7], [8, 9]])
    tgt = ids([[BOS, 3, 4, 5, EOS], [BOS, 6, EOS]])
    logits = m(src, tgt[:, :-1])  # (B, T-1, V)
    real = tgt[:, 1:] != PAD  # (B, T-1): the 4 + 2 scored positions
    want = F.cross_entropy(logits[real], tgt[:, 1:][real])
    assert torch.allclose(seq2seq_loss(m, (src, tgt)), want, atol=1e-6)
    with pytest.raises(TypeError, match="pair"):
        seq2seq_loss(m, src)
    with pytest.raises(ValueError, match="BOS and at least one"):
        seq2seq_loss(m, (src, tgt[:, :1]))


def test_helpers_reject_other_models() -> None:
    v = CharVocab("abc")
    src, tgt = encode_pairs([("ab", "c")], v, v)
    for call in (
        lambda: seq2seq_loss(nn.Linear(2, 2), (src, tgt)),
        lambda: exact_match(nn.Linear(2, 2), src, tgt),
        lambda: translate(nn.Linear(2, 2), ["ab"], v, v),
    ):
        with pytest.raises(TypeError, match="attnbook.rnn.Seq2Seq or an attnbook.transformer.Transformer"):
            call()


# ----------------------------------------------------------------------------- scoring


@pytest.mark.parametrize("kind", KINDS)
def test_exact_match_counts_the_greedy_translations_equal_to_the_target(kind) -> None:
    m = make(kind, vocab_size=9, seed=3)
    src = ids([[4, 5, 6], [7, 8], [5]])
    decode = rnn.greedy_decode if kind.startswith("gru") else transformer.greedy_decode
    out = decode(m, src, BOS, EOS, 4)
    out = out[0] if isinstance(out, tuple) else out  # (B, L): the model's own greedy output
    # targets: the model's own output for rows 0 and 2 (hits), something else for row 1
    rows = []
    for i, row in enumerate(out.tolist()):
        row = row[: row.index(EOS) + 1] if EOS in row else row
        rows.append([BOS] + (row if i != 1 else [3 if row[:1] != [3] else 4, EOS]))
    tgt = ids(rows)
    hits = exact_match(m, src, tgt, per_example=True, batch_size=2)  # two batches
    assert hits.tolist() == [True, False, True]
    assert exact_match(m, src, tgt) == pytest.approx(hits.float().mean().item())
    with pytest.raises(ValueError, match="same number"):
        exact_match(m, ids([[4]]), ids([[BOS, 3, EOS], [BOS, 3, EOS]]))


def test_accuracy_by_length_buckets() -> None:
    hits = torch.tensor([True, False, True, True])
    lengths = torch.tensor([5, 5, 12, 40])
    rows = accuracy_by_length(hits, lengths, [0, 10, 20, 30])
    assert [(r.lo, r.hi, r.count) for r in rows] == [(0, 10, 2), (10, 20, 1), (20, 30, 0)]
    assert rows[0].accuracy == 0.5 and rows[1].accuracy == 1.0
    assert rows[2].accuracy != rows[2].accuracy  # an empty bucket is nan; 40 is outside every bucket


@pytest.mark.parametrize(
    "hits, lengths, edges, error",
    [
        (torch.tensor([1, 0]), torch.tensor([3, 4]), [0, 10], TypeError),  # hits not boolean
        (torch.tensor([True]), torch.tensor([3, 4]), [0, 10], ValueError),  # different N
        (torch.tensor([True]), torch.tensor([3]), [10, 0], ValueError),  # edges decrease
        (torch.tensor([True]), torch.tensor([3]), [0], ValueError),  # one edge
    ],
)
def test_accuracy_by_length_rejects_bad_input(hits, lengths, edges, error) -> None:
    with pytest.raises(error):
        accuracy_by_length(hits, lengths, edges)


@pytest.mark.parametrize("kind", KINDS)
def test_every_model_overfits_a_tiny_batch_and_translates_it(kind) -> None:
    vocab = CharVocab.from_texts([s for p in PAIRS for s in p])
    src, tgt = encode_pairs(PAIRS, vocab, vocab)
    m = make(kind, vocab_size=len(vocab))
    assert exact_match(m, src, tgt) == 0.0  # untrained
    opt = torch.optim.Adam(m.parameters(), lr=2e-2 if kind.startswith("gru") else 3e-3)
    for _ in range(100):  # the loss drops below 0.05 after 30 (GRU) to 60 (Transformer) steps
        loss = seq2seq_loss(m, (src, tgt))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    assert exact_match(m, src, tgt) == 1.0
    assert translate(m, [s for s, _ in PAIRS], vocab, vocab, max_len=12) == [t for _, t in PAIRS]
    with pytest.raises(TypeError, match="single str"):
        translate(m, "3 mar 1999", vocab, vocab)


def test_encode_split_builds_the_vocabularies_from_training_pairs_only():
    data = encode_split([("ab", "xy"), ("b", "y")], [("abz", "xq"), ("a", "y")])
    assert data.test_src[0, 2] == data.src_vocab.unk_id  # "z" was never seen in training
    assert data.test_len.tolist() == [3, 1]
    assert data.src.shape == (2, 2) and data.tgt.shape == (2, 4)  # BOS x y EOS


def test_aligned_translation_labels_match_the_weights():
    torch.manual_seed(0)
    v = CharVocab("0123456789 ")
    model = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=len(v), tgt_vocab_size=len(v)))
    a = aligned_translation(model, "12 3", v, v, max_len=6)
    assert a.weights.shape == (len(a.written), 4)
    assert torch.allclose(a.weights.sum(-1), torch.ones(len(a.written)))
    assert a.source == ["1", "2", "␣", "3"]
    assert a.translation == v.decode([v.stoi.get(c, v.eos_id) for c in a.written if c != "<eos>"])
    plain = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=len(v), tgt_vocab_size=len(v), attention=None))
    with pytest.raises(TypeError, match="with attention"):
        aligned_translation(plain, "12", v, v)
    with pytest.raises(TypeError, match="text must be a str"):
        aligned_translation(model, ["12"], v, v)  # type: ignore[arg-type]
