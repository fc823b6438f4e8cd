"""Heads on top of :class:`BertModel`: pretraining (MLM + NSP) and sequence classification.

**What each adds.** ``BertForPreTraining`` scores every position over the
vocabulary (the masked-language-model head: dense -> GELU -> LayerNorm -> a
decoder whose weight *is* the word-embedding table, plus a bias of its own)
and the pooled ``[CLS]`` vector over two classes (next-sentence prediction:
0 = B follows A, 1 = B is random, Hugging Face's convention).
``BertForSequenceClassification`` is what fine-tuning adds: dropout and one
linear layer on the pooled ``[CLS]`` vector.

Names follow Hugging Face (``bert``, ``cls.predictions.transform.dense``,
``cls.predictions.transform.LayerNorm``, ``cls.predictions.decoder``,
``cls.predictions.bias``, ``cls.seq_relationship``, ``classifier``).

Shape legend: ``B`` batch, ``T`` sequence length, ``C = hidden_size``, ``V``
vocabulary size.

Reference: Devlin et al. (2018), https://arxiv.org/abs/1810.04805, sections
3.1 (pretraining tasks) and 3.2 (fine-tuning), figure 4.
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import positive_int

from .config import BertConfig
from .model import BertModel, _check_config, init_bert_weights

__all__ = ["BertLMPredictionHead", "BertForPreTraining", "BertForSequenceClassification", "mean_pool"]


class BertLMPredictionHead(nn.Module):
    """The MLM head: ``decoder(LayerNorm(GELU(dense(h)))) + bias``, (B, T, C) -> (B, T, V).

    ``decoder.weight`` is set to the word-embedding table by the model that
    owns both (weight tying: the same (V, C) matrix reads tokens in and
    scores them out).

    >>> head = BertLMPredictionHead(BertConfig.preset("cpu-tiny", vocab_size=50))
    >>> head(torch.randn(2, 3, 128)).shape
    torch.Size([2, 3, 50])
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        cfg = _check_config(config)
        self.transform = nn.Module()
        self.transform.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.transform.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.decoder = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))  # one output-only bias per token

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        transform = self.transform  # a plain Module that keeps HF's names: transform.dense, transform.LayerNorm
        dense, norm = cast(nn.Linear, transform.dense), cast(nn.LayerNorm, transform.LayerNorm)
        h = norm(F.gelu(dense(hidden_states)))  # (B, T, C)
        return self.decoder(h) + self.bias  # (B, T, V)


class BertForPreTraining(nn.Module):
    """BERT with both pretraining heads: ``forward(...) -> (mlm_logits (B, T, V), nsp_logits (B, 2))``.

    Arguments as :meth:`BertModel.forward`. Train with
    :func:`attnbook.bert.mlm_loss` on the MLM logits and a cross-entropy on
    the NSP logits (label 0 = "is next", 1 = "random").

    >>> _ = torch.manual_seed(0)
    >>> model = BertForPreTraining(BertConfig.preset("cpu-tiny", vocab_size=50))
    >>> mlm, nsp = model(torch.tensor([[2, 7, 4, 3, 9, 3]]), torch.tensor([[0, 0, 0, 0, 1, 1]]))
    >>> mlm.shape, nsp.shape
    (torch.Size([1, 6, 50]), torch.Size([1, 2]))
    >>> model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    True
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = cfg = _check_config(config)
        self.bert = BertModel(cfg)
        self.cls = nn.Module()
        self.cls.predictions = BertLMPredictionHead(cfg)
        self.cls.seq_relationship = nn.Linear(cfg.hidden_size, 2)  # is-next vs random, from pooled [CLS]
        self.cls.apply(lambda m: init_bert_weights(m, cfg.initializer_range))
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tying

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        seq, pooled = self.bert(input_ids, token_type_ids, attention_mask)  # (B, T, C), (B, C)
        return self.predictions(seq), self.seq_relationship(pooled)  # (B, T, V), (B, 2)

    @property
    def predictions(self) -> BertLMPredictionHead:
        """The MLM head, ``cls.predictions`` (HF's name): (B, T, C) -> (B, T, V)."""
        return cast(BertLMPredictionHead, self.cls.predictions)

    @property
    def seq_relationship(self) -> nn.Linear:
        """The NSP head, ``cls.seq_relationship`` (HF's name): pooled (B, C) -> (B, 2)."""
        return cast(nn.Linear, self.cls.seq_relationship)


def mean_pool(seq: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The average of each row's final vectors over its real tokens: (B, T, C), (B, T) -> (B, C).

    >>> mean_pool(torch.tensor([[[1.0], [3.0], [9.0]]]), torch.tensor([[1, 1, 0]]))
    tensor([[2.]])
    """
    keep = attention_mask.unsqueeze(-1).to(seq.dtype)  # (B, T, 1)
    return (seq * keep).sum(1) / keep.sum(1).clamp(min=1)


class BertForSequenceClassification(nn.Module):
    """A sentence classifier: ``forward(...) -> logits (B, num_labels)``.

    ``pooling="cls"`` (BERT's): ``logits = classifier(dropout(tanh(W h_[CLS] + b)))``,
    the pooler coming from :class:`BertModel`. ``pooling="mean"``: the
    classifier reads the average of the final vectors of the real tokens
    (``attention_mask`` True), as Sentence-BERT does, and skips the pooler.
    Arguments as :meth:`BertModel.forward`.

    >>> model = BertForSequenceClassification(BertConfig.preset("cpu-tiny", vocab_size=50), num_labels=2)
    >>> model(torch.tensor([[2, 7, 8, 3], [2, 9, 3, 0]]),
    ...       attention_mask=torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])).shape
    torch.Size([2, 2])
    """

    def __init__(self, config: BertConfig, num_labels: int = 2, pooling: str = "cls") -> None:
        super().__init__()
        self.config = cfg = _check_config(config)
        self.num_labels = positive_int("num_labels", num_labels)
        if pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
        self.pooling = pooling
        self.bert = BertModel(cfg)
        self.dropout = nn.Dropout(cfg.hidden_dropout_prob)
        self.classifier = nn.Linear(cfg.hidden_size, num_labels)
        init_bert_weights(self.classifier, cfg.initializer_range)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        seq, pooled = self.bert(input_ids, token_type_ids, attention_mask)  # (B, T, C), (B, C)
        if self.pooling == "mean":
            pooled = mean_pool(seq, torch.ones_like(input_ids) if attention_mask is None else attention_mask)
        return self.classifier(self.dropout(pooled))  # (B, num_labels)
