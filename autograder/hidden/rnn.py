"""The hidden cases of chapter 1 (``solutions/01-rnn-attention``): instructor-only, never in the student's package.

``HIDDEN[part name]`` is the part's hidden cases, which
:func:`attnbook.grading.hidden_cases.find` reads at grading time; the case makers
come from the part modules in :mod:`attnbook.grading.rnn`, the parameters only from here.
"""

import torch

from attnbook.grading import reasoning
from attnbook.grading.engine import Case
from attnbook.grading.rnn import (
    additive_scores,
    alignment_params,
    decoder_step,
    luong_scores,
    sample_hard_attention,
    score_function_gradient,
    soft_attention,
)

HIDDEN = {
    "check_additive_scores": (
        Case("no mask", additive_scores._case(101, 3, 5, (4, 6, 8))),
        Case("batch of one, one real key", additive_scores._case(102, 1, 6, (2, 3, 4), masked=True, lengths=(1,))),
        Case("as many sequences as keys", additive_scores._case(103, 4, 4, (5, 5, 3), masked=True), weight=2.0),
        Case("float64, padding", additive_scores._case(104, 3, 7, (6, 4, 5), masked=True, dtype=torch.float64)),
        Case("wide attention layer", additive_scores._case(105, 2, 9, (8, 8, 32), masked=True), weight=2.0),
        Case("batch of one, one key, no mask", additive_scores._case(106, 1, 1, (3, 2, 4))),
        Case("non-contiguous inputs, padding in every row",
             additive_scores._case(107, 3, 6, (4, 5, 6), masked=True, all_padded=True, noncontiguous=True)),
    ),
    # Equivalent mutants (autograder/attnbook_course/mutants.py): torch.cat([...], dim=1) or dim=+1 for dim=-1, in both
    # concatenations: e, context and hidden are (B, E), (B, C), (B, H) by the statement, 2-D, so axis 1 is
    # the last axis.
    "check_decoder_step": (
        Case("no mask", decoder_step._case(401, 3, 4, (7, 5, 6, 4, 3), masked=False)),
        Case("embedding as wide as the context", decoder_step._case(402, 3, 6, (11, 6, 4, 6, 5)), weight=2.0),
        Case("batch of one, one source token", decoder_step._case(403, 1, 1, (5, 3, 4, 2, 3), masked=False)),
        Case("float64, padding", decoder_step._case(404, 4, 7, (10, 4, 8, 6, 6), dtype=torch.float64), weight=2.0),
        Case("non-contiguous inputs, padding in every row",
             decoder_step._case(405, 3, 6, (8, 4, 5, 6, 4), all_padded=True, noncontiguous=True)),
        Case("batch of one, padded source", decoder_step._case(406, 1, 4, (6, 3, 5, 4, 3), lengths=(2,))),
    ),
    "check_luong_scores": (
        Case("dot, padding mask", luong_scores._case(201, 3, 6, 16, 16, general=False, masked=True), weight=2.0),
        Case("general, W not square", luong_scores._case(202, 2, 5, 6, 3), weight=2.0),
        Case("general, float64, padding", luong_scores._case(203, 4, 7, 5, 3, masked=True, dtype=torch.float64)),
        Case("batch of one, one key", luong_scores._case(204, 1, 1, 4, 2)),
        Case("non-contiguous inputs, padding in every row",
             luong_scores._case(205, 3, 5, 4, 6, masked=True, all_padded=True, noncontiguous=True)),
        Case("dot, float64, batch of one, one key",
             luong_scores._case(206, 1, 1, 3, 3, general=False, masked=True, dtype=torch.float64)),
    ),
    # Equivalent mutants: softmax(scores, dim=1) or dim=+1 for dim=-1: scores is (B, S) by the statement.
    "check_sample_hard_attention": (
        Case("no padding", sample_hard_attention._case(501, 3, 5, 2, 3000)),
        Case("float64, padding",
             sample_hard_attention._case(502, 2, 6, 4, 3000, masked=True, dtype=torch.float64), weight=2.0),
        Case("one row, many keys", sample_hard_attention._case(503, 1, 9, 3, 4000, masked=True)),
        Case("batch of one", sample_hard_attention._case(504, 1, 5, 2, 1, masked=True)),
        Case("batch of one, one key", sample_hard_attention._case(505, 1, 1, 3, 1)),
        Case("non-contiguous inputs, padding in every row",
             sample_hard_attention._case(506, 3, 5, 2, 2000, masked=True, noncontiguous=True)),
        Case("the generator it is given",
             sample_hard_attention._case(507, 2, 4, 3, 1000, masked=True, reseeded=True), weight=2.0),
    ),
    # Equivalent mutants: softmax(..., dim=1) or dim=+1 and scores.shape[1] or shape[+1] for -1: scores is
    # (B, S) by the statement. onehot + weights and onehot ** weights for onehot - weights: the advantages
    # f_n - f̄ sum to zero over the draws, so any term that does not depend on the draw n (here ±γ) adds
    # γ · Σ_n (f_n - f̄) = 0 (up to rounding); onehot ** γ is onehot except where γ = 0 (padding, 0 ** 0 = 1),
    # again the same for every draw.
    "check_score_function_gradient": (
        Case("two samples", score_function_gradient._case(601, 2, 4, 3, 2, 4000), weight=2.0),
        Case("a large constant in the loss",
             score_function_gradient._case(602, 2, 5, 2, 8, 1000, offset=1000.0), weight=2.0),
        Case("float64, padding",
             score_function_gradient._case(603, 3, 6, 4, 4, 1500, masked=True, dtype=torch.float64)),
        Case("batch of one", score_function_gradient._case(604, 1, 5, 3, 3, 1, masked=True)),
        Case("non-contiguous inputs, padding in every row",
             score_function_gradient._case(605, 2, 5, 3, 6, 1500, masked=True, noncontiguous=True)),
        Case("the generator it is given", score_function_gradient._case(606, 2, 4, 2, 4, 1000, reseeded=True)),
    ),
    # Equivalent mutants: softmax(scores, dim=1) or dim=+1 for dim=-1: scores is (B, S) by the statement.
    "check_soft_attention": (
        Case("no padding", soft_attention._case(301, 3, 4, 6)),
        Case("batch of one, one real key", soft_attention._case(302, 1, 5, 2, masked=True, lengths=(1,))),
        Case("float64, padding", soft_attention._case(303, 4, 6, 5, masked=True, dtype=torch.float64), weight=2.0),
        Case("as many sequences as keys", soft_attention._case(304, 5, 5, 5, masked=True), weight=2.0),
        Case("large scores", soft_attention._case(305, 3, 4, 2, scale=100.0)),  # exp(e) overflows in float32
        Case("batch of one, one key", soft_attention._case(306, 1, 1, 3)),
        Case("non-contiguous inputs, padding in every row",
             soft_attention._case(307, 4, 6, 3, masked=True, all_padded=True, noncontiguous=True)),
    ),
    # Other sizes than the visible ones, and those the notebook's measuring cell prints (a table of the
    # numbers it shows passes the visible cases only). Equivalent mutant: method >= "general" for
    # method == "general", after the test for "dot": of the three methods the statement names, only
    # "general" is >= "general" ("additive" sorts before it).
    "check_alignment_params": (
        Case("additive, other sizes", alignment_params._case(7, 2, 9), weight=2.0),
        Case("additive, a wide model", alignment_params._case(256, 512, 128)),
        Case("additive, all sizes one", alignment_params._case(1, 1, attn_size=1)),
        Case("general, W_a not square", alignment_params._case(8, 3, 6, "general"), weight=2.0),
        Case("general, attn_size unused", alignment_params._case(5, 7, None, "general")),
        Case("dot, other sizes", alignment_params._case(11, 11, 3, "dot")),
    ),
    "check_attention_reason": (
        Case("gradient", reasoning.key(
            "gradient", "c",
            a="no backward for the draw would help: the index j is a step function of the scores (a small "
              "change of the scores almost never changes the draw), so its derivative is zero wherever it "
              "exists",
            b="the softmax is differentiable everywhere, -inf scores included (their weight and its derivative "
              "are 0); the obstacle is the draw, a step function of the scores",
            c="the draw is a step function of the scores, flat almost everywhere, so backpropagation through it "
              "gives nothing; the score function differentiates the probabilities alpha_j instead, which are "
              "smooth in the scores")),
        Case("init", reasoning.key(
            "init", "d",
            a="the softmax of equal scores is uniform, not zero: exp(0) = 1 at each real position, divided by L",
            b="W s_{t-1} only reaches the score through v^T tanh(...), and v = 0 multiplies it away: every real "
              "score is 0 whatever the state",
            c="the mask still sets the padded scores to -inf after v^T tanh(...) gives 0, so the padding gets "
              "weight exp(-inf) = 0, and the L real positions share the weight",
            d="every real score is v^T tanh(...) = 0 and the padding's is -inf, so the softmax spreads the "
              "weight evenly over the L real positions: attention starts as a plain average of the real "
              "annotations")),
        Case("init_gradient", reasoning.key(
            "init_gradient", "a",
            a="d e_j / d v = tanh(W s + U h_j + b) is not zero, but W, U and b reach the score only through v^T "
              "tanh(...): their gradient is multiplied by v = 0, so v must move first",
            b="W, U and b reach the scores only through v^T tanh(...): the chain rule multiplies their gradient "
              "by v = 0",
            c="the loss depends on the weights, which depend on v: d e_j / d v = tanh(W s + U h_j + b) differs "
              "from position to position, so v gets a gradient (W, U and b do not: it is multiplied by v = 0)")),
        Case("padding", reasoning.key(
            "padding", "c",
            a="exp(0) = 1, not 0: a score of 0 gets the same weight as a real score of 0, and more than a real "
              "score below 0",
            b="soft attention changes too: the padded positions get weight exp(0) / sum_k exp(e_k) > 0 in the "
              "softmax, so their annotations enter the context",
            c="exp(0) = 1 gives each padded position a weight above 0, so the padding's annotations leak into "
              "the context and a sentence's context depends on how much it was padded")),
    ),
    # The notebook's ablation figure (attnbook.hard_attention.baseline_ablation, seed 0); every seed shows what
    # the keys say (tests/test_grading_rnn.py): a spread 11 to 21 times smaller with the baseline, both averages
    # within 4 standard errors of the gradient, and without the baseline at n = 64 more spread than with it at n = 4.
    "check_baseline_ablation": (
        Case("spread", reasoning.key(
            "spread", "a",
            a="the line with the baseline lies far below at every n: without it the large constant part of f "
              "multiplies onehot(j) - alpha in every draw, noise that the baseline subtracts",
            b="the figure shows the opposite: the line without the baseline lies above the other at every n; "
              "f-bar varies much less than f itself, whose constant part multiplies onehot(j) - alpha",
            c="the two lines do not cross: the one without the baseline stays above at every n, both falling "
              "like 1/sqrt(n)")),
        Case("centred", reasoning.key(
            "centred", "c",
            a="both are unbiased: without a baseline the estimate is the score-function identity itself, whose "
              "mean is the gradient; the averages agree because both estimate the same gradient",
            b="f-bar holds f_i, so it depends on draw i: (1/n) sum_i f-bar (onehot(j_i) - alpha) has mean g/n, "
              "not 0. Part 6's estimate stays unbiased because it works out as a leave-one-out baseline (the "
              "n/(n - 1) does that), which is independent of the draw it is subtracted from",
            c="draw i's baseline, the mean loss of the other n - 1 draws, is independent of draw i, and "
              "E[onehot(j_i) - alpha] = 0: each estimate moves, their mean does not (the n/(n - 1) turns f-bar, "
              "which holds f_i, into this baseline); the baseline lowers the spread, not a bias")),
        Case("draws", reasoning.key(
            "draws", "b",
            a="the spread falls like 1/sqrt(n), not 1/n: twice as many draws divide it by sqrt(2) only; the "
              "line without the baseline at n = 8 lies far above the other at n = 4",
            b="the line without the baseline at n = 64 still lies above the other at n = 4: as the spread falls "
              "like 1/sqrt(n), matching a spread ten times larger takes about a hundred times the draws",
            c="four times as many draws halve the spread; the line without the baseline at n = 16 still lies "
              "far above the other at n = 4")),
    ),
}
