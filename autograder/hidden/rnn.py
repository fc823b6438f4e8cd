"""The hidden cases of chapter 1 (``solutions/01-rnn-attention``): instructor-only, never in the student's package.

``HIDDEN[part name]`` is the part's hidden cases, which
:func:`attnbook.grading.hidden_cases.find` reads at grading time; the case makers
come from the part modules in :mod:`attnbook.grading.rnn`, the parameters only from here.
"""

import torch

from attnbook.grading.engine import Case
from attnbook.grading.rnn import (
    additive_scores,
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
    # Equivalent mutants (autograder/mutants.py): torch.cat([...], dim=1) or dim=+1 for dim=-1, in both
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
}
