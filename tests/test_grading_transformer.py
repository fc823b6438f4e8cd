"""attnbook.grading.transformer, fast: what is particular to chapter 2's checks.

The catalogue (autograder/attnbook_course/fixtures/answers/02-transformer.py) is graded
in-process by test_exercises.py and end to end through the sandboxed judge in
test_autograder.py. Here: unit tests of the pieces the checks rely on (traps,
partial credit, parameters by name) and of the cases themselves (each edge case
says what it promises).
"""

import functools
import math
import sys
import warnings

import exercise_harness as harness
import pytest
import torch

import attnbook.attention
from attnbook import grading
from attnbook.grading import _shared
from attnbook.grading._core import run_student
from attnbook.grading._refuse import refused
from attnbook.grading.engine import Case, score_cases
from attnbook.grading.errors import CheckFailed
from attnbook.grading.transformer import (
    _common,
    embeddings,
    greedy,
    loss,
    masks,
    mha,
    prenorm,
    sdpa,
    sdpa_masks,
)

answers = harness.load(harness.answers.FOLDER / "02-transformer.py", "answers_02")
pytestmark = pytest.mark.usefixtures("one_thread")  # the checks run tiny models


@pytest.fixture
def restore_torch():
    saved = torch.allclose
    yield
    torch.allclose = saved


def test_the_checks_are_imported_from_their_chapter_only():
    assert not [name for name in grading.__all__ if name.startswith("check_")]
    assert not hasattr(grading, "check_masks") and grading.transformer.check_masks.name == "check_masks"


def test_student_warning_goes_to_stdout_not_stderr(capfd):
    def noisy(q, k, v, mask=None):
        warnings.warn("deprecated thing", UserWarning, stacklevel=1)
        print("debug print", file=sys.stderr)
        return attnbook.attention.fused_attention(q, k, v, mask), None

    result = run_student(noisy, *torch.randn(3, 1, 2, 4))
    assert result[1] is None
    out, err = capfd.readouterr()
    assert err == ""
    assert "deprecated thing" in out and "debug print" in out


def test_traps_cover_aliases_and_are_removed_afterwards():
    from attnbook.attention import scaled_dot_product_attention as alias

    original = attnbook.attention.scaled_dot_product_attention

    def sneaky(q, k, v, mask=None):
        return alias(q, k, v, mask)

    path = "attnbook.attention.scaled_dot_product_attention"
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        run_student(sneaky, *torch.randn(3, 1, 2, 4), forbidden=[path])
    assert attnbook.attention.scaled_dot_product_attention is original
    assert alias is original
    with refused(sneaky, [path]):
        assert attnbook.attention.scaled_dot_product_attention is not original
    assert attnbook.attention.scaled_dot_product_attention is original


@pytest.mark.parametrize("path", ["attnbook.gpt.perplexity", "attnbook.gpt.lm.perplexity"])
def test_a_re_exported_function_is_trapped_under_both_names(path):
    import attnbook.gpt

    original = attnbook.gpt.perplexity

    def sneaky(model, data):  # reaches the reference through the package, at call time
        return attnbook.gpt.perplexity(model, data)

    with refused(sneaky, [path]):
        assert attnbook.gpt.perplexity is not original and attnbook.gpt.lm.perplexity is not original
    assert attnbook.gpt.perplexity is original and attnbook.gpt.lm.perplexity is original


def test_patching_the_public_reference_does_not_fool_the_checker(monkeypatch):
    def wrong(q, k, v, mask=None):
        w = torch.full((*q.shape[:-1], k.shape[-2]), 1.0 / k.shape[-2], dtype=q.dtype)
        return w @ v, w

    monkeypatch.setattr(attnbook.attention, "scaled_dot_product_attention", wrong)
    with pytest.raises(CheckFailed):
        grading.transformer.check_scaled_dot_product_attention(wrong)


def test_a_notebook_that_patches_torch_is_told_so(restore_torch):
    def zeros(q, k, v, mask=None):
        weights = torch.zeros(*q.shape[:-1], k.shape[-2], dtype=q.dtype)
        return weights @ v, weights

    torch.allclose = lambda *args, **kwargs: True
    with pytest.raises(CheckFailed, match="were modified in this notebook"):
        grading.transformer.check_scaled_dot_product_attention(zeros)


def test_partial_credit_is_the_passed_share_of_weights(capsys):
    def check(ok):
        if not ok:
            raise CheckFailed("nope")

    cases = [Case("a", lambda: (True,), 1.0), Case("b", lambda: (False,), 1.0), Case("c", lambda: (True,), 2.0)]
    assert score_cases(cases, check, points=4) == 3.0
    assert "- b: nope" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="no check passed"):
        score_cases([Case("b", lambda: (False,))], check, points=4)
    with pytest.raises(CheckFailed, match="nope"):  # visible mode raises at the first failure
        score_cases(cases, check, points=None)


def test_non_tensor_and_wrong_arity_results_are_explained():
    with pytest.raises(CheckFailed, match=r"pair \(out, weights\)"):
        grading.transformer.check_scaled_dot_product_attention(lambda q, k, v, mask=None: q)
    with pytest.raises(CheckFailed, match="should be a torch.Tensor"):
        grading.transformer.check_scaled_dot_product_attention(lambda q, k, v, mask=None: (q.tolist(), q))
    with pytest.raises(CheckFailed, match="not callable"):
        grading.transformer.check_scaled_dot_product_attention(None)


# ------------------------------------------------------------- modules and class traps

MHA_PATH = "attnbook.attention.MultiHeadAttention"


def test_class_traps_cover_building_inheriting_borrowing_and_are_removed_afterwards():
    reference = attnbook.attention.MultiHeadAttention
    methods = dict(vars(reference))
    built_earlier = reference(8, 2)
    x = torch.randn(2, 3, 8)

    class Builds(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = attnbook.attention.MultiHeadAttention(8, 2)

    class Inherits(reference):
        pass

    class Borrows(torch.nn.Module):
        forward = reference.forward  # a method borrowed as a class attribute

    borrowing = Borrows()
    for fn, args in ((Builds, ()), (Inherits, (8, 2)), (lambda x: built_earlier(x), (x,)), (borrowing, (x,)),
                     (reference, (8, 2))):
        with pytest.raises(CheckFailed, match="calls the reference implementation"):
            run_student(fn, *args, forbidden=[MHA_PATH])
    assert dict(vars(reference)) == methods and Borrows.forward is reference.forward
    assert built_earlier(x)[0].shape == (2, 3, 8)  # everything works again afterwards


def test_a_notebook_class_under_the_reference_name_is_not_trapped(monkeypatch):
    class MultiHeadAttention(torch.nn.Module):
        def forward(self, x):
            return x

    monkeypatch.setattr(attnbook.attention, "MultiHeadAttention", MultiHeadAttention)
    assert run_student(MultiHeadAttention(), torch.ones(1), forbidden=[MHA_PATH]) == 1


def test_the_reference_itself_or_a_partial_of_it_is_trapped():
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        grading.transformer.check_scaled_dot_product_attention(attnbook.attention.scaled_dot_product_attention)
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        grading.transformer.check_masks(attnbook.attention.causal_mask,
                                        functools.partial(attnbook.attention.padding_mask))


def test_parameters_are_compared_by_name_and_shape():
    from attnbook.grading._core import build_module, load_reference_parameters

    reference = attnbook.attention.MultiHeadAttention(8, 2)

    class NoOutProj(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj, self.k_proj, self.v_proj = (torch.nn.Linear(8, 8) for _ in range(3))
            self.W_O = torch.nn.Linear(8, 8)

    with pytest.raises(CheckFailed, match=r"missing out_proj.weight, out_proj.bias; unexpected W_O.weight"):
        load_reference_parameters(NoOutProj(), reference, "MultiHeadAttention")
    narrow = NoOutProj()
    narrow.out_proj, narrow.W_O = torch.nn.Linear(8, 4), None
    with pytest.raises(CheckFailed, match="out_proj.weight of MultiHeadAttention has the wrong shape"):
        load_reference_parameters(narrow, reference, "MultiHeadAttention")
    with pytest.raises(CheckFailed, match="should build a torch.nn.Module"):
        build_module(lambda: object(), what="MultiHeadAttention")


def test_patching_the_public_modules_does_not_fool_the_decoding_check(monkeypatch):
    import attnbook.transformer

    def stops_at_once(model, src, bos_id, eos_id, max_len):
        return torch.full((src.shape[0], 1), eos_id)

    # The checker decodes with its private copy, so a patched public module changes nothing.
    monkeypatch.setattr(attnbook.transformer, "greedy_decode", lambda *args: stops_at_once(*args))
    monkeypatch.setattr(attnbook.transformer, "Transformer", torch.nn.Identity)
    with pytest.raises(CheckFailed, match="generated ids differ from greedy decoding"):
        grading.transformer.check_greedy_decode(stops_at_once)


def _ends(case):
    """Per source: the step at which the reference's decoding emits EOS (1-based), or None."""
    model, src, bos_id, eos_id, max_len = case.make()
    out = _common.TR.greedy_decode(model, src, bos_id, eos_id, max_len)
    return [int((row == eos_id).nonzero()[0]) + 1 if (row == eos_id).any() else None for row in out]


def test_greedy_cases_finish_at_different_steps():
    """The random models behind check_greedy_decode give what each case promises."""
    part = greedy.check_greedy_decode
    ends = {case.group: _ends(case) for case in part.visible + part.hidden}
    assert len(set(ends["three sources"])) == 3 and None not in ends["three sources"]
    own = ends["every sequence ends at its own step"]
    assert len(own) == 4 and len(set(own)) == 4 and None not in own
    assert None in ends["some never finish"] and any(ends["some never finish"])
    assert min(e for e in ends["padded sources, odd lengths"]) >= 2
    assert len(ends["batch of one"]) == 1 and ends["batch of one"][0] is not None


def test_the_padding_id_case_uses_another_id_and_changes_the_result():
    case = next(c for c in greedy.check_greedy_decode.hidden if c.group == "another padding id")
    model, src, bos_id, eos_id, max_len = case.make()
    assert model.config.pad_id == 7 and (src == 7).any() and (src == 0).any()  # 0 is a real token here
    right = greedy._greedy_variant(model, src, bos_id, eos_id, max_len)
    assert not torch.equal(right, greedy._greedy_variant(model, src, bos_id, eos_id, max_len, pad_id=0))


@pytest.mark.parametrize("part", [sdpa.check_scaled_dot_product_attention, sdpa_masks.check_attention_masks,
                                  mha.check_multi_head_attention])
def test_attention_parts_refuse_torch_kernels_and_cover_the_edges(part):
    assert "scaled_dot_product_attention" in part.kernels and "_native_multi_head_attention" in part.kernels
    made = [case.make() for case in part.hidden]
    tensors = [[a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()] for args in made]
    assert any(t and t[0].shape[0] == 1 for t in tensors)  # a batch of one
    assert any(t and t[0].shape[-2] == 1 for t in tensors)  # one query
    assert any(t and not t[0].is_contiguous() for t in tensors)  # strided inputs
    assert any(t and t[0].dtype == torch.float64 for t in tensors)


def test_mask_cases_cover_another_padding_id_and_strided_ids():
    made = [case.make() for case in masks.check_masks.hidden]
    padding = [(ids, pad_id) for kind, *rest in made if kind == "padding" for ids, pad_id in [rest]]
    assert {pad_id for _, pad_id in padding} > {0}
    assert any(not ids.is_contiguous() for ids, _ in padding) and any(ids.shape[0] == 1 for ids, _ in padding)


def test_a_squeezed_result_is_named(capsys):
    def squeezes(q, k, v, mask=None):
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        return (w @ v).squeeze(), w.squeeze()

    assert 0 < sdpa.check_scaled_dot_product_attention(squeezes, points=3) < 3  # the visible case has no axis of size 1
    assert "a squeeze() drops every axis of size 1" in capsys.readouterr().out


def test_a_module_that_changes_its_inputs_in_place_does_not_pass():
    namespace = {"math": math, "torch": torch, "nn": torch.nn}
    shape_line = "        B, T, C = query.shape\n"
    exec(answers._MHA.replace(shape_line, shape_line + "        query.mul_(0.5)\n"), namespace)
    with pytest.raises(CheckFailed):
        grading.transformer.check_multi_head_attention(namespace["MultiHeadAttention"])
    exec(answers._MHA, namespace)
    assert grading.transformer.check_multi_head_attention(namespace["MultiHeadAttention"], points=4) == 4.0


# ------------------------------------------------------------- Parts 4, 8 and 10: embeddings, pre-norm, the loss

def test_embedding_cases_cover_the_edges_and_the_probe_hides_nan_in_unused_rows():
    made = [case.make() for case in embeddings.check_embeddings.visible + embeddings.check_embeddings.hidden]
    embeds = [(ids, E) for kind, ids, E in made if kind == "embed"]
    assert any(ids.shape == (1, 1) for ids, _ in embeds) and any(E.dtype == torch.float64 for _, E in embeds)
    assert any(not ids.is_contiguous() and not E.is_contiguous() for ids, E in embeds)
    assert any(int(ids.max()) + 1 < E.shape[0] for ids, E in embeds)  # the one-hot width must come from E
    assert any(E.shape[0] == E.shape[1] for _, E in embeds)  # a square table tells E from its transpose
    for kind, ids, E in made:
        if kind == "probe":
            used = set(ids.flatten().tolist())
            assert all(E[i].isfinite().all() for i in used) and E.isnan().any()
    tied = [(h, E) for kind, h, E in made if kind == "tied"]
    assert any(E.shape[0] == h.shape[-1] for h, E in tied) and any(h.dtype == torch.float64 for h, _ in tied)


def _tied(h, E):
    return h @ E.T


def test_a_row_lookup_fails_and_every_product_passes(capsys):
    def one_hot_product(ids, E):
        return torch.nn.functional.one_hot(ids, E.shape[0]).to(E.dtype) @ E

    def eye_rows_product(ids, E):  # one-hot rows taken from the identity: still a product with E
        return torch.eye(E.shape[0], dtype=E.dtype)[ids] @ E

    for answer in (one_hot_product, eye_rows_product):
        assert embeddings.check_embeddings(answer, _tied, points=2) == 2.0
    for lookup in (lambda ids, E: E[ids], lambda ids, E: E.index_select(0, ids.reshape(-1)).view(*ids.shape, -1)):
        with pytest.raises(CheckFailed, match="looks up rows"):
            embeddings.check_embeddings(lookup, _tied)
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        embeddings.check_embeddings(lambda ids, E: torch.nn.functional.embedding(ids, E), _tied)


def test_a_lookup_that_multiplies_only_on_a_table_with_nan_fails_and_no_case_tells_the_probe():
    """An answer that looks the rows up unless the table holds a NaN (the probe's mark) is caught on the
    ordinary tables: each holds a -0.0 in a row that an id uses, which a lookup copies and a product turns
    into 0.0, and another row a positive entry in that column (so the product's zero terms sum to +0.0)."""
    def lookup_unless_nan(ids, E):
        if E.isnan().any():
            return torch.nn.functional.one_hot(ids, E.shape[0]).to(E.dtype) @ E
        return E[ids]

    def lookup_plus_zero(ids, E):  # copies no -0.0, but reads no row that no id uses
        return E[ids] + 0.0

    for answer in (lookup_unless_nan, lookup_plus_zero):
        with pytest.raises(CheckFailed, match="looks up rows"):
            embeddings.check_embeddings(answer, _tied)
        assert embeddings.check_embeddings(answer, _tied, points=2) < 2.0
    for case in embeddings.check_embeddings.visible + embeddings.check_embeddings.hidden:
        kind, ids, E = case.make()
        if kind == "embed":
            rows = E[ids]  # (B, T, d)
            negative = (rows == 0) & torch.signbit(rows)
            assert negative.any(), case.group
            columns = negative.flatten(0, 1).any(0)
            assert ((E[:, columns] > 0).sum(0) >= 1).all(), case.group


def test_the_prenorm_reference_is_x_plus_sublayer_of_layernorm_and_each_variant_differs():
    seed, sizes, x, _, mask, _ = prenorm.check_prenorm_encoder_block.hidden[0].make()
    *dims, dropout = sizes
    ref = _shared.randomize(_common.TR.EncoderBlock(*dims, dropout=dropout, norm_first=True), seed).eval()
    subs, norms = (lambda h: ref.self_attn(h, mask=mask)[0], ref.ffn), (ref.norm1, ref.norm2)
    with torch.no_grad():
        expected = ref(x, mask)
        assert torch.allclose(prenorm._variant(x, subs, norms, "pre"), expected, atol=1e-6)
        for mode, _ in prenorm._MODES:
            assert not torch.allclose(prenorm._variant(x, subs, norms, mode), expected, atol=1e-3), mode


def test_prenorm_cases_cover_the_edges_and_dropout_above_zero():
    made = [case.make() for case in prenorm.check_prenorm_encoder_block.hidden]
    assert any(x.shape[0] == 1 for _, _, x, *_ in made) and any(x.shape[1] == 1 for _, _, x, *_ in made)
    assert any(x.dtype == torch.float64 for _, _, x, *_ in made)
    assert any(not x.is_contiguous() for _, _, x, *_ in made)
    assert {sizes[-1] for _, sizes, *_ in made} > {0.0}  # a dropout rate that must be off in eval mode


def test_the_loss_is_the_package_seq2seq_loss_and_every_named_mistake_changes_it():
    from attnbook.seq2seq import seq2seq_loss

    changed = set()
    for case in loss.check_translation_loss.visible + loss.check_translation_loss.hidden:
        model, src, tgt, pad_id = case.make()
        assert model.config.pad_id == pad_id
        right = loss.reference(model, src, tgt, pad_id)
        with torch.no_grad():
            assert math.isclose(right.item(), seq2seq_loss(model, (src, tgt)).item(), rel_tol=1e-5)
        for message, variant in loss._variants(model, src, tgt, pad_id):
            if not torch.isclose(variant, right, rtol=1e-3):
                changed.add(message)
    assert changed == {message for message, _ in loss._variants(*loss.check_translation_loss.visible[0].make())}


def test_loss_cases_cover_the_edges():
    made = [case.make() for case in loss.check_translation_loss.hidden]
    assert any(tgt.shape[0] == 1 for _, _, tgt, _ in made) and any(tgt.shape[1] == 2 for _, _, tgt, _ in made)
    assert any(not tgt.is_contiguous() and not src.is_contiguous() for _, src, tgt, _ in made)
    other = [(tgt, pad_id) for _, _, tgt, pad_id in made if pad_id != 0]
    assert other and all((tgt == 0).any() and (tgt == pad_id).any() for tgt, pad_id in other)  # 0 is a word here


def test_a_detached_or_float_loss_is_explained():
    def detached(model, src, tgt, pad_id):
        with torch.no_grad():
            logits = model(src, tgt[:, :-1])
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=pad_id)

    with pytest.raises(CheckFailed, match="detached from the model"):
        loss.check_translation_loss(detached)
    with pytest.raises(CheckFailed, match="should return a tensor"):
        loss.check_translation_loss(lambda model, src, tgt, pad_id: detached(model, src, tgt, pad_id).item())


def test_a_swapped_pair_is_named_even_when_the_shapes_agree():
    """(weights, out) is told apart by shape, and by value where d_v = S makes the shapes equal."""

    def swapped(q, k, v, mask=None):
        out, weights = attnbook.attention.scaled_dot_product_attention(q, k, v, mask)
        return weights, out

    for case in (sdpa._plain(3, (2,), 3, 4, 8, 5), sdpa._plain(3, (2,), 3, 4, 8, 4)):  # d_v = 5, then d_v = S
        with pytest.raises(CheckFailed, match="the pair is swapped"):
            sdpa.check_sdpa(swapped)(*case())


# ------------------------------------------------------------------ Parts 12 to 14: the student reasons


def test_the_parameter_count_is_the_built_blocks_for_every_case_and_names_each_mistake():
    """Part 12: every case's count is that of attnbook's EncoderBlock built with its sizes (on the meta device:
    the largest are far too large to allocate), and each known mistake gets its own words."""
    from attnbook.grading.transformer import params

    part = params.check_encoder_block_params
    for case in part.visible + part.hidden:
        sizes = case.make()
        if max(sizes) < 2**14:
            with torch.device("meta"):
                block = attnbook.transformer.EncoderBlock(*sizes)
            assert params.REF.encoder_block_parameters(*sizes) == sum(p.numel() for p in block.parameters())
    assert any(case.make()[1] == 1 for case in part.hidden)  # one head: hidden only
    assert all(case.make()[1] > 1 for case in part.visible)
    for words, wrong in [
        ("every bias is missing", lambda d, h, f: 4 * d * d + 2 * d * f + 4 * d),
        ("one LayerNorm instead of two", lambda d, h, f: params.REF.encoder_block_parameters(d, h, f) - 2 * d),
        ("grows with num_heads", lambda d, h, f: h * params.REF.encoder_block_parameters(d, h, f)
         - (h - 1) * (2 * d * f + f + 5 * d)),
        ("swapped in a bias", lambda d, h, f: params.REF.encoder_block_parameters(d, h, f) - f + d),
        ("a Python int", lambda d, h, f: float(params.REF.encoder_block_parameters(d, h, f))),
    ]:
        with pytest.raises(CheckFailed, match=words):
            part(wrong)
    assert part(params.REF.encoder_block_parameters) is None


def test_the_reasoning_parts_say_not_implemented_and_their_keys_are_hidden_and_explained():
    """Parts 13 and 14: a blank answer is "not implemented yet"; the keys (one case per question) are in the
    instructor's file only, with a sentence for every option of the question."""
    from attnbook.grading import reasoning
    from attnbook.grading.transformer import ablation, reasoning_attention

    for part, what in ((reasoning_attention.check_attention_reason, "attention_answers"),
                       (ablation.check_scaling_ablation, "scaling_answers")):
        assert reasoning.is_choices(part) and part.forbidden == ()
        with pytest.raises(CheckFailed, match=f"{what} is not implemented yet"):
            part(None)
        keys = [case.make() for case in part.hidden]
        assert [k[0] for k in keys] == ["key"] * len(keys) and len(keys) == 3
        for _, _question, right, why in keys:
            assert right in why and len(why) >= 3 and all(len(sentence) > 60 for sentence in why.values())
        module = part.check.__module__.rpartition(".")[2]
        folder = harness.ROOT / "src" / "attnbook" / "grading" / "transformer"
        assert "key(" not in (folder / f"{module}.py").read_text()


@pytest.mark.parametrize("seed", range(8))
def test_the_ablation_shows_what_its_key_says_for_every_seed(seed):
    """Part 14 is graded on the reading of its figure, so what the keys say must hold for any seed, not only
    the notebook's: without the scale the largest weight passes 0.9 from d_k = 256 on and the gradient factor
    falls to about 0.1 at d_k = 64 and near 0 past 512; with it both stay flat (weight near 1/4, factor near
    0.3); the curves start together at d_k = 1."""
    from attnbook.attention import scaling_ablation

    d_ks = [2**i for i in range(11)]
    out = scaling_ablation(d_ks, keys=16, queries=256, seed=seed)
    at = {d: i for i, d in enumerate(d_ks)}
    assert out["max_weight_scaled"][0] == out["max_weight_unscaled"][0]
    assert 1 / 16 < out["max_weight_scaled"].min() and out["max_weight_scaled"].max() < 0.3
    assert 0.25 < out["grad_scaled"].min() and out["grad_scaled"].max() < 0.32
    assert (out["max_weight_unscaled"][at[256]:] > 0.9).all() and out["max_weight_unscaled"][at[64]] > 0.8
    assert 0.05 < out["grad_unscaled"][at[64]] < 0.15 and (out["grad_unscaled"][at[512]:] < 0.01).all()
    assert (out["grad_unscaled"][at[32]:] < out["grad_scaled"][at[32]:]).all()  # parted from d_k = 32 on
