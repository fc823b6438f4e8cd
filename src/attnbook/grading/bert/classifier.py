"""Part 5: the class ``ClsClassifier(hidden_size, num_labels, dropout=0.1)``: ``forward(hidden_states
(B, T, C)) -> logits (B, num_labels)``, ``classifier(dropout(tanh(pooler(hidden_states[:, 0]))))``,
compared after copying the same random weights into ``pooler`` and ``classifier``.

>>> seed, sizes, h = check_cls_classifier.visible[0].make()
>>> sizes, tuple(h.shape)
((8, 2), (3, 5, 8))
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .._compare import close, require_tensor
from .._core import build_loaded, run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape
from ._common import require_default_dropout


class Reference(nn.Module):
    """The names the exercise asks for: ``pooler`` (C -> C) and ``classifier`` (C -> num_labels)."""

    def __init__(self, hidden_size: int, num_labels: int) -> None:
        super().__init__()
        self.pooler = nn.Linear(hidden_size, hidden_size)
        self.classifier = nn.Linear(hidden_size, num_labels)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.tanh(self.pooler(h[:, 0])))  # BERT's pooler reads [CLS]


def _case(seed: int, B: int, T: int, C: int, n: int, dtype: torch.dtype = torch.float32,
          strided: bool = False, train: bool = False) -> Callable[[], tuple]:
    """``train``: built without ``dropout``, with an identity classifier weight (``n == C``), and run in
    training mode too, where the default rate, 0.1, and the dropout's place, before the classifier, show."""

    def make():
        g = torch.Generator().manual_seed(seed)
        h = torch.randn(T, B, C, generator=g, dtype=dtype).transpose(0, 1) if strided else \
            torch.randn(B, T, C, generator=g, dtype=dtype)
        return (seed, (C, n), h, True) if train else (seed, (C, n), h)

    return make


def _variants(ref: Reference, h: torch.Tensor) -> list[tuple[str, Callable[[], torch.Tensor]]]:
    pool, cls = ref.pooler, ref.classifier
    return [
        ("the pooler reads the mean of the tokens: BERT's pooler reads the [CLS] vector, hidden_states[:, 0]",
         lambda: cls(torch.tanh(pool(h.mean(1))))),
        ("the pooler reads the last token: BERT's pooler reads the [CLS] vector, the first one",
         lambda: cls(torch.tanh(pool(h[:, -1])))),
        ("the tanh of the pooler is missing: pooled = tanh(pooler(h_[CLS]))", lambda: cls(pool(h[:, 0]))),
        ("the pooler's activation is tanh, not ReLU", lambda: cls(torch.relu(pool(h[:, 0])))),
        ("the pooler is skipped: the classifier reads tanh(pooler(h_[CLS])), not h_[CLS]", lambda: cls(h[:, 0])),
    ]


VISIBLE = (
    Case("two labels", _case(1, 3, 5, 8, 2)),
    Case("built without a dropout rate (training mode)", _case(2, 3, 4, 8, 8, train=True)),
)


def _check(cls: Callable) -> Callable:
    def check_one(seed, sizes, h, train=False):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            ref = Reference(*sizes).to(h.dtype).eval()
        if train:  # the classifier passes dropout's output through: logits = dropout(pooled) + b_c
            with torch.no_grad():
                ref.classifier.weight.copy_(torch.eye(*ref.classifier.weight.shape))
        module = build_loaded(cls, sizes, ref, h.dtype, "ClsClassifier", "(hidden_size, num_labels)")
        with torch.no_grad():
            result = run_student(module, h.clone(), what="ClsClassifier.forward")
            expected = ref(h)
        out = require_tensor(result, "the output of ClsClassifier")
        require_shape(out, tuple(expected.shape), "the logits should have shape (B, num_labels)")
        if out.dtype != expected.dtype:
            raise CheckFailed(f"for {h.dtype} inputs the logits should be {h.dtype} too")
        if not close(out, expected):
            raise first_match(out, _variants(ref, h), "the logits differ from "
                              "classifier(dropout(tanh(pooler(hidden_states[:, 0]))))")
        if train:
            require_default_dropout(module, (h,), expected, seed, "ClsClassifier", ref.classifier.bias.detach(),
                                    place="on the pooled vector, before the classifier")

    return check_one


check_cls_classifier = Part(
    name="check_cls_classifier",
    visible=VISIBLE,
    check=_check,
    forbidden=("attnbook.bert.model.BertPooler", "attnbook.bert.heads.BertForSequenceClassification"),
)
