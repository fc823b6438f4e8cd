"""attnbook.grading.bert, fast: chapter 3's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/attnbook_course/fixtures/answers/03-bert.py) is graded end to end
through the sandboxed judge in test_autograder.py.
"""


import exercise_harness as harness
import pytest
import torch

from attnbook.grading.bert import masking, nsp
from attnbook.grading.errors import CheckFailed

EXERCISE = harness.Exercise("03-bert")
CHAPTER = EXERCISE.answers


def test_the_catalogue_names_the_issues_mistakes():
    phrases = [p for a in CHAPTER.values() for p in harness.phrases(a["message"])]
    for named in ("special tokens ([CLS], [SEP], [PAD], ...) were chosen",  # the issue's mistakes
                  "the 80/10/10 replacement applies only to the chosen 15 %",
                  "a random replacement was a special token", "averaged over all positions",
                  "segment ids are off by one", "pooler reads the mean", "head were frozen too",
                  "the shortest match was taken",
                  "draw every random number with the generator", "a squeeze() drops"):  # edges
        assert any(named in p for p in phrases), named


# ------------------------------------------------------------------ the checks themselves


def test_statistical_bounds_pass_the_reference_under_many_seeds():
    """The binomial bounds are wide enough for a right answer whatever the seed (the reference, 10 seeds), in the
    first hidden case and the visible cases that count (mlm_probability left out, 0.4)."""
    from attnbook import bert

    for case in (masking.check_mask_tokens.hidden[0], *masking.check_mask_tokens.visible[:2]):
        ids, special, vocab, mask_id, p, _, _ = case.make()
        stated = sorted(set(special) | {mask_id})
        for seed in range(10):
            inputs, labels = bert.mask_tokens(ids, special, vocab, torch.Generator().manual_seed(seed),
                                              *(() if p is None else (p,)), mask_id=mask_id)
            chosen = masking._check_rules(ids, stated, inputs, labels, mask_id)
            masking._check_proportions(ids, stated, vocab, mask_id, p, inputs, chosen)


def test_nsp_balance_catches_a_biased_coin():
    def biased(lines, generator=None):  # 70 % consecutive; the random lines drawn as they should be
        pairs = []
        for i in range(len(lines) - 1):
            if torch.rand((), generator=generator) < 0.7:
                pairs.append((lines[i], lines[i + 1], True))
            else:
                j = int(torch.randint(len(lines) - 1, (), generator=generator))
                pairs.append((lines[i], lines[j + 1 if j >= i + 1 else j], False))
        return pairs

    with pytest.raises(CheckFailed, match="half of the pairs should keep the true next line"):
        nsp.check_nsp_pairs(biased)  # the visible 800 pairs tell 70 % from 50 % at six standard deviations...
    assert nsp.check_nsp_pairs(biased, points=2) < 2  # ...and so do the hidden 2000 pairs


# ------------------------------------------------------------------ the reasoning parts (issue 38)


def test_the_predicted_loss_is_what_an_untrained_bert_measures():
    """Part 8's reference, ln V, is mlm_loss of equal logits, whatever the share chosen, and a freshly initialised
    tiny BERT (logits near zero) measures within 0.1 nats of it, as the notebook's measuring cell shows."""
    import math

    import torch.nn.functional as F

    from attnbook.bert import BertConfig, BertForPreTraining, mlm_loss, uniform_mlm_loss

    for V, p in ((2, 0.15), (1000, 0.4), (30522, 1.0)):
        labels = torch.randint(V, (4, 50), generator=torch.Generator().manual_seed(V))
        labels[torch.rand(4, 50, generator=torch.Generator().manual_seed(1)) >= p] = -100
        labels[0, 0] = 1
        assert math.isclose(float(mlm_loss(torch.zeros(4, 50, V), labels)), uniform_mlm_loss(V), rel_tol=1e-6)
    for seed in range(3):
        torch.manual_seed(seed)
        model = BertForPreTraining(BertConfig.preset("cpu-tiny", vocab_size=1000)).eval()
        ids = torch.randint(5, 1000, (8, 32), generator=torch.Generator().manual_seed(seed))
        chosen = torch.rand(ids.shape, generator=torch.Generator().manual_seed(seed)) < 0.15
        with torch.no_grad():
            logits, _ = model(torch.where(chosen, torch.full_like(ids, 4), ids))
        measured = F.cross_entropy(logits.reshape(-1, 1000), torch.where(chosen, ids, -100).reshape(-1))
        assert abs(float(measured) - math.log(1000)) < 0.1


def test_the_predicted_loss_names_each_slip():
    import math

    from attnbook.grading.bert import check_initial_mlm_loss

    for answer, words in ((lambda V, p=0.15: math.log2(V), "in bits"), (lambda V, p=0.15: math.log10(V), "base 10"),
                          (lambda V, p=0.15: 1 / V, "the probability of the right token"),
                          (lambda V, p=0.15: float(V), "the number of tokens"),
                          (lambda V, p=0.15: -math.log(V), "the wrong sign"),
                          (lambda V, p=0.15: p * math.log(V), "scaled by mlm_probability"),
                          (lambda V, p=0.15: math.log(V) / p, "divided by mlm_probability"),
                          (lambda V, p=0.15: 0.0, "a perfect model's loss"),
                          (lambda V, p=0.15: "ln V", "should return a number")):
        with pytest.raises(CheckFailed, match=words):
            check_initial_mlm_loss(answer)
    check_initial_mlm_loss(lambda V, p=0.15: torch.tensor(V, dtype=torch.float64).log())  # a 0-dim tensor is fine


def test_the_ablation_shows_its_effect_under_every_seed():
    """Part 10 is graded on reading the figure, so its effect must not depend on the run: for ten seeds of the
    model, the sentence and the shuffles, the outputs of the model with positions move by more than 5 % (words
    and [CLS]) and those of the model without by less than 1e-5 (float32 rounding), the notebook's seed included."""
    import copy

    from attnbook.bert import BertConfig, BertModel, shuffle_changes

    config = BertConfig(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=16, initializer_range=0.2)
    for seed in range(10):
        torch.manual_seed(seed)
        with_positions = BertModel(config).eval()
        no_positions = copy.deepcopy(with_positions)
        with torch.no_grad():
            no_positions.embeddings.position_embeddings.weight.zero_()
        g = torch.Generator().manual_seed(seed)
        words = torch.randint(5, 40, (9,), generator=g)
        sentence = torch.cat([torch.tensor([2]), words, torch.tensor([3])])
        shuffles = torch.stack([torch.randperm(9, generator=g) for _ in range(12)])
        moved = shuffle_changes(with_positions, sentence, shuffles)
        still = shuffle_changes(no_positions, sentence, shuffles)
        assert min(float(moved[0].min()), float(moved[1].min())) > 0.05, seed
        assert max(float(still[0].max()), float(still[1].max())) < 1e-5, seed


def test_the_reasoning_parts_keys_are_hidden_and_explain_every_option():
    """Parts 9 and 10: the instructor's keys cover every question, explain every option, and are not in the
    student's package (the visible check tells the form only)."""
    import inspect

    from attnbook.grading import hidden_cases, reasoning
    from attnbook.grading.bert import ablation, check_masking_reasons, check_positions_ablation, reasons

    for part, module, questions in ((check_masking_reasons, reasons, {"mask_only", "random_tokens", "nsp_balance"}),
                                    (check_positions_ablation, ablation, {"words", "cls", "tell_apart"})):
        assert reasoning.is_choices(part)
        keys = [case.make() for case in hidden_cases.find(part)]
        assert {k[1] for k in keys} == questions
        for _, _, right, why in keys:
            assert right in why and len(why) >= 3 and all(len(s) > 40 for s in why.values())
            assert all(s not in inspect.getsource(module) for s in why.values())
