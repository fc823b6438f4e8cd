"""Part 1: BERT's input. ``bert_input(a, b, cls_id, sep_id) -> (ids, segment ids)`` and the class
``BertEmbeddings(vocab_size, hidden_size, max_position_embeddings, type_vocab_size)`` whose forward is
``LayerNorm(word + segment + position embeddings)``, compared with :class:`attnbook.bert.BertEmbeddings`
after copying the same random weights in.

>>> kind, *_ = check_bert_embeddings.visible[0].make()
>>> kind
'input'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._compare import close, require_tensor
from .._core import build_loaded, run_student
from ..engine import Case, Part, by_kind, first_match
from ..errors import CheckFailed
from ..steps import require_int_list, require_shape
from ._common import BERT, require_default_dropout, small_config

DEFAULT_TYPES = 2  # BertEmbeddings' type_vocab_size when it is left out


def _input(a: list[int], b: list[int] | None, cls_id: int = 2, sep_id: int = 3) -> Callable[[], tuple]:
    return lambda: ("input", list(a), None if b is None else list(b), cls_id, sep_id)


def _embed(seed: int, B: int, T: int, V: int, C: int, P: int, S: int | None = 2, dtype: torch.dtype = torch.float32,
           strided: bool = False, train: bool = False, small: bool = False) -> Callable[[], tuple]:
    """``S=None``: the module is built without ``type_vocab_size``, whose default, 2, is checked;
    ``train``: without ``dropout`` either, and run in training mode too, where its default, 0.1, shows;
    ``small``: embedding tables of small values, whose sum has a variance near LayerNorm's eps, so that
    BERT's eps, 1e-12, shows against nn.LayerNorm's default 1e-5."""

    def make():
        sizes = (V, C, P) if S is None else (V, C, P, S)
        types = DEFAULT_TYPES if S is None else S
        g = torch.Generator().manual_seed(seed)
        if strided:  # (B, T) views of (T, B) tensors
            ids = torch.randint(V, (T, B), generator=g).t()
            seg = torch.randint(types, (T, B), generator=g).t()
        else:
            ids = torch.randint(V, (B, T), generator=g)
            seg = torch.randint(types, (B, T), generator=g)
        return ("embed", seed, sizes, ids, seg, dtype, train) + (("small",) if small else ())

    return make


SMALL = 3e-3  # the scale of the embedding tables of a "small" case: a sum of variance about 3e-5


def _reference(sizes: tuple, seed: int, dtype: torch.dtype, small: bool = False) -> Any:  # the private BertEmbeddings
    V, C, P, S = sizes if len(sizes) == 4 else (*sizes, DEFAULT_TYPES)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ref = BERT.BertEmbeddings(small_config(vocab_size=V, hidden_size=C, max_position_embeddings=P,
                                               type_vocab_size=S, num_attention_heads=1))
        with torch.no_grad():  # LayerNorm away from (1, 0), so that it shows in the output
            ref.LayerNorm.weight.add_(0.5 * torch.randn(C))
            ref.LayerNorm.bias.add_(0.5 * torch.randn(C))
            if small:
                for table in (ref.word_embeddings, ref.position_embeddings, ref.token_type_embeddings):
                    table.weight.mul_(SMALL / table.weight.std())
    return ref.to(dtype).eval()


def _check_input(fn: Callable, a: list[int], b: list[int] | None, cls_id: int, sep_id: int) -> None:
    ids, segments = (require_int_list(x, what) for x, what in zip(
        require_pair_lists(run_student(fn, list(a), None if b is None else list(b), cls_id, sep_id,
                                       what="bert_input")), ("the ids", "the segment ids"), strict=True))
    want = [cls_id, *a, sep_id] + ([] if b is None else [*b, sep_id])
    want_seg = [0] * (len(a) + 2) + ([] if b is None else [1] * (len(b) + 1))
    if ids != want:
        if b is not None and ids == [cls_id, *a, sep_id]:
            raise CheckFailed("sentence b was left out: only b = None means a single sentence; a b of one token is "
                              "still sentence B")
        if ids[:1] != [cls_id]:
            raise CheckFailed("the input must start with [CLS] (cls_id): its final vector is what the classifier reads")
        if ids[-1:] != [sep_id]:
            raise CheckFailed("each sentence must end with [SEP] (sep_id), the last one too")
        raise CheckFailed("the ids should read [CLS] a [SEP] b [SEP] ([CLS] a [SEP] for one sentence)")
    if len(segments) != len(ids):
        raise CheckFailed("there should be one segment id per token")
    if segments != want_seg:
        if b is not None and segments == [s + 1 for s in want_seg]:
            raise CheckFailed("the segment ids are off by one: sentence A is segment 0 and sentence B segment 1")
        if b is not None and segments == want_seg[: len(a) + 1] + [1] + want_seg[len(a) + 2:]:
            raise CheckFailed("the [SEP] that closes sentence A belongs to segment 0: segment 1 starts after it")
        raise CheckFailed("segment ids should be 0 for [CLS], sentence A and its [SEP], then 1 for sentence B "
                          "and the last [SEP]")


def require_pair_lists(result: object) -> tuple:
    if not isinstance(result, tuple) or len(result) != 2:
        raise CheckFailed("bert_input should return a pair (ids, segment ids)")
    return result


def _variants(ref: Any, ids: torch.Tensor, seg: torch.Tensor) -> list[tuple[str, Callable[[], torch.Tensor]]]:
    T = ids.shape[1]
    word, pos, typ = ref.word_embeddings(ids), ref.position_embeddings.weight, ref.token_type_embeddings(seg)
    ln = ref.LayerNorm
    C = word.shape[-1]
    out = [
        ("LayerNorm is missing: BERT normalises the sum of the three embeddings", lambda: word + typ + pos[:T]),
        ("the segment embeddings are missing: add token_type_embeddings(token_type_ids)", lambda: ln(word + pos[:T])),
        ("every token got the segment embedding of segment 0: look up token_type_embeddings(token_type_ids)",
         lambda: ln(word + ref.token_type_embeddings(torch.zeros_like(seg)) + pos[:T])),
        ("the position embeddings are missing: add position_embeddings of 0 .. T - 1", lambda: ln(word + typ)),
        ("LayerNorm must come after the sum of all three embeddings, not on the word embeddings alone",
         lambda: ln(word) + typ + pos[:T]),
        ("the embeddings were scaled by sqrt(hidden_size) as in the original Transformer; BERT adds them as they are",
         lambda: ln(word * C**0.5 + typ + pos[:T])),
        ("LayerNorm's eps should be BERT's 1e-12, not nn.LayerNorm's default 1e-5",
         lambda: torch.nn.functional.layer_norm(word + typ + pos[:T], (C,), ln.weight, ln.bias, eps=1e-5)),
    ]
    if T + 1 <= pos.shape[0]:
        out.append(("positions are off by one: the first token has position 0",
                    lambda: ln(word + typ + pos[1 : T + 1])))
    return out


def _check_embed(cls: Callable, seed: int, sizes: tuple, ids: torch.Tensor, seg: torch.Tensor,
                 dtype: torch.dtype, train: bool = False, *mode: str) -> None:
    ref = _reference(sizes, seed, dtype, small=mode == ("small",))
    try:
        module = build_loaded(cls, sizes, ref, dtype, "BertEmbeddings",
                              "(vocab_size, hidden_size, max_position_embeddings, type_vocab_size)")
    except CheckFailed as err:
        if len(sizes) == 3 and "token_type_embeddings.weight" in str(err) and "wrong shape" in str(err):
            raise CheckFailed(f"built without type_vocab_size, token_type_embeddings should have {DEFAULT_TYPES} "
                              f"rows: type_vocab_size defaults to {DEFAULT_TYPES}") from None
        raise
    with torch.no_grad():
        result = run_student(module, ids.clone(), seg.clone(), what="BertEmbeddings.forward")
        expected = ref(ids, seg)
    out = require_tensor(result, "the output of BertEmbeddings")
    require_shape(out, tuple(expected.shape), "the output of BertEmbeddings should have shape (B, T, hidden_size)")
    if out.dtype != expected.dtype:
        raise CheckFailed(f"for {dtype} weights the output should be {dtype} too")
    if not close(out, expected):
        raise first_match(out, _variants(ref, ids, seg), "the output differs from LayerNorm(word + segment + "
                          "position embeddings)")
    if train:
        require_default_dropout(module, (ids, seg), expected, seed, "BertEmbeddings",
                                place="after the LayerNorm, the last step")


_check = by_kind(input=_check_input, embed=_check_embed)


check_bert_embeddings = Part(
    name="check_bert_embeddings",
    visible=(
        Case("[CLS] a [SEP] b [SEP], cls_id 5 and sep_id 6", _input([7, 8, 9], [10, 11], cls_id=5, sep_id=6)),
        Case("b = None: a single sentence", _input([7, 8, 9], None, cls_id=5, sep_id=6)),
        Case("a sentence b of one token", _input([7, 8], [9], cls_id=5, sep_id=6)),
        Case("the three embeddings", _embed(1, 2, 5, 20, 8, 16)),
        Case("small embeddings: LayerNorm's eps shows", _embed(2, 2, 4, 20, 8, 16, small=True)),
        Case("built without type_vocab_size and dropout (training mode)",
             _embed(3, 2, 5, 20, 8, 16, S=None, train=True)),
    ),
    check=_check,
    forbidden=("attnbook.bert.model.BertEmbeddings",),
)
