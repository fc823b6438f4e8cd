"""attnbook.grading.imagegpt, fast: chapter 5's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/attnbook_course/fixtures/answers/05-imagegpt.py) is graded end to
end through the sandboxed judge in test_autograder.py.
"""


import exercise_harness as harness
import pytest
import torch

import attnbook.imagegpt as ig
from attnbook.grading import imagegpt as checks
from attnbook.grading.errors import CheckFailed
from attnbook.grading.imagegpt import _common, completion, mask, palette, probe

EXERCISE = harness.Exercise("05-imagegpt")
CHAPTER = EXERCISE.answers


pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_catalogue_names_the_issues_mistakes():
    phrases = [p for a in CHAPTER.values() for p in harness.phrases(a["message"])]
    for named in ("red goes in the high bits", "rounded to the nearest bin",  # the issue's seven mistakes
                  "read column by column", "in nats", "a mean per image", "the kept rows changed",
                  "type A must hide the centre pixel",
                  "became NaN", "keep the leading axes", "a squeeze() drops", "non-contiguous",
                  "write every sampled pixel into the sequence", "generators seeded alike", "1 x 1",
                  "standardised with their own mean", "the accuracy on the training set", "bias column is missing"):
        assert any(named in p for p in phrases), named


# ------------------------------------------------------------------ the checks themselves


def test_the_private_reference_agrees_with_the_package():
    images = torch.randint(0, 256, (2, 3, 4, 4), dtype=torch.uint8)
    assert torch.equal(_common.IG.quantize_9bit(images), ig.quantize_9bit(images))
    assert _common.IG.quantize_9bit is not ig.quantize_9bit


@pytest.mark.parametrize("check, args", [
    (checks.check_quantize_9bit, (ig.quantize_9bit, ig.dequantize_9bit)),
    (checks.check_raster_order, (ig.to_sequence, ig.from_sequence)),
    (checks.check_bits_per_dim, (ig.bits_per_dim,)),
    (checks.check_complete, (ig.complete,)),
    (checks.check_pixelcnn_mask, (ig.pixelcnn_mask,)),
    (checks.check_ridge_probe, (ig.ridge_probe,)),
    (checks.check_uniform_bits, (ig.uniform_bits,)),
])
def test_the_reference_itself_is_trapped(check, args):
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        check(*args)


def test_patching_the_public_package_does_not_fool_the_checks(monkeypatch):
    def l1_nearest(pixels, palette):
        return (pixels[..., None, :] - palette).abs().sum(-1).argmin(-1)

    def nearest(pixels, palette):
        return ((pixels[..., None, :] - palette) ** 2).sum(-1).argmin(-1)

    def kmeans_step(pixels, palette):
        ids = nearest(pixels, palette)
        return torch.stack([pixels[ids == j].mean(0) if (ids == j).any() else palette[j]
                            for j in range(len(palette))])

    # The checker compares with its private copy: a patched public module changes no expected value.
    def patched(pixels, palette):
        return l1_nearest(pixels, palette)

    monkeypatch.setattr(ig.palette, "nearest_colour", patched)
    monkeypatch.setattr(ig, "nearest_colour", patched)
    checks.check_palette(nearest, kmeans_step)
    with pytest.raises(CheckFailed, match="absolute differences"):  # and the L1 distance is still caught
        checks.check_palette(l1_nearest, kmeans_step)


def test_completion_statistics_accept_right_answers_and_reject_near_misses():
    model = completion.completion_test_model(3)
    seq = torch.randint(0, 6, (1, 12), generator=torch.Generator().manual_seed(3)).expand(completion.DRAWS, 12)
    p = completion._probs(model, seq, 4, 1.0)  # (n, V), every row alike
    g = torch.Generator().manual_seed(0)
    right = torch.multinomial(p, 1, generator=g)[:, 0]
    assert completion._follows(right, p)
    sharper = torch.softmax(torch.log(p) / 0.7, -1)  # temperature 0.7 instead of 1
    assert not completion._follows(torch.multinomial(sharper, 1, generator=g)[:, 0], p)
    assert not completion._follows(p.argmax(-1), p)


def test_every_probe_mistake_is_caught_by_some_case():
    """Each named mistake moves the accuracy beyond the tolerance on at least one case (else it would pass)."""
    caught, named = set(), set()
    for case in probe.VISIBLE + probe.check_ridge_probe.hidden:
        *data, l2 = case.make()
        default = l2 is None  # ridge_probe called with its default penalty
        l2 = probe.L2 if default else l2
        expected = probe.IG.ridge_probe(*data, l2=l2)
        variants = probe._variants(*data, l2, default)
        named |= {m for m, _ in variants}
        caught |= {m for m, v in variants if abs(v - expected) > probe.TOLERANCE}
    assert caught == named and len(named) == 8


def test_mask_variants_are_all_different_from_the_answer():
    for k in (3, 5, 7):
        for kind in "AB":
            expected = ig.pixelcnn_mask(k, kind)
            for message, variant in mask._variants(k, kind):
                assert not torch.equal(variant, expected), (k, kind, message)


def test_palette_cases_have_integer_colours_so_distances_tie_exactly():
    for case in palette.VISIBLE + palette.check_palette.hidden:
        pixels, pal = case.make()
        assert torch.equal(pixels, pixels.round()) and torch.equal(pal, pal.round())
    pixels, pal = palette._case(2, (12,), 3, ties=True)()
    d2 = ((pixels[:, None] - pal) ** 2).sum(-1)
    assert torch.equal(d2[:, 0], d2[:, 1])  # the ties case really ties


# ------------------------------------------------------------------ the reasoning parts (9 to 11)


def test_the_untrained_model_measures_near_the_predicted_bits():
    """Part 9's measuring cell: an untrained ImageGPT scores near log2 8 = 3 bits per dimension, a little below
    (its tied output layer leans to the previous pixel's value), for every seed of its weights."""
    from attnbook.data import load_digits

    digits, _ = load_digits(normalize=False)
    seq = ig.grey_levels(digits[:256], 8).reshape(256, 64)
    predicted = ig.uniform_bits(8, 8, 8)["bits_per_dim"]
    for seed in range(3):
        torch.manual_seed(seed)
        model = ig.ImageGPT(ig.ImageGPTConfig(vocab_size=8, height=8, width=8, n_layer=2, n_head=2, n_embd=32))
        with torch.no_grad():
            measured = ig.bits_per_dim(model.eval()(seq), seq).item()
        assert predicted - 0.5 < measured < predicted + 0.05, (seed, measured)


def test_the_palette_ablation_shows_its_effects_for_every_seed():
    """Part 11 is graded on the reading of its figure: the effects it asks about hold for every seed, by far.

    The error falls at every doubling of K (by 2 points of 255 at least), and the first doubling buys more
    than 1.5 times what any later one does (about twice); the figure's cell runs three of these seeds."""
    pytest.importorskip("PIL")
    from sklearn.datasets import load_sample_image

    pixels = torch.tensor(load_sample_image("china.jpg"))[::10, ::10].reshape(-1, 3).double()  # as the cell
    errors = ig.palette_size_errors(pixels, (2, 4, 8, 16, 32), tuple(range(8)))  # (8 seeds, 5 sizes)
    drops = errors[:, :-1] - errors[:, 1:]  # (8, 4): what each doubling buys
    assert (drops > 2.0).all(), errors
    assert (drops[:, 0] > 1.5 * drops[:, 1:].max(dim=1).values).all(), errors
    assert (errors.max(dim=0).values - errors.min(dim=0).values < 1.5).all(), errors  # seeds agree


def test_a_reasoning_part_not_answered_yet_says_so():
    for check in (checks.check_design_answers, checks.check_palette_reading):
        with pytest.raises(CheckFailed, match="not implemented yet"):
            check(None)
        with pytest.raises(CheckFailed, match="should be a dict"):
            check(["a", "b", "c"])


def test_the_keys_of_the_reasoning_parts_explain_every_option(capsys):
    """Each question has a hidden key with a sentence for every option the notebook offers; the key earns all."""
    asked = {checks.check_design_answers: {"channels": "abcd", "typeb": "abc", "probe": "abc"},
             checks.check_palette_reading: {"error": "abcd", "gain": "abc", "cost": "abcd"}}
    for check, questions in asked.items():
        keys = {}
        for case in check.hidden:
            _, question, right, why = case.make()
            assert "".join(sorted(why)) == questions[question] and right in why, question
            keys[question] = right
        assert set(keys) == set(questions)
        check({q: options[-1] for q, options in questions.items()})  # the form of any option passes
        assert check(keys, points=3) == 3
        assert len(set(keys.values())) > 1  # not one letter for every question
