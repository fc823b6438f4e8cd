"""attnbook.grading.gpt, fast: chapter 4's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/attnbook_course/fixtures/answers/04-gpt-bpe.py) is graded end to
end through the sandboxed judge in test_autograder.py.
"""

import functools
import math
import re

import exercise_harness as harness
import pytest
import torch
import torch.nn.functional as F

import attnbook.gpt
import attnbook.runtime
import attnbook.tokenizers
from attnbook.grading import gpt as checks
from attnbook.grading import reasoning
from attnbook.grading.errors import CheckFailed
from attnbook.grading.gpt import (
    _common,
    codec,
    decoding,
    flops,
    loss,
    pairs,
    params,
    perplexity,
    sampling,
    special,
    training,
    vocab_ablation,
)

chapter_answers = harness.load(harness.answers.FOLDER / "04-gpt-bpe.py", "answers_04")
EXERCISE = harness.Exercise("04-gpt-bpe")
CHAPTER = EXERCISE.answers


def test_the_catalogue_names_the_issues_mistakes():
    phrases = [p for a in CHAPTER.values() for p in harness.phrases(a["message"])]
    for named in ("overlapping occurrences were merged", "merges were applied in the wrong order",
                  "targets are not shifted", "*before* the softmax",  # the issue's four mistakes
                  "merged as text", "misses an occurrence right after another one",  # merges as strings
                  "non-contiguous logits", "fails when an axis has size 1", "a squeeze() drops",
                  "top_k >= vocabulary", "do not depend on the generator", "pass generator to torch.multinomial",
                  "longer than its context"):
        assert any(named in p for p in phrases), named


def test_the_notebook_shows_the_worked_example():
    text = "\n".join(c.source for c in harness.read(EXERCISE.released).cells if c.cell_type == "markdown")
    for step in ("aaabdaaabac", "ZabdZabac", "ZYdZYac", "XdXac"):
        assert step in text


# ------------------------------------------------------------------ the checks themselves


def _ns(source: str) -> dict:
    namespace = {"math": math, "torch": torch, "F": F}
    exec(source, namespace)
    return namespace


def test_the_references_pass_their_own_checks_when_copied_not_called():
    """The private copies agree with the package: a correct answer computes the same numbers."""
    ref = _common.TOK
    assert ref.training.train_bpe_reference("aaabdaaabac", 259) == attnbook.tokenizers.train_bpe("aaabdaaabac", 259)
    logits = torch.randn(3, 5, 7)
    ids = torch.randint(7, (3, 5))
    assert torch.equal(_common.GPT.next_token_loss(logits, ids), attnbook.gpt.next_token_loss(logits, ids))


@pytest.mark.parametrize("check, args", [
    (checks.check_pairs, (attnbook.tokenizers.get_stats, attnbook.tokenizers.merge)),
    (checks.check_train_bpe, (functools.partial(attnbook.tokenizers.train_bpe_reference),)),
    (checks.check_next_token_loss, (attnbook.gpt.next_token_loss,)),
])
def test_the_reference_itself_is_trapped(check, args):
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        check(*args)


def test_patching_the_public_package_does_not_fool_the_checks(monkeypatch):
    def keeps_everything(ids, pair, idx):
        return list(ids)

    # The checker merges with its private copy, so a patched public module changes nothing.
    monkeypatch.setattr(attnbook.tokenizers, "merge", lambda *args: keeps_everything(*args))
    monkeypatch.setattr(attnbook.tokenizers.pairs, "merge", lambda *args: keeps_everything(*args))
    get_stats = _ns(CHAPTER["gpt_alternative_answers"]["cells"]["pairs_solution"])["get_stats"]
    with pytest.raises(CheckFailed, match="replace each occurrence"):
        checks.check_pairs(get_stats, keeps_everything)


def test_merge_variants_name_the_aaa_mistakes():
    variants = {}
    for message, variant in pairs._merge_variants([97, 97, 97], (97, 97), 256):
        variants.setdefault(tuple(variant), message)  # the first one that matches is the diagnosis
    assert "overlapping" in variants[(256,)]  # both occurrences eaten
    assert "from the right" in variants[(97, 256)]


def _overlapping_merge(ids, pair, idx):  # takes overlapping occurrences in `aaa` too
    starts = [i for i in range(len(ids) - 1) if (ids[i], ids[i + 1]) == pair]
    out = list(ids)
    for i in reversed(starts):
        out[i:i + 2] = [idx]
    return out


def _right_to_left_merge(ids, pair, idx):  # `aaa` -> `aZ`
    return list(reversed(_common.TOK.pairs.merge(list(reversed(ids)), pair[::-1], idx)))


def _text_merge(ids, pair, idx):  # the digits of the pair also match inside longer ids
    text = " ".join(map(str, ids)).replace(f"{pair[0]} {pair[1]}", str(idx))
    return [int(i) for i in text.split()]


def _padded_text_merge(ids, pair, idx):  # misses an occurrence right after another one
    text = " " + " ".join(map(str, ids)) + " "
    return [int(i) for i in text.replace(f" {pair[0]} {pair[1]} ", f" {idx} ").split()]


@pytest.mark.parametrize("merge, mistake", [
    (_overlapping_merge, "overlapping occurrences were merged"),
    (_right_to_left_merge, "occurrences were taken from the right"),
])
def test_the_statements_aaa_is_a_visible_case(merge, mistake):
    """The statement's `merge([97, 97, 97], (97, 97), 256)`: its wrong twins fail before handing in."""
    with pytest.raises(CheckFailed, match=mistake):
        checks.check_pairs(pairs._count_pairs, merge)


@pytest.mark.parametrize("merge, group, mistake, score", [
    (_text_merge, "merge, ids as text", "merge treated the ids as text", 1.84),
    (_padded_text_merge, "merge, runs of one token", "merge replaced the pair with str.replace on joined ids", 1.6),
])
def test_merges_that_only_the_hidden_cases_catch(merge, group, mistake, score, capsys):
    checks.check_pairs(pairs._count_pairs, merge)
    assert capsys.readouterr().out == "All 5 visible checks passed.\n"
    assert checks.check_pairs(pairs._count_pairs, merge, points=2) == pytest.approx(score, abs=0.01)
    assert f"- {group}: {mistake}" in capsys.readouterr().out


@pytest.mark.parametrize("how", [h for h, _ in codec.ENCODE_MISTAKES])
def test_every_encoding_mistake_changes_some_hidden_case(how):
    """Each named mistake gives a different encoding from the right one on some case, so it cannot pass."""
    differs = False
    for case in codec.VISIBLE + codec.check_encode_decode.hidden:
        kind, *args = case.make()
        if kind == "encode":
            text, merges = args
            right = _common.TOK.bpe.encode_chunk(list(text.encode("utf-8")), merges)
            differs |= codec._encode_variant(text, merges, how) != right
    assert differs


def test_perplexity_mistakes_are_far_from_the_right_value():
    """Every named perplexity mistake misses the right value by far more than the tolerance on the hidden cases."""
    for case in perplexity.check_perplexity.hidden:
        model, data = case.make()
        right = perplexity._reference(model, data)
        message = perplexity.diagnose(right * 1.01, model, data)
        assert message.startswith("the perplexity differs"), message
    model, data = perplexity.check_perplexity.hidden[0].make()
    windows = perplexity.token_nll(model, data, model.config.block_size)
    mean_of_means = math.exp(torch.stack([w.mean() for w in windows]).mean().item())
    assert abs(mean_of_means / perplexity._reference(model, data) - 1) > 1e-2


def test_perplexity_test_model_is_far_from_uniform_and_leaves_the_random_state():
    state = torch.random.get_rng_state()
    model = checks.perplexity_test_model(3)
    assert torch.equal(state, torch.random.get_rng_state())
    ppl = attnbook.gpt.perplexity(model, torch.randint(12, (200,)))
    assert ppl > 13.0 or ppl < 11.0  # not the ~12 of a uniform model: the mistakes change the value


# ------------------------------------------------------------------ the statistical sampling check

_SAMPLE_OK = _ns(chapter_answers._SAMPLE)["sample_next"]


def test_the_sampling_bound_is_loose_for_a_correct_sampler():
    """A correct sampler with many different seeds passes every case: the bound is not tuned to one seed."""
    for seed in range(20):
        for case in sampling.VISIBLE + sampling.check_sample_next.hidden[:3]:
            distinct, temperature, top_k, _ = case.make()[:4]
            rows, V = distinct.shape
            logits = distinct.repeat_interleave(sampling.DRAWS, dim=0)
            ids = _SAMPLE_OK(logits, temperature, top_k, torch.Generator().manual_seed(1000 + seed))
            counts = F.one_hot(ids.view(rows, sampling.DRAWS), V).sum(1).double()
            expected = sampling.probs(distinct, temperature, top_k)
            assert sampling.fits(counts, expected, sampling.DRAWS), (seed, case.group)


def test_the_sampling_bound_catches_each_mistake_by_a_wide_margin():
    """Each named mistake's distribution is rejected even with its expected counts (no sampling noise)."""
    for case in sampling.VISIBLE + sampling.check_sample_next.hidden:
        distinct, temperature, top_k, _, *mode = case.make()
        if mode == ["one"]:
            continue  # a batch of one: its shape and its support are checked, not its counts
        right = sampling.probs(distinct, temperature, top_k)
        for message, variant in sampling.variants(distinct, temperature, top_k):
            if torch.allclose(variant, right, atol=1e-3):
                continue  # the same distribution on this case (for example top_k = 1 and the argmax)
            counts = (sampling.DRAWS * variant).round()
            assert not sampling.fits(counts, right, sampling.DRAWS), (case.group, message)


def test_the_sampling_check_leaves_the_random_state_and_logits_alone():
    state = torch.random.get_rng_state()
    assert checks.check_sample_next(_SAMPLE_OK) is None
    assert torch.equal(state, torch.random.get_rng_state())

    def in_place(logits, temperature=1.0, top_k=None, generator=None):
        logits.div_(temperature)
        return _SAMPLE_OK(logits, 1.0, top_k, generator)

    with pytest.raises(CheckFailed, match="in place"):
        checks.check_sample_next(in_place)


def test_sampling_shapes_and_types_are_explained():
    with pytest.raises(CheckFailed, match="shape \\(B,\\)"):
        checks.check_sample_next(lambda logits, t=1.0, k=None, g=None: torch.zeros(3, dtype=torch.long))
    with pytest.raises(CheckFailed, match="integer token ids"):
        checks.check_sample_next(lambda logits, t=1.0, k=None, g=None: torch.zeros(logits.shape[0]))
    with pytest.raises(CheckFailed, match="should be a torch.Tensor"):
        checks.check_sample_next(lambda logits, t=1.0, k=None, g=None: [0] * logits.shape[0])


def test_loss_and_perplexity_results_are_explained():
    with pytest.raises(CheckFailed, match="should return a tensor"):
        checks.check_next_token_loss(lambda logits, ids: 1.0)
    with pytest.raises(CheckFailed, match="0-dim tensor"):
        checks.check_next_token_loss(lambda logits, ids: F.cross_entropy(
            logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none"))
    with pytest.raises(CheckFailed, match="should return a number"):
        checks.check_perplexity(lambda model, data: "12")


def test_training_that_never_stops_is_told_to_stop_early():
    source = (CHAPTER["gpt_alternative_answers"]["cells"]["pairs_solution"] + "\n\n"
              + CHAPTER["gpt_edge_mistakes"]["cells"]["train_solution"])
    train_bpe = _ns(source)["train_bpe"]
    with pytest.raises(CheckFailed, match="stop early"):  # the statement's `abab`, a visible case
        checks.check_train_bpe(train_bpe)
    with pytest.raises(CheckFailed, match="stop early"):
        training._check(train_bpe)("aaaa", 266)


def test_the_statements_examples_are_visible_cases():
    """Each example of Parts 2 and 3 is a visible case, and tells the rule from its wrong twins."""
    made = [case.make() for case in codec.VISIBLE]
    assert {("encode", "aabcab"), ("encode", "dé")} <= {(args[0], args[1]) for args in made if args[0] == "encode"}
    assert ("decode", [256, 169, 32, 240, 159], {(100, 195): 256}) in made
    text, merges = "aabcab", {(99, 97): 256, (97, 98): 257, (97, 97): 258}
    by = {how: codec._encode_variant(text, merges, how) for how in ("count", "first", "highest", "count_all")}
    assert _common.TOK.bpe.encode_chunk(list(text.encode()), merges) == [97, 257, 256, 98]
    assert by["count"] == by["count_all"] == [97, 257, 99, 257] and by["first"] == [258, 98, 256, 98]
    assert by["highest"] not in ([97, 257, 256, 98], by["count"], by["first"])
    assert codec._encode_variant("dé", {(100, 195): 256}, "ord") == [100, 233]
    assert {case.make() for case in training.VISIBLE} >= {("é é", 257), ("abab", 261)}


# ------------------------------------------------------------------ the edges where real mistakes live


def test_merges_written_with_string_replacement_are_named():
    named = {tuple(v): m for m, v in pairs._merge_variants([11, 2, 1, 21, 1, 2, 5], (1, 2), 300) if v is not None}
    wrong = _common.text_merge([11, 2, 1, 21, 1, 2, 5], (1, 2), 300, padded=False)
    assert wrong != [11, 2, 1, 21, 300, 5] and "treated the ids as text" in named[tuple(wrong)]
    back_to_back = _common.text_merge([6, 5, 6, 5, 6, 5, 7], (5, 6), 300, padded=True)
    assert back_to_back == [6, 300, 5, 6, 5, 7]  # the second occurrence is missed
    for padded in (False, True):  # both string encoders lose a hidden case that only they get wrong
        lost = [case.group for case in codec.check_encode_decode.hidden if case.make()[0] == "encode"
                and codec._encode_variant(*case.make()[1:], "padded" if padded else "text")
                != _common.TOK.bpe.encode_chunk(list(case.make()[1].encode()), case.make()[2])]
        assert "encode: ids are not text" in lost, padded


def test_the_hidden_cases_cover_the_edges():
    shapes = [(case.group, case.make()) for case in loss.check_next_token_loss.hidden]
    assert any(logits.shape[0] == 1 and logits.shape[1] == 2 for _, (logits, ids, *_) in shapes)
    assert any(logits.dtype == torch.float64 for _, (logits, *_) in shapes)
    strided = [(logits, ids) for _, (logits, ids, *_) in shapes if not logits.is_contiguous()]
    assert strided and all(not ids.is_contiguous() for _, ids in strided)
    assert not strided[0][0].detach().clone().is_contiguous()  # the check's clone keeps the layout
    cases = [case.make() for case in sampling.check_sample_next.hidden]
    V = {id(c): c[0].shape[-1] for c in cases}
    assert any(c[2] is not None and c[2] > V[id(c)] and c[1] != 1.0 for c in cases)  # top_k above V, T != 1
    assert any(c[2] is None and c[1] != 1.0 for c in cases)
    assert {"repeat", "seeds", "one", "strided"} <= {m for c in cases for m in c[4:]}
    models = [case.make() for case in perplexity.check_perplexity.hidden]
    assert any(m.config.block_size == 1 for m, _ in models) and any(not d.is_contiguous() for _, d in models)


def test_samplers_that_ignore_the_generator_fail():
    def reseeds(logits, temperature=1.0, top_k=None, generator=None):
        torch.manual_seed(0)
        return _SAMPLE_OK(logits, temperature, top_k, None)

    def own_generator(logits, temperature=1.0, top_k=None, generator=None):
        return _SAMPLE_OK(logits, temperature, top_k, torch.Generator().manual_seed(0))

    seeds = next(case for case in sampling.check_sample_next.hidden if case.make()[4:] == ("seeds",))
    for sampler in (reseeds, own_generator):
        with pytest.raises(CheckFailed, match="do not depend on the generator"):
            sampling._check(sampler)(*seeds.make())
    sampling._check(_SAMPLE_OK)(*seeds.make())


def test_messages_name_no_hidden_value():
    for case in sampling.check_sample_next.hidden:
        distinct, temperature, top_k, *_ = case.make()
        for message, _ in sampling.variants(distinct, temperature, top_k):
            assert f"= {top_k}" not in message and "tensor(" not in message
    with pytest.raises(CheckFailed) as err:  # the model's own error names its block_size; the check does not
        perplexity._check(lambda model, data: model(data[None, :-1]))(*perplexity.check_perplexity.hidden[3].make())
    assert "block_size=" not in str(err.value) and "longer than its context" in str(err.value)


def test_tokenizer_libraries_are_forbidden_where_they_would_do_the_work():
    for part in (checks.check_train_bpe, checks.check_encode_decode):
        assert "tiktoken.Encoding" in part.forbidden and "tokenizers.ByteLevelBPETokenizer" in part.forbidden
    from tokenizers import ByteLevelBPETokenizer

    def train_bpe(text, vocab_size):
        tokenizer = ByteLevelBPETokenizer()
        tokenizer.train_from_iterator([text], vocab_size=vocab_size)
        return {}

    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        checks.check_train_bpe(train_bpe)


def test_the_rust_tokenizer_is_trapped_in_the_notebook_too():
    from tokenizers import Tokenizer, models, trainers

    def train_bpe(text, vocab_size):
        tokenizer = Tokenizer(models.BPE())
        tokenizer.train_from_iterator([text], trainers.BpeTrainer(vocab_size=vocab_size))
        return {}

    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        checks.check_train_bpe(train_bpe)
    assert Tokenizer(models.BPE()) is not None  # the trap is gone after the check


def test_a_tie_broken_another_way_is_described_not_blamed_on_a_line_of_code():
    """The message says which pair was merged, which should have been, and the rule, in a visible case; in
    another case it keeps the pairs to itself."""

    def largest(text, vocab_size):  # ties to the largest pair
        ids, merges = list(text.encode("utf-8")), {}
        for idx in range(256, vocab_size):
            stats = attnbook.tokenizers.get_stats(ids)
            pair = max(stats, key=lambda p: (stats[p], p))
            ids, merges[pair] = attnbook.tokenizers.merge(ids, pair, idx), idx
        return merges

    with pytest.raises(CheckFailed) as visible:
        checks.check_train_bpe(largest)
    assert "joined the pair (256, 97), but (97, 98) should be joined there" in str(visible.value)
    assert "smallest pair must win" in str(visible.value) and "max(" not in str(visible.value)
    with pytest.raises(CheckFailed) as other:
        training._check(largest)("dcdcbaba", 259)
    assert not re.search(r"\(\d+, \d+\)", str(other.value)), other.value  # no pair of ids named
    assert "at merge 0 (id 256)" in str(other.value) and "the largest of the tied pairs" in str(other.value)


# ------------------------------------------------------------------ the reasoning parts (7 to 9)


@pytest.mark.parametrize("sizes", [case.make() for case in params.check_gpt_params.visible]
                         + [case.make() for case in params.check_gpt_params.hidden])
def test_the_parameter_count_is_the_models_and_each_mistake_gives_another(sizes):
    V, T, C, L = sizes
    model = attnbook.gpt.GPT(attnbook.gpt.GPTConfig(vocab_size=V, block_size=T, n_embd=C, n_layer=L, n_head=1))
    assert params._reference(*sizes) == model.num_params() == sum(p.numel() for p in model.parameters())
    first = params.check_gpt_params.visible[0].make()
    counts = [count for _, count in params._mistakes(*first)]
    assert len(set(counts)) == len(counts) and params._reference(*first) not in counts  # each named apart


def test_the_parameter_count_leaves_the_random_state_and_refuses_the_counters():
    state = torch.random.get_rng_state()
    params._reference(65, 64, 48, 3)
    assert torch.equal(torch.random.get_rng_state(), state)

    def counted(vocab_size, block_size, n_embd, n_layer):  # measures instead of reasoning
        config = attnbook.gpt.GPTConfig(vocab_size=vocab_size, block_size=block_size, n_embd=n_embd,
                                        n_layer=n_layer, n_head=1)
        return attnbook.runtime.count_parameters(attnbook.gpt.GPT(config))

    with pytest.raises(CheckFailed, match=r"attnbook\.gpt\.model\.GPT"):  # built while it runs: refused
        checks.check_gpt_params(counted)
    built = attnbook.gpt.GPT(attnbook.gpt.GPTConfig(vocab_size=65, block_size=64, n_embd=48, n_layer=3, n_head=1))
    with pytest.raises(CheckFailed, match="count_parameters"):  # a model built before, counted by the package
        checks.check_gpt_params(lambda *sizes: attnbook.runtime.count_parameters(built))
    # the model is refused only while the student's function runs: Part 6's provided cell builds one before
    assert not any(name.startswith("attnbook.gpt") for name in checks.check_gpt_params.forbidden)
    assert "attnbook.gpt.model.GPT" in checks.check_gpt_params.refused_in_calls
    for wrong, words in [(lambda *a: 1.5, "an int"), (lambda *a: "91104", "an int"),
                         (lambda V, T, C, L: 2 * V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C, "counts once")]:
        with pytest.raises(CheckFailed, match=words):
            checks.check_gpt_params(wrong)
    counted_by_hand = lambda V, T, C, L: float(V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C)  # noqa: E731
    assert checks.check_gpt_params(counted_by_hand, points=2) == 2  # 91104.0 is a count


@pytest.mark.parametrize("part, module", [(checks.check_decoding_reason, decoding),
                                          (checks.check_vocab_reading, vocab_ablation)])
def test_each_question_has_a_hidden_key_that_explains_every_option(part, module):
    assert reasoning.is_choices(part) and part.check.__module__ == module.__name__
    questions = part.check.__closure__  # the options each question offers, as the part declares them
    offered = next(c.cell_contents for c in questions if isinstance(c.cell_contents, dict))
    keys = [case.make() for case in part.hidden]
    assert sorted(q for _, q, _, _ in keys) == sorted(offered)  # one case per question
    for _, question, right, why in keys:
        assert right in offered[question] and set(why) == set(offered[question]), question
    assert "key(" not in (harness.ROOT / "src" / "attnbook" / "grading" / "gpt" / f"{module.__name__.split('.')[-1]}.py"
                          ).read_text()  # the keys stay in the instructor's file


def _ablation(seed: int) -> dict[str, list[float]]:
    """The notebook's locked ablation cell, run with another seed (its figure drawn off screen)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = {harness.grade_id(c): c.source for c in harness.read(EXERCISE.solution).cells}
    source = cells["vocab_ablation_run"]
    assert "SEED = 0" in source
    namespace: dict = {}
    exec(source.replace("SEED = 0", f"SEED = {seed}").replace("plt.show()", ""), namespace)
    plt.close("all")
    assert namespace["sizes"] == [256, 272, 288, 320]
    return namespace["curves"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_the_ablation_shows_its_effects_for_every_seed(seed):
    """What the questions of Part 9 read off the figure holds by a wide margin, whatever the numbers drawn:
    English rises from 1 to more than 4 bytes per token (seed 0: 1.00, 1.91, 2.93, 4.69), German stays
    near 1.2 (1.00, 1.17, 1.21, 1.22)."""
    english, german = _ablation(seed).values()
    assert english[0] == german[0] == 1.0
    assert all(b > a + 0.5 for a, b in zip(english, english[1:], strict=False))  # rises at every step
    assert english[-1] > 4.0
    assert german[-1] < 1.4 and german[-1] - german[1] < 0.15  # flat after the first merges
    assert english[-1] > 3 * german[-1]


# ------------------------------------------------------------------ Part 11: special tokens, only when allowed


def _special_cases() -> list[tuple]:
    return [case.make() for case in special.check_encode_special.visible + special.check_encode_special.hidden]


@pytest.mark.parametrize("args", _special_cases(), ids=lambda args: repr(args[0])[:30])
def test_the_special_token_reference_is_tiktokens(args):
    """The reference (BPETokenizer.encode) gives tiktoken's ids on every case: tiktoken loaded with the same ranks
    and special tokens, told which special tokens to recognise and to take the others as text."""
    text, merges, specials, *allowed = args
    recognised = special._allowed(specials, allowed[0] if allowed else special.DEFAULT)
    encoding = attnbook.tokenizers.BPETokenizer.from_merges(merges, None, list(specials)).to_tiktoken()
    want = encoding.encode(text, allowed_special=set(recognised), disallowed_special=())
    assert special._reference(text, merges, specials, allowed[0] if allowed else special.DEFAULT) == want
    assert encoding.decode(want) == text  # nothing lost


def test_the_special_token_cases_show_every_rule():
    """The visible cases leave allowed_special out, give "all" and a list; merges cross the special strings in
    them (so that a text encoded whole differs), and every rule's mistake fails one of them."""
    visible = [case.make() for case in special.VISIBLE]
    allowed = [args[3] for args in visible if len(args) > 3]
    assert len(allowed) < len(visible) and "all" in allowed and any(isinstance(a, list) for a in allowed)
    crossing = [args for args in visible if len(args) > 3 and args[3] == "all" and special.EOT in args[0]]
    assert crossing
    text, merges, specials, allowed = crossing[0]
    whole = special._replaced(special._plain(text, merges), merges, specials, [special.EOT, special.PROMPT])
    assert whole != special._reference(text, merges, specials, allowed)  # the whole text first: a wrong answer
    hidden = [case.make() for case in special.check_encode_special.hidden]
    assert [] in [args[3] for args in hidden if len(args) > 3]  # an empty collection: nothing recognised
    assert any(args[0] == "" for args in hidden) and any(args[0] in special.SPECIALS for args in hidden)


def test_the_special_token_routes_are_refused():
    """BPETokenizer.encode with special tokens allowed and tiktoken do the whole job: refused. The plain encoder
    (encode_chunk, which the statement offers, or BPETokenizer.encode with none allowed) is not."""

    def by_the_tokenizer(text, merges, special_tokens, allowed_special="none"):
        tok = attnbook.tokenizers.BPETokenizer.from_merges(merges, None, list(special_tokens))
        return tok.encode(text, allowed_special=allowed_special)

    def by_tiktoken(text, merges, special_tokens, allowed_special="none"):
        enc = attnbook.tokenizers.BPETokenizer.from_merges(merges, None, list(special_tokens)).to_tiktoken()
        return enc.encode(text, allowed_special=set(special_tokens) if allowed_special == "all" else set(),
                          disallowed_special=())

    for route in (by_the_tokenizer, by_tiktoken):
        with pytest.raises(CheckFailed, match="calls the reference implementation"):
            checks.check_encode_special(route)
    plain = attnbook.tokenizers.BPETokenizer.from_merges({}, None).encode("no special here")
    assert plain == list(b"no special here")  # the tokenizer itself stays usable: Part 9's cell trains one


# ------------------------------------------------------------------ Part 12: the FLOPs of a forward pass


@pytest.mark.parametrize("sizes", [case.make() for case in flops.check_forward_flops.visible]
                         + [case.make() for case in flops.check_forward_flops.hidden])
def test_the_flop_count_is_what_pytorch_measures_and_each_mistake_gives_another(sizes):
    """The check's reference against FlopCounterMode over the blocks and the head of a GPT of these sizes, built
    on the meta device (the embeddings are look-ups: no products), as the chapter's page measures."""
    from torch.utils.flop_counter import FlopCounterMode

    V, C, L, nh, nkv, T = sizes
    config = attnbook.gpt.GPTConfig(vocab_size=V, block_size=T, n_embd=C, n_layer=L, n_head=nh, n_kv_head=nkv)
    with torch.device("meta"):
        model = attnbook.gpt.GPT(config)
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        x = torch.empty(1, T, C, device="meta")  # (B, T, C)
        for block in model.h:
            x = block(x)
        model.lm_head(model.ln_f(x))
    assert flops._reference(*sizes) == counter.get_total_flops() == attnbook.gpt.forward_flops(config, T)
    first = flops.check_forward_flops.visible[0].make()
    counts = [count for _, count in flops._mistakes(*first)]
    assert len(set(counts)) == len(counts) and flops._reference(*first) not in counts  # each named apart


def test_the_flop_count_refuses_the_counter_and_takes_whole_floats():
    def measured(vocab_size, n_embd, n_layer, n_head, n_kv_head, T):  # measures instead of reasoning
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as counter:
            torch.ones(T, n_embd) @ torch.ones(n_embd, vocab_size)
        return counter.get_total_flops()

    with pytest.raises(CheckFailed, match="FlopCounterMode"):
        checks.check_forward_flops(measured)
    for wrong, words in [(lambda *a: 1.5, "an int"), (lambda *a: "6912", "an int"),
                         (lambda V, C, L, nh, nkv, T: flops._reference(V, C, L, nh, nkv, T) // T, "one token"),
                         (lambda V, C, L, nh, nkv, T: flops._reference(V, C, L, nh, nkv, T) - 2 * T * C * V,
                          "saves parameters, not work")]:
        with pytest.raises(CheckFailed, match=words):
            checks.check_forward_flops(wrong)
    assert checks.check_forward_flops(lambda *a: float(flops._reference(*a)), points=2) == 2
