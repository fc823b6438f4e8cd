"""Fine-tuning on a small budget: train only the top of a pretrained BERT.

``freeze_all_but_top(model, k)`` turns off gradients for the embeddings and
every encoder layer except the top ``k``; the pooler and any head stay
trainable. The lower layers then act as a fixed feature extractor, which
costs less memory and time per step and can overfit less with few labels
(see Devlin et al. 2018, https://arxiv.org/abs/1810.04805, section 5.3, on
feature-based use of BERT).
"""

from __future__ import annotations

from typing import cast

from torch import nn

from attnbook._checks import int_in_range

from .model import BertModel

__all__ = ["freeze_all_but_top"]


def _encoder_of(model: nn.Module) -> BertModel:
    if isinstance(model, BertModel):
        return model
    bert = getattr(model, "bert", None)
    if isinstance(bert, BertModel):
        return bert
    raise TypeError(f"model must be a BertModel or hold one as .bert, got {type(model).__name__}")


def freeze_all_but_top(model: nn.Module, k: int) -> int:
    """Freeze the embeddings and all but the top ``k`` encoder layers; return the trainable count.

    Everything else of ``model`` -- the top ``k`` layers, the pooler, any head
    -- is made trainable, so the result does not depend on earlier calls.
    ``k = 0`` trains only the pooler and the head; ``k = num_hidden_layers``
    everything but the embeddings.

    >>> from attnbook.bert import BertConfig, BertForSequenceClassification
    >>> model = BertForSequenceClassification(BertConfig.preset("cpu-tiny", vocab_size=50), num_labels=2)
    >>> freeze_all_but_top(model, 0)     # pooler 128*128+128, classifier 128*2+2
    16770
    >>> model.bert.encoder.layer[1].ffn.fc1.weight.requires_grad
    False
    """
    bert = _encoder_of(model)
    layers = cast(nn.ModuleList, bert.encoder.layer)  # a plain Module holds it, for HF's names
    n_layers = len(layers)
    int_in_range("k", k, 0, n_layers, " (the number of encoder layers)")
    for p in model.parameters():
        p.requires_grad_(True)
    frozen = [bert.embeddings, *layers[: n_layers - k]]
    for module in frozen:
        for p in module.parameters():
            p.requires_grad_(False)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
