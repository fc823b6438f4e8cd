"""BERT: a bidirectional Transformer encoder, pretrained by masked language modelling.

Modules, small to large:

- :mod:`.config` -- :class:`BertConfig` and its presets (``"bert-base"``,
  ``"bert-large"``, ``"cpu-tiny"``).
- :mod:`.model` -- :class:`BertEmbeddings`, :class:`BertPooler`,
  :class:`BertModel` (built on chapter 2's encoder blocks), and
  :func:`shuffle_changes` (what shuffling a sentence does to its outputs).
- :mod:`.heads` -- :class:`BertForPreTraining` (MLM + NSP) and
  :class:`BertForSequenceClassification`.
- :mod:`.masking` -- :func:`mask_tokens` (15 %, 80/10/10), :func:`mlm_loss` and
  :func:`uniform_mlm_loss` (``ln V``, an untrained model's loss).
- :mod:`.nsp` -- :func:`make_nsp_pairs`.
- :mod:`.freezing` -- :func:`freeze_all_but_top`.

>>> import torch
>>> with torch.device("meta"):                                  # sizes only, no memory
...     model = BertForPreTraining(BertConfig.preset("bert-base"))  # the paper's "110M"
>>> f"{sum(p.numel() for p in model.parameters()):,}"          # the tied decoder counted once
'110,106,428'
>>> f"{model.bert.num_params():,}"                              # the encoder without the heads
'109,482,240'
"""

from .config import BERT_PRESETS, BertConfig
from .freezing import freeze_all_but_top
from .heads import BertForPreTraining, BertForSequenceClassification, BertLMPredictionHead
from .masking import IGNORE_INDEX, mask_tokens, mlm_loss, uniform_mlm_loss
from .model import (
    BertEmbeddings,
    BertModel,
    BertPooler,
    estimate_flops_per_token,
    init_bert_weights,
    shuffle_changes,
)
from .nsp import make_nsp_pairs

__all__ = [
    "BertConfig",
    "BERT_PRESETS",
    "BertEmbeddings",
    "BertPooler",
    "BertModel",
    "init_bert_weights",
    "estimate_flops_per_token",
    "shuffle_changes",
    "BertLMPredictionHead",
    "BertForPreTraining",
    "BertForSequenceClassification",
    "IGNORE_INDEX",
    "mask_tokens",
    "mlm_loss",
    "uniform_mlm_loss",
    "make_nsp_pairs",
    "freeze_all_but_top",
]
