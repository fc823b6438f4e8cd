"""Chapter 3's recipes: the course's text as BERT inputs, pretraining and fine-tuning loops.

Small to large: :func:`words` and :class:`WordVocab` (a word-level vocabulary
with BERT's five special tokens), :func:`shakespeare_speeches`,
:func:`pack_sentences` (pretraining rows, RoBERTa's "full sentences" packing)
and :func:`nsp_rows` (sentence pairs with segment ids), :func:`encode_sentences`
(classification rows); then the measures -- :func:`unigram_mlm_loss`, the
baseline a masked language model must beat, and :func:`bow_baseline`, a
bag-of-words logistic regression (scikit-learn) -- and the loops:
:func:`pretrain` (MLM, plus NSP when the rows carry labels) and
:func:`finetune` (a [CLS] classifier), both on :func:`attnbook.train.fit`.

Why a word-level vocabulary: at this scale (about 1.2 M words of text, a
2-layer model) whole words make every masked prediction a word the reader can
judge, and the chapter's calibration was measured with it; any tokenizer with
``encode(str) -> list[int]`` (a WordPiece one included) fits the same rows.

What this module adds over :mod:`attnbook.bert`: the model, the masking and
the losses live there; here they are wired to data, batches and the shared
training loop. Shape legend: ``N`` rows, ``B`` batch, ``T`` sequence length,
``V`` vocabulary size.

References: Devlin et al., *BERT* (2018, https://arxiv.org/abs/1810.04805);
Liu et al., *RoBERTa* (2019, https://arxiv.org/abs/1907.11692) for packing,
dynamic masking and dropping NSP.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import torch
import torch.nn.functional as F

from attnbook.bert import BertForPreTraining, BertForSequenceClassification, make_nsp_pairs, mask_tokens
from attnbook.train import History, fit

__all__ = [
    "SPECIAL_TOKENS", "words", "WordVocab", "shakespeare_speeches", "pack_sentences", "nsp_rows",
    "encode_sentences", "unigram_mlm_loss", "bow_baseline", "mlm_batch", "pretraining_loss",
    "pretraining_metrics", "pretrain", "classification_accuracy",
    "classifier_from_pretrained", "finetune", "FINETUNE_RECIPE",
]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4, BERT's order of roles
PAD, UNK, CLS, SEP, MASK = range(5)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)*|[^\sa-z0-9]")
_SPEAKER = re.compile(r"^[A-Z][A-Za-z .,'&-]*:$")


def words(text: str) -> list[str]:
    """Lower-cased words (with their apostrophes) and single punctuation marks.

    >>> words("Don't panic, Hamlet!")
    ["don't", 'panic', ',', 'hamlet', '!']
    """
    return _WORD.findall(text.lower())


class WordVocab:
    """Words <-> ids; ids 0..4 are ``[PAD] [UNK] [CLS] [SEP] [MASK]``, then words by frequency.

    >>> vocab = WordVocab.build(["to be or not to be"], max_size=9)
    >>> vocab.tokens[5:], vocab.encode("To be, or else"), vocab.decode([2, 5, 6, 4, 3, 0])
    (['be', 'to', 'not', 'or'], [6, 5, 1, 8, 1], '[CLS] be to [MASK] [SEP]')
    """

    def __init__(self, tokens: Sequence[str]) -> None:
        if tuple(tokens[:5]) != SPECIAL_TOKENS:
            raise ValueError(f"tokens must start with {SPECIAL_TOKENS}, got {tuple(tokens[:5])}")
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            raise ValueError("tokens must be distinct")

    @classmethod
    def build(cls, texts: Iterable[str], max_size: int = 8000) -> WordVocab:
        """The ``max_size - 5`` most frequent words of ``texts`` (ties: alphabetical) after the specials."""
        if not isinstance(max_size, int) or max_size <= len(SPECIAL_TOKENS):
            raise ValueError(f"max_size must be an int > {len(SPECIAL_TOKENS)}, got {max_size!r}")
        counts = Counter(w for text in texts for w in words(text))
        ranked = sorted(counts, key=lambda w: (-counts[w], w))[: max_size - len(SPECIAL_TOKENS)]
        return cls([*SPECIAL_TOKENS, *ranked])

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    @property
    def special_ids(self) -> list[int]:
        return list(range(len(SPECIAL_TOKENS)))

    def encode(self, text: str) -> list[int]:
        return [self.index.get(w, UNK) for w in words(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """Tokens joined by spaces, padding dropped."""
        return " ".join(self.tokens[int(i)] for i in ids if int(i) != PAD)


def shakespeare_speeches(text: str, min_lines: int = 1) -> list[list[str]]:
    """The speeches of ``load_shakespeare()``'s text: for each, its lines of verse or prose.

    A speech is a ``NAME:`` line followed by its lines up to a blank line; stage
    directions (``_Enter ..._``) and headings are dropped.

    >>> shakespeare_speeches("# Act I\\n\\nA:\\nWho's there?\\n_Exit_\\nNay, answer me.\\n\\nB:\\nLong live the king!")
    [["Who's there?", 'Nay, answer me.'], ['Long live the king!']]
    """
    speeches = []
    for block in text.split("\n\n"):
        lines = block.strip("\n").split("\n")
        if not _SPEAKER.match(lines[0]):
            continue
        body = [line.strip() for line in lines[1:] if line.strip() and not line.startswith(("#", "_"))]
        if len(body) >= min_lines:
            speeches.append(body)
    return speeches


def _positive_int(name: str, value: object, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def pack_sentences(sentences: Sequence[Sequence[int]], max_len: int) -> torch.Tensor:
    """Rows ``[CLS] s1 [SEP] s2 [SEP] ... [PAD]...`` filled greedily with whole sentences: (N, max_len).

    A sentence longer than ``max_len - 2`` is cut; consecutive sentences stay
    together, so each row is a stretch of running text (RoBERTa's packing).

    >>> pack_sentences([[7, 8], [9], [10, 11, 12]], max_len=6)
    tensor([[ 2,  7,  8,  3,  9,  3],
            [ 2, 10, 11, 12,  3,  0]])
    """
    _positive_int("max_len", max_len, 3)
    rows, row = [], [CLS]
    for sentence in sentences:
        piece = [*list(sentence)[: max_len - 2], SEP]
        if len(row) + len(piece) > max_len:
            rows.append(row)
            row = [CLS]
        row += piece
    if len(row) > 1:
        rows.append(row)
    return torch.tensor([r + [PAD] * (max_len - len(r)) for r in rows], dtype=torch.long)  # (N, max_len)


def _pair(a: Sequence[int], b: Sequence[int], max_len: int) -> tuple[list[int], list[int]]:
    """``[CLS] a [SEP] b [SEP]`` cut to fit (the longer side loses tokens first) and its segment ids."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_len - 3:
        (a if len(a) >= len(b) else b).pop()
    ids = [CLS, *a, SEP, *b, SEP]
    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return ids + [PAD] * (max_len - len(ids)), types + [0] * (max_len - len(types))


def nsp_rows(
    groups: Sequence[Sequence[Sequence[int]]], max_len: int, *, generator: torch.Generator | None = None
) -> dict[str, torch.Tensor]:
    """Next-sentence pairs from each group of consecutive lines (one speech), as padded rows.

    Returns ``input_ids`` and ``token_type_ids`` (N, max_len) and
    ``next_sentence_label`` (N,), 0 = B follows A, 1 = B is a random line --
    Hugging Face's convention. The pairs come from
    :func:`attnbook.bert.make_nsp_pairs`, one group at a time.
    """
    _positive_int("max_len", max_len, 4)
    ids, types, labels = [], [], []
    for group in groups:
        if len(group) < 3:  # a random B that is not the true next line needs a third line
            continue
        for a, b, is_next in make_nsp_pairs(list(group), generator=generator):
            row, seg = _pair(a, b, max_len)
            ids.append(row)
            types.append(seg)
            labels.append(0 if is_next else 1)
    return {"input_ids": torch.tensor(ids), "token_type_ids": torch.tensor(types),
            "next_sentence_label": torch.tensor(labels)}


def encode_sentences(texts: Sequence[str], vocab: WordVocab, max_len: int) -> torch.Tensor:
    """One row ``[CLS] sentence [SEP] [PAD]...`` per text, cut to ``max_len``: (N, max_len).

    >>> vocab = WordVocab.build(["a fine film"])
    >>> encode_sentences(["A film", "fine fine fine fine"], vocab, max_len=5)
    tensor([[2, 5, 6, 3, 0],
            [2, 7, 7, 7, 3]])
    """
    _positive_int("max_len", max_len, 3)
    rows = [[CLS, *vocab.encode(t)[: max_len - 2], SEP] for t in texts]
    return torch.tensor([r + [PAD] * (max_len - len(r)) for r in rows], dtype=torch.long)  # (N, max_len)


def unigram_mlm_loss(train_ids: torch.Tensor, labels: torch.Tensor, vocab_size: int) -> float:
    """MLM loss (nats) of a model that ignores the context and guesses by word frequency.

    The frequencies are counted over the non-special tokens of ``train_ids``
    (add-one smoothed); the loss is their mean negative log-probability at the
    positions of ``labels`` that are not -100. A masked language model has
    learnt something from context only once it goes below this.

    >>> round(unigram_mlm_loss(torch.tensor([5, 5, 5, 6]), torch.tensor([5, -100]), vocab_size=7), 4)
    0.4055
    """
    counts = torch.bincount(train_ids.flatten(), minlength=vocab_size).double()  # (V,)
    counts[: len(SPECIAL_TOKENS)] = 0
    counts[len(SPECIAL_TOKENS):] += 1
    log_p = (counts / counts.sum()).log()  # (V,)
    chosen = labels[labels != -100]
    if chosen.numel() == 0:
        raise ValueError("labels has no position to score (every entry is -100)")
    return float(-log_p[chosen].mean())


def bow_baseline(train_texts: Sequence[str], train_labels: Sequence[int], test_texts: Sequence[str],
                 test_labels: Sequence[int]) -> float:
    """Test accuracy of a logistic regression on binary bag-of-words features (scikit-learn).

    The words are those of :func:`words`; the regression is scikit-learn's
    default (L2, C = 1). It is the baseline a fine-tuned BERT has to beat.
    """
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    features = CountVectorizer(tokenizer=words, lowercase=False, token_pattern=None, binary=True)
    x_train = features.fit_transform(train_texts)
    classifier = LogisticRegression(max_iter=2000).fit(x_train, list(map(int, train_labels)))
    return float(classifier.score(features.transform(test_texts), list(map(int, test_labels))))


# ----------------------------------------------------------------------------- pretraining


def mlm_batch(rows: dict[str, torch.Tensor], index: torch.Tensor, vocab_size: int, *,
              generator: torch.Generator | None = None, all_mask: bool = False) -> dict[str, torch.Tensor]:
    """The rows at ``index``, masked by :func:`attnbook.bert.mask_tokens`, as model inputs.

    Returns ``input_ids``, ``token_type_ids``, ``attention_mask`` (True = real
    token) and ``labels`` (-100 where no loss is taken), all (B, T), plus
    ``next_sentence_label`` (B,) when ``rows`` has it. ``all_mask=True`` puts
    ``[MASK]`` at every chosen position instead of 80/10/10 (the ablation).
    """
    ids = rows["input_ids"][index]  # (B, T)
    inputs, labels = mask_tokens(ids, list(range(len(SPECIAL_TOKENS))), vocab_size, generator=generator,
                                 mask_id=MASK)
    if all_mask:
        inputs = torch.where(labels != -100, torch.full_like(inputs, MASK), inputs)
    batch = {"input_ids": inputs, "attention_mask": ids != PAD, "labels": labels,
             "token_type_ids": rows["token_type_ids"][index] if "token_type_ids" in rows
             else torch.zeros_like(ids)}
    if "next_sentence_label" in rows:
        batch["next_sentence_label"] = rows["next_sentence_label"][index]
    return batch


def pretraining_loss(model: BertForPreTraining, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """MLM loss (+ NSP loss): the value of ``mlm_loss(mlm_logits, labels)``, but the MLM head runs on
    the chosen positions only -- 15 % of its cost, which dominates a small model with a large V."""
    seq, pooled = model.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])  # (B, T, C)
    chosen = batch["labels"] != -100  # (B, T)
    logits = model.predictions(seq[chosen])  # (n_chosen, V)
    loss = F.cross_entropy(logits, batch["labels"][chosen])
    if "next_sentence_label" in batch:
        nsp_logits = model.seq_relationship(pooled)  # (B, 2)
        loss = loss + F.cross_entropy(nsp_logits, batch["next_sentence_label"])
    return loss


@torch.no_grad()
def pretraining_metrics(model: BertForPreTraining, batch: dict[str, torch.Tensor],
                        chunk: int = 256) -> dict[str, float]:
    """Scores of a masked ``batch`` (from :func:`mlm_batch`) at its chosen positions.

    ``mlm_loss`` and ``mlm_accuracy`` as the model reads the batch;
    ``visible_accuracy``, the accuracy at the same positions when the true
    tokens are left in (what fine-tuning shows the model: no ``[MASK]`` at
    all); ``nsp_accuracy`` when the batch has next-sentence labels.
    """
    device = next(model.parameters()).device
    sums: Counter[str] = Counter()  # counts
    loss_sum = 0.0
    for start in range(0, len(batch["input_ids"]), chunk):
        part = {k: v[start:start + chunk].to(device) for k, v in batch.items()}
        chosen = part["labels"] != -100  # (b, T)
        target = part["labels"][chosen]  # (n,)
        original = torch.where(chosen, part["labels"], part["input_ids"])  # (b, T): the unmasked row
        for name, ids in (("masked", part["input_ids"]), ("visible", original)):
            seq, pooled = model.bert(ids, part["token_type_ids"], part["attention_mask"])  # (b, T, C)
            logits = model.predictions(seq[chosen])  # (n, V)
            sums[f"{name}_right"] += int((logits.argmax(-1) == target).sum())
            if name == "masked":
                loss_sum += float(F.cross_entropy(logits, target, reduction="sum"))
                if "next_sentence_label" in part:
                    nsp = model.seq_relationship(pooled).argmax(-1)  # (b,)
                    sums["nsp_right"] += int((nsp == part["next_sentence_label"]).sum())
        sums["chosen"] += int(chosen.sum())
    n = max(1, sums["chosen"])
    out = {"mlm_loss": loss_sum / n, "mlm_accuracy": sums["masked_right"] / n,
           "visible_accuracy": sums["visible_right"] / n}
    if "next_sentence_label" in batch:
        out["nsp_accuracy"] = sums["nsp_right"] / len(batch["input_ids"])
    return out


def pretrain(model: BertForPreTraining, rows: dict[str, torch.Tensor], val: dict[str, torch.Tensor], *,
             steps: int, batch_size: int = 64, lr: float = 1e-3, all_mask: bool = False,
             static_masking: bool = False, seed: int = 0, eval_every: int | None = None,
             warmup_steps: int = 0, max_seconds: float | None = None,
             device: torch.device | str | None = None, progress: bool = False) -> History:
    """Pretrain with MLM (plus NSP when ``rows`` has ``next_sentence_label``) through :func:`fit`.

    ``rows`` and ``val`` hold ``input_ids`` (N, T) and optionally
    ``token_type_ids`` and ``next_sentence_label`` (from :func:`pack_sentences`
    or :func:`nsp_rows`). Each step draws ``batch_size`` random rows; their
    masking is drawn afresh every time (RoBERTa's *dynamic* masking) unless
    ``static_masking=True``, where every row is masked once, up front, as
    BERT's data pipeline did. ``val`` is masked once with a fixed seed, so
    every evaluation scores the same positions (see :func:`pretraining_metrics`).
    The learning rate warms up linearly and decays on a cosine.
    """
    _positive_int("batch_size", batch_size)
    gen = torch.Generator().manual_seed(seed)
    n = len(rows["input_ids"])
    val_batch = mlm_batch(val, torch.arange(len(val["input_ids"])), model.config.vocab_size,
                          generator=torch.Generator().manual_seed(10_000 + seed), all_mask=all_mask)
    if static_masking:
        fixed = mlm_batch(rows, torch.arange(n), model.config.vocab_size, generator=gen, all_mask=all_mask)

        def next_batch() -> dict[str, torch.Tensor]:
            index = torch.randint(n, (batch_size,), generator=gen)
            return {k: v[index] for k, v in fixed.items()}
    else:
        def next_batch() -> dict[str, torch.Tensor]:
            index = torch.randint(n, (batch_size,), generator=gen)
            return mlm_batch(rows, index, model.config.vocab_size, generator=gen, all_mask=all_mask)

    return fit(model, pretraining_loss, next_batch, steps=steps, lr=lr, schedule="cosine",
               warmup_steps=warmup_steps, eval_fn=lambda m: pretraining_metrics(m, val_batch),
               eval_every=eval_every, max_seconds=max_seconds, device=device, progress=progress)


# ----------------------------------------------------------------------------- fine-tuning


def classifier_from_pretrained(pretrained: BertForPreTraining, num_labels: int = 2,
                               pooling: str = "cls") -> BertForSequenceClassification:
    """A new :class:`BertForSequenceClassification` (``pooling`` "cls" or "mean") whose encoder
    (embeddings, blocks, pooler) is a copy of ``pretrained``'s; only the head starts from random weights."""
    classifier = BertForSequenceClassification(pretrained.config, num_labels, pooling)
    classifier.bert.load_state_dict(pretrained.bert.state_dict())
    return classifier.to(next(pretrained.parameters()).device)


@torch.no_grad()
def classification_accuracy(model: BertForSequenceClassification, ids: torch.Tensor, labels: torch.Tensor,
                            chunk: int = 512) -> float:
    """Accuracy of ``model`` on rows ``ids`` (N, T) from :func:`encode_sentences` against ``labels`` (N,)."""
    device = next(model.parameters()).device
    right = 0
    for start in range(0, len(ids), chunk):
        part = ids[start:start + chunk].to(device)  # (b, T)
        logits = model(part, torch.zeros_like(part), part != PAD)  # (b, num_labels)
        right += int((logits.argmax(-1).cpu() == labels[start:start + chunk]).sum())
    return right / len(ids)


FINETUNE_RECIPE = {"steps": 550, "batch_size": 64, "lr": 1e-3, "warmup_steps": 50}
"""Chapter 3's recipe for :func:`finetune` on all 8,456 movie sentences (a ``cpu-tiny`` BERT, rows of
48 tokens, the vocabulary of the 8,000 most frequent words of those sentences), chosen on the
validation sentences: a batch of 64 reached 73 % in 110 steps where 32 reached 62-67 %, and
a peak learning rate of 2e-3 diverged in two runs of three (``benchmarks/bench_bert_pretraining.py
--scratch-seeds`` measures it on three seeds)."""


def finetune(model: BertForSequenceClassification, ids: torch.Tensor, labels: torch.Tensor,
             val_ids: torch.Tensor, val_labels: torch.Tensor, *, steps: int, batch_size: int = 32,
             lr: float = 1e-3, seed: int = 0, eval_every: int | None = None, warmup_steps: int = 0,
             also_score: Mapping[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
             device: torch.device | str | None = None, progress: bool = False) -> History:
    """Train a [CLS] classifier on ``ids`` (N, T), ``labels`` (N,) with cross-entropy through :func:`fit`;
    the history's evaluations hold ``accuracy`` on ``val_ids``/``val_labels`` and, for each
    ``name: (ids, labels)`` of ``also_score``, ``name_accuracy`` (e.g. the test set, read at the
    step the validation accuracy picks). Only parameters with ``requires_grad`` train, so a model
    frozen by ``freeze_all_but_top`` keeps its frozen layers."""
    _positive_int("batch_size", batch_size)
    if len(ids) != len(labels):
        raise ValueError(f"ids and labels must have the same length, got {len(ids)} and {len(labels)}")
    gen = torch.Generator().manual_seed(seed)

    def next_batch() -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.randint(len(ids), (min(batch_size, len(ids)),), generator=gen)
        return ids[index], labels[index]

    def loss_fn(m: BertForSequenceClassification, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch  # (B, T), (B,)
        return F.cross_entropy(m(x, torch.zeros_like(x), x != PAD), y)

    return fit(model, loss_fn, next_batch, steps=steps, lr=lr, schedule="cosine", warmup_steps=warmup_steps,
               eval_fn=lambda m: {"accuracy": classification_accuracy(m, val_ids, val_labels),
                                  **{f"{name}_accuracy": classification_accuracy(m, x, y)
                                     for name, (x, y) in (also_score or {}).items()}},
               eval_every=eval_every, device=device, progress=progress)
