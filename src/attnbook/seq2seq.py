"""Batching, training and scoring helpers shared by every sequence-to-sequence model.

They work for chapter 1's recurrent :class:`attnbook.rnn.Seq2Seq` and chapter
2's :class:`attnbook.transformer.Transformer` alike:

* :func:`encode_pairs` turns ``(source, target)`` strings into padded id
  tensors (:func:`encode_split`: vocabularies and tensors of a train/test
  split at once), and :class:`LengthBuckets` cuts them into shuffled batches of
  similar lengths;
* :func:`seq2seq_loss` is the teacher-forced cross-entropy, shaped to be
  :func:`attnbook.train.fit`'s ``loss_fn``, with optional label smoothing
  (PyTorch's fused ``F.cross_entropy``); :func:`label_smoothed_cross_entropy`
  is the same loss written out, the teachable path beside the fast one, and
  :func:`calibration` measures how confident a trained model is and how
  well its confidence matches its accuracy;
* :func:`exact_match`, :func:`accuracy_by_length` (:func:`accuracy_table` for a
  printed table) and :func:`translate` score and run greedy decoding, through each model's own ``greedy_decode``
  (:func:`attnbook.rnn.greedy_decode`, :func:`attnbook.transformer.greedy_decode`);
  :func:`aligned_translation` returns a recurrent model's attention weights with
  the labels to draw them.

Both models read ``forward(src, tgt_in) -> logits`` (B, T, V) and carry a
config with ``src_vocab_size``, ``tgt_vocab_size`` and ``pad_id``. Token ids
follow :class:`attnbook.data.CharVocab` (``<pad>`` = 0, ``<bos>`` = 1,
``<eos>`` = 2); sources and targets are right-padded.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, NamedTuple

import torch
import torch.nn.functional as F

from attnbook import rnn, transformer
from attnbook._checks import an_int, float_tensor, number_in, positive_int, token_ids

if TYPE_CHECKING:  # annotations only: importing attnbook.data here would load the data package
    from attnbook.data.vocab import CharVocab

# the two configs are imported for the doctests
from attnbook.rnn import Seq2Seq, Seq2SeqConfig  # noqa: F401
from attnbook.transformer import Transformer, TransformerConfig  # noqa: F401

__all__ = [
    "encode_pairs",
    "EncodedSplit",
    "encode_split",
    "LengthBuckets",
    "seq2seq_loss",
    "label_smoothed_cross_entropy",
    "Calibration",
    "calibration",
    "exact_match",
    "LengthBucket",
    "accuracy_by_length",
    "accuracy_table",
    "translate",
    "Alignment",
    "aligned_translation",
]

Model = Seq2Seq | Transformer


def _check_model(model: object) -> Model:
    """``model`` if it is one of the sequence-to-sequence models these helpers know."""
    if not isinstance(model, (Seq2Seq, Transformer)):
        raise TypeError(
            "model must be an attnbook.rnn.Seq2Seq or an attnbook.transformer.Transformer, "
            f"got {type(model).__name__}"
        )
    return model


def _check_examples(model: object, src: torch.Tensor, tgt: torch.Tensor) -> None:
    """``model`` one of these helpers' models, and ``src`` (N, S), ``tgt`` (N, T) ids of its vocabularies."""
    model = _check_model(model)
    token_ids("src", src, model.config.src_vocab_size, dim=2)
    token_ids("tgt", tgt, model.config.tgt_vocab_size, dim=2)
    if src.shape[0] != tgt.shape[0]:
        raise ValueError(f"src and tgt must hold the same number of examples, got {src.shape[0]} and {tgt.shape[0]}")


def _greedy_tokens(model: Model, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int) -> torch.Tensor:
    """The generated ids (B, L) of the model's own ``greedy_decode`` (no BOS, EOS kept)."""
    _check_model(model)
    if isinstance(model, Seq2Seq):
        tokens, _ = rnn.greedy_decode(model, src, bos_id, eos_id, max_len)  # the attention is not needed here
        return tokens
    return transformer.greedy_decode(model, src, bos_id, eos_id, max_len)  # (B, L)


def encode_pairs(
    pairs: Sequence[tuple[str, str]],
    src_vocab: CharVocab,
    tgt_vocab: CharVocab,
    *,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(source, target)`` strings -> ``src`` (N, S) ids and ``tgt`` (N, T) = BOS + ids + EOS, right-padded.

    The vocabularies are :class:`attnbook.data.CharVocab` (anything with
    ``encode_batch(texts, bos=, eos=)``).

    >>> from attnbook.data import CharVocab
    >>> v = CharVocab("abc")                                    # a=4, b=5, c=6
    >>> src, tgt = encode_pairs([("ab", "c"), ("c", "ba")], v, v)
    >>> src
    tensor([[4, 5],
            [6, 0]])
    >>> tgt                                                     # <bos>=1 ... <eos>=2, <pad>=0
    tensor([[1, 6, 2, 0],
            [1, 5, 4, 2]])
    """
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence) or len(pairs) == 0:
        raise ValueError("pairs must be a non-empty sequence of (source, target) strings")
    for p in pairs:
        if not (isinstance(p, tuple) and len(p) == 2 and all(isinstance(s, str) for s in p)):
            raise TypeError(f"each pair must be a (source, target) tuple of str, got {p!r}")
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if not hasattr(vocab, "encode_batch"):
            raise TypeError(f"{name} must be a CharVocab (with encode_batch), got {type(vocab).__name__}")
    src = src_vocab.encode_batch([s for s, _ in pairs], device=device)  # (N, S)
    tgt = tgt_vocab.encode_batch([t for _, t in pairs], bos=True, eos=True, device=device)  # (N, T)
    return src, tgt


class EncodedSplit(NamedTuple):
    """What :func:`encode_split` returns: the vocabularies and the id tensors of both parts."""

    src_vocab: CharVocab  # the training sources' characters
    tgt_vocab: CharVocab  # the training targets' characters
    src: torch.Tensor  # (N, S) training sources
    tgt: torch.Tensor  # (N, T) training targets, BOS ... EOS
    test_src: torch.Tensor  # (M, S') held-out sources
    test_tgt: torch.Tensor  # (M, T') held-out targets
    test_len: torch.Tensor  # (M,) held-out source lengths in characters


def encode_split(train: Sequence[tuple[str, str]], test: Sequence[tuple[str, str]]) -> EncodedSplit:
    """Character vocabularies built from ``train``, and both parts encoded with :func:`encode_pairs`.

    A held-out character the training pairs lack becomes ``<unk>``.

    >>> data = encode_split([("ab", "x"), ("ba", "yx")], [("abc", "y")])
    >>> len(data.src_vocab), data.src.shape, data.test_src.tolist(), data.test_len.tolist()
    (6, torch.Size([2, 2]), [[4, 5, 3]], [3])
    """
    from attnbook.data.vocab import CharVocab  # here: importing attnbook.data at the top loads the data package

    src_vocab = CharVocab.from_texts(s for s, _ in train)
    tgt_vocab = CharVocab.from_texts(t for _, t in train)
    src, tgt = encode_pairs(train, src_vocab, tgt_vocab)  # (N, S), (N, T)
    test_src, test_tgt = encode_pairs(test, src_vocab, tgt_vocab)  # (M, S'), (M, T')
    test_len = torch.tensor([len(s) for s, _ in test])  # (M,)
    return EncodedSplit(src_vocab, tgt_vocab, src, tgt, test_src, test_tgt, test_len)


class LengthBuckets:
    """Shuffled ``(src, tgt)`` batches whose sources have similar lengths; a new order every epoch.

    Iterating gives one epoch: the examples are shuffled, cut into pools of
    ``pool`` batches, sorted by source length inside each pool, cut into
    batches of ``batch_size`` and the batches shuffled. Each batch is trimmed
    to its own longest source and target, so short inputs do not pay for the
    longest one (the encoder, and the attention at every decoder step, cost
    time proportional to S). Pass it to :func:`attnbook.train.fit` as
    ``train_batches``; ``len()`` is the number of batches per epoch.

    >>> src = torch.tensor([[4, 0, 0], [4, 5, 6], [5, 0, 0], [6, 5, 0]])
    >>> tgt = torch.tensor([[1, 4, 2], [1, 5, 2], [1, 6, 2], [1, 4, 2]])
    >>> batches = LengthBuckets(src, tgt, batch_size=2, seed=0)
    >>> len(batches), sorted(b[0].shape[1] for b in batches)    # lengths {1, 1} and {2, 3}
    (2, [1, 3])
    """

    def __init__(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        batch_size: int,
        *,
        pad_id: int = 0,
        seed: int = 0,
        pool: int = 50,
        drop_last: bool = False,
    ) -> None:
        for name, x in (("src", src), ("tgt", tgt)):
            if not isinstance(x, torch.Tensor) or x.dtype.is_floating_point or x.dtype == torch.bool or x.dim() != 2:
                raise TypeError(f"{name} must be a (N, length) integer tensor of token ids")
        if src.shape[0] != tgt.shape[0] or src.shape[0] == 0:
            raise ValueError(
                f"src and tgt must hold the same number N >= 1 of examples, got {src.shape[0]} and {tgt.shape[0]}"
            )
        self.batch_size = positive_int("batch_size", batch_size)
        self.pool = positive_int("pool", pool)
        self.src, self.tgt, self.pad_id, self.drop_last = src, tgt, pad_id, drop_last
        self.src_len = (src != pad_id).sum(dim=1).tolist()  # N lengths
        self.tgt_len = (tgt != pad_id).sum(dim=1).tolist()
        self._rng = random.Random(seed)

    def __len__(self) -> int:
        n = self.src.shape[0]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        order = list(range(self.src.shape[0]))
        self._rng.shuffle(order)
        size = self.batch_size * self.pool
        batches: list[list[int]] = []
        for start in range(0, len(order), size):
            chunk = sorted(order[start : start + size], key=self.src_len.__getitem__)
            batches += [chunk[i : i + self.batch_size] for i in range(0, len(chunk), self.batch_size)]
        if self.drop_last:
            batches = [b for b in batches if len(b) == self.batch_size]
        self._rng.shuffle(batches)
        for b in batches:
            index = torch.tensor(b)
            S = max(self.src_len[i] for i in b)
            T = max(self.tgt_len[i] for i in b)
            yield self.src[index, :S], self.tgt[index, :T]  # (B, S), (B, T)


def seq2seq_loss(
    model: Model, batch: tuple[torch.Tensor, torch.Tensor], *, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Teacher-forced cross-entropy of ``batch = (src, tgt)``, ``tgt`` = BOS + ids + EOS (padded).

    The model reads ``tgt[:, :-1]`` and predicts ``tgt[:, 1:]``; padding is not
    scored. Shaped to be :func:`attnbook.train.fit`'s ``loss_fn``; with
    ``label_smoothing=epsilon`` (``functools.partial`` makes it a ``loss_fn``)
    each target is smoothed as :func:`label_smoothed_cross_entropy` says.

    >>> _ = torch.manual_seed(0)
    >>> batch = (torch.tensor([[4, 5]]), torch.tensor([[1, 6, 2]]))  # src (1, 2), tgt (1, 3)
    >>> rnn_model = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8))
    >>> 1.5 < seq2seq_loss(rnn_model, batch).item() < 2.6           # about ln(8) = 2.08 untrained
    True
    >>> tf = Transformer(TransformerConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8))
    >>> seq2seq_loss(tf, batch).item() > 1.0                         # either model
    True
    """
    _check_model(model)
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError("batch must be a (src, tgt) pair of id tensors")
    src, tgt = batch
    token_ids("tgt", tgt, model.config.tgt_vocab_size, dim=2)
    if tgt.shape[1] < 2:
        raise ValueError(f"tgt must hold BOS and at least one more token per row, got shape {tuple(tgt.shape)}")
    number_in("label_smoothing", label_smoothing, 0, 1, "[]")
    logits = model(src, tgt[:, :-1])  # (B, T-1, V)
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),  # (B (T-1), V)
        tgt[:, 1:].reshape(-1),  # (B (T-1),)
        ignore_index=model.config.pad_id,
        label_smoothing=label_smoothing,
    )


def label_smoothed_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, epsilon: float, ignore_index: int = -100
) -> torch.Tensor:
    """Cross-entropy against targets smoothed towards uniform, averaged over the targets not ignored.

    Each target ``y`` becomes the distribution ``(1 - epsilon)`` on ``y`` plus
    ``epsilon / V`` on every one of the ``V`` classes, ``y`` included (Szegedy
    et al. 2016, and PyTorch's ``F.cross_entropy(..., label_smoothing=epsilon)``,
    which gives the same numbers). Its cross-entropy with the model's ``p`` is

        ``(1 - epsilon) * -log p[y] + epsilon * mean over v of -log p[v]``.

    ``logits`` (..., V), classes on the last axis; ``targets`` (...) holds
    class ids, or ``ignore_index`` where nothing is scored (padding). Returns a
    0-dim tensor in nats, in ``logits``' dtype (``nan`` if every target is
    ignored, as in PyTorch). Probabilities (1/2, 1/4, 1/4), target 0:

    >>> logits = torch.tensor([[0.5, 0.25, 0.25], [1.0, 2.0, 3.0]]).log()
    >>> targets = torch.tensor([0, -100])                       # the second is ignored
    >>> round(label_smoothed_cross_entropy(logits, targets, 0.0).item(), 4)  # ln 2
    0.6931
    >>> round(label_smoothed_cross_entropy(logits, targets, 0.3).item(), 4)  # 0.7 ln 2 + 0.3 (5/3) ln 2
    0.8318
    """
    float_tensor("logits", logits)
    if logits.dim() < 1 or logits.shape[-1] < 1:
        raise ValueError(f"logits must have shape (..., V) with V >= 1, got {tuple(logits.shape)}")
    token_ids("targets", targets)
    if targets.shape != logits.shape[:-1]:
        raise ValueError(
            f"targets must have the shape of logits without its last axis, {tuple(logits.shape[:-1])}, "
            f"got {tuple(targets.shape)}"
        )
    number_in("epsilon", epsilon, 0, 1, "[]")
    an_int("ignore_index", ignore_index)
    V = logits.shape[-1]
    keep = targets != ignore_index  # (...)
    if bool(((targets[keep] < 0) | (targets[keep] >= V)).any()):
        raise ValueError(f"targets must be class ids in 0 .. {V - 1} or ignore_index={ignore_index}")
    log_p = logits.log_softmax(dim=-1)  # (..., V)
    nll = -log_p.gather(-1, targets.masked_fill(~keep, 0).unsqueeze(-1)).squeeze(-1)  # (...): -log p[y]
    uniform = -log_p.mean(dim=-1)  # (...): the cross-entropy with the uniform distribution
    per_target = (1 - epsilon) * nll + epsilon * uniform  # (...)
    return per_target[keep].mean()


class Calibration(NamedTuple):
    """What :func:`calibration` measures over the scored target tokens (padding excluded)."""

    nll: float  # mean -ln p(y_t | y_<t, x): the loss without smoothing, in nats
    accuracy: float  # share of tokens whose most probable class is the target (teacher forcing)
    confidence: float  # mean of the largest probability, whether it is right or not
    ece: float  # expected calibration error: sum over confidence bins of share * |accuracy - confidence|


@torch.no_grad()
def calibration(
    model: Model, src: torch.Tensor, tgt: torch.Tensor, *, bins: int = 10, batch_size: int = 1000
) -> Calibration:
    """How sure a model is of each next token, and how well that matches how often it is right.

    Teacher-forced over ``src`` (N, S) and ``tgt`` (N, T) as :func:`seq2seq_loss`
    reads them. Each scored token has a confidence, the largest probability of
    its prediction, and is right or wrong; a well calibrated model is right on
    80 % of the tokens it gives 0.8. The expected calibration error groups the
    tokens into ``bins`` equal-width bins of confidence and averages
    ``|accuracy - confidence|`` over them, weighted by their share of the
    tokens (Guo et al., *On Calibration of Modern Neural Networks*, 2017). Runs
    in eval mode and restores the model's mode.

    >>> _ = torch.manual_seed(0)
    >>> tf = Transformer(TransformerConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8))
    >>> src, tgt = torch.tensor([[4, 5], [6, 0]]), torch.tensor([[1, 6, 2], [1, 2, 0]])
    >>> c = calibration(tf, src, tgt)
    >>> 0 <= c.accuracy <= 1 and 1 / 8 <= c.confidence <= 1 and c.nll > 0
    True
    """
    _check_examples(model, src, tgt)
    positive_int("bins", bins)
    positive_int("batch_size", batch_size)
    pad = model.config.pad_id
    device = next(model.parameters()).device
    nll, confidence, right = [], [], []
    was_training = model.training
    model.eval()
    try:
        for start in range(0, src.shape[0], batch_size):
            s, t = src[start : start + batch_size].to(device), tgt[start : start + batch_size].to(device)
            log_p = model(s, t[:, :-1]).float().log_softmax(dim=-1)  # (b, T-1, V)
            y = t[:, 1:]  # (b, T-1)
            keep = y != pad
            top, guess = log_p.max(dim=-1)  # (b, T-1) each
            nll.append(-log_p.gather(-1, y.unsqueeze(-1)).squeeze(-1)[keep].cpu())
            confidence.append(top.exp()[keep].cpu())
            right.append((guess == y)[keep].cpu())
    finally:
        model.train(was_training)
    conf, hit = torch.cat(confidence).double(), torch.cat(right).double()  # (n,) each
    which = (conf * bins).long().clamp(max=bins - 1)  # (n,): the bin of each token
    count = torch.bincount(which, minlength=bins).double()  # (bins,)
    gap = (torch.bincount(which, hit, minlength=bins) - torch.bincount(which, conf, minlength=bins)).abs()
    return Calibration(
        nll=float(torch.cat(nll).double().mean()),
        accuracy=float(hit.mean()),
        confidence=float(conf.mean()),
        ece=float(gap.sum() / count.sum()),
    )


def _as_rows(tokens: torch.Tensor, eos_id: int, pad_id: int) -> list[tuple[int, ...]]:
    """Each row's ids up to and including the first EOS (everything, if there is none)."""
    rows = []
    for row in tokens.tolist():
        row = [i for i in row if i != pad_id]
        rows.append(tuple(row[: row.index(eos_id) + 1] if eos_id in row else row))
    return rows


@torch.no_grad()
def exact_match(
    model: Model,
    src: torch.Tensor,
    tgt: torch.Tensor,
    *,
    bos_id: int = 1,
    eos_id: int = 2,
    batch_size: int = 1000,
    per_example: bool = False,
) -> float | torch.Tensor:
    """Fraction of sources whose greedy translation equals the target exactly (EOS included).

    ``src`` (N, S) and ``tgt`` (N, T) as from :func:`encode_pairs` (``tgt``
    starts with BOS). ``per_example=True`` returns the (N,) boolean hits instead,
    e.g. to group accuracy by input length. ``model`` is a
    :class:`~attnbook.rnn.Seq2Seq` or a :class:`~attnbook.transformer.Transformer`,
    decoded by its own module's ``greedy_decode``.

    >>> _ = torch.manual_seed(0)
    >>> src, tgt = torch.tensor([[4, 5]]), torch.tensor([[1, 6, 2]])  # (N, S), (N, T)
    >>> model = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8))
    >>> exact_match(model, src, tgt)                                  # untrained
    0.0
    >>> tf = Transformer(TransformerConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8))
    >>> exact_match(tf, src, tgt, per_example=True)
    tensor([False])
    """
    _check_examples(model, src, tgt)
    positive_int("batch_size", batch_size)
    pad = model.config.pad_id
    device = next(model.parameters()).device
    hits = []
    for start in range(0, src.shape[0], batch_size):
        s, t = src[start : start + batch_size], tgt[start : start + batch_size]
        lengths = (s != pad).sum(dim=1)
        s = s[:, : int(lengths.max())].to(device)  # trim the padding every row has
        want = _as_rows(t[:, 1:], eos_id, pad)
        got = _greedy_tokens(model, s, bos_id, eos_id, max_len=t.shape[1] - 1)  # (b, L)
        hits += [g == w for g, w in zip(_as_rows(got.cpu(), eos_id, pad), want, strict=True)]
    hits_t = torch.tensor(hits, dtype=torch.bool)
    return hits_t if per_example else float(hits_t.float().mean())


class LengthBucket(NamedTuple):
    """One row of :func:`accuracy_by_length`: inputs of ``lo <= length < hi``."""

    lo: int  # shortest length in the bucket
    hi: int  # first length after the bucket
    accuracy: float  # fraction of hits (nan for an empty bucket)
    count: int  # type: ignore[assignment]  # examples in the bucket; a public field that hides tuple.count


def accuracy_by_length(hits: torch.Tensor, lengths: torch.Tensor, edges: Sequence[int]) -> list[LengthBucket]:
    """Accuracy grouped by input length: one :class:`LengthBucket` per ``edges[i] <= length < edges[i+1]``.

    ``hits`` (N,) is boolean, e.g. ``exact_match(..., per_example=True)``;
    ``lengths`` (N,) holds each input's length; ``edges`` increase strictly.

    >>> hits = torch.tensor([True, True, False, True, False, False])
    >>> lengths = torch.tensor([3, 4, 12, 15, 25, 28])
    >>> [(b.lo, b.hi, b.accuracy, b.count) for b in accuracy_by_length(hits, lengths, [0, 10, 20, 30])]
    [(0, 10, 1.0, 2), (10, 20, 0.5, 2), (20, 30, 0.0, 2)]
    """
    for name, x in (("hits", hits), ("lengths", lengths)):
        if not isinstance(x, torch.Tensor) or x.dim() != 1:
            raise TypeError(f"{name} must be a 1-D tensor (N,), got {getattr(x, 'shape', type(x).__name__)}")
    if hits.dtype != torch.bool:
        raise TypeError(f"hits must be a boolean tensor (True = correct), got {hits.dtype}")
    if hits.shape != lengths.shape:
        raise ValueError(f"hits and lengths must both be (N,), got {tuple(hits.shape)} and {tuple(lengths.shape)}")
    edges = list(edges)
    if len(edges) < 2 or any(not isinstance(e, int) or isinstance(e, bool) for e in edges):
        raise ValueError(f"edges must be at least two ints, got {edges!r}")
    if any(b <= a for a, b in pairwise(edges)):
        raise ValueError(f"edges must increase strictly, got {edges}")
    lengths = lengths.cpu()
    hits = hits.cpu()
    rows = []
    for lo, hi in pairwise(edges):
        sel = (lengths >= lo) & (lengths < hi)  # (N,)
        n = int(sel.sum())
        rows.append(LengthBucket(lo, hi, float(hits[sel].float().mean()) if n else float("nan"), n))
    return rows


def accuracy_table(hits: torch.Tensor, lengths: torch.Tensor, edges: Sequence[int]) -> dict[str, tuple[float, int]]:
    """:func:`accuracy_by_length` as the benchmarks print it: ``"lo-hi"`` -> ``(accuracy, count)``.

    Both lengths of a label are included; empty buckets are left out, and a
    last edge of 999 or more stands for "and longer" (``"lo+"``).

    >>> hits = torch.tensor([True, True, False, True, False])
    >>> accuracy_table(hits, torch.tensor([3, 4, 12, 15, 45]), [0, 10, 20, 30, 999])
    {'0-9': (1.0, 2), '10-19': (0.5, 2), '30+': (0.0, 1)}
    """
    return {f"{b.lo}-{b.hi - 1}" if b.hi < 999 else f"{b.lo}+": (b.accuracy, b.count)
            for b in accuracy_by_length(hits, lengths, edges) if b.count}


def translate(
    model: Model,
    texts: Sequence[str],
    src_vocab: CharVocab,
    tgt_vocab: CharVocab,
    *,
    max_len: int = 64,
) -> list[str]:
    """Greedy translations of ``texts`` as strings, for a ``Seq2Seq`` or a ``Transformer``.

    For the attention weights too, call :func:`attnbook.rnn.greedy_decode`.

    >>> from attnbook.data import CharVocab
    >>> _ = torch.manual_seed(0)
    >>> v = CharVocab("0123456789-")
    >>> model = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=len(v), tgt_vocab_size=len(v)))
    >>> out = translate(model, ["12", "345"], v, v, max_len=4)  # untrained: some string of <= 4 chars
    >>> len(out), all(len(s) <= 4 for s in out)
    (2, True)
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, got a single str (wrap it in a list)")
    _check_model(model)
    device = next(model.parameters()).device
    src = src_vocab.encode_batch(list(texts), device=device)  # (B, S)
    tokens = _greedy_tokens(model, src, tgt_vocab.bos_id, tgt_vocab.eos_id, max_len)  # (B, L)
    return tgt_vocab.decode_batch(tokens.cpu())


class Alignment(NamedTuple):
    """What :func:`aligned_translation` returns, ready for :func:`attnbook.plots.attention_heatmap`."""

    translation: str  # the greedy translation, without EOS
    weights: torch.Tensor  # (T, S): row t the weights with which output token t was written
    written: list[str]  # (T,) the output tokens, "<eos>" last if the model stopped
    source: list[str]  # (S,) the source characters, a space shown as "␣"


def aligned_translation(
    model: Seq2Seq, text: str, src_vocab: CharVocab, tgt_vocab: CharVocab, *, max_len: int = 80
) -> Alignment:
    """Translate one text greedily with a recurrent model with attention, and keep its weights.

    >>> from attnbook.data import CharVocab
    >>> _ = torch.manual_seed(0)
    >>> v = CharVocab("0123456789 ")
    >>> model = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=len(v), tgt_vocab_size=len(v)))
    >>> a = aligned_translation(model, "1 2", v, v, max_len=4)  # untrained: some 4 tokens
    >>> a.weights.shape, a.source, len(a.written)
    (torch.Size([4, 3]), ['1', '␣', '2'], 4)
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if not isinstance(model, Seq2Seq) or model.config.attention is None:
        raise TypeError("model must be an attnbook.rnn.Seq2Seq with attention (its weights are what is drawn)")
    device = next(model.parameters()).device
    src_ids = src_vocab.encode_batch([text], device=device)  # (1, S)
    out, weights = rnn.greedy_decode(model, src_ids, tgt_vocab.bos_id, tgt_vocab.eos_id, max_len=max_len)
    assert weights is not None  # a model with attention returns its weights
    ids = out[0].tolist()  # (L,)
    eos = tgt_vocab.eos_id
    T = ids.index(eos) + 1 if eos in ids else len(ids)  # up to and with the EOS
    written = [tgt_vocab.itos[i] if i != eos else "<eos>" for i in ids[:T]]
    source = [c if c != " " else "␣" for c in text]
    return Alignment(tgt_vocab.decode(ids[:T]), weights[0, :T].cpu(), written, source)
