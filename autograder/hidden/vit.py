"""The hidden cases of chapter 6 (``solutions/06-vit``): instructor-only, never in the student's package.

``HIDDEN[part name]`` is the part's hidden cases, which
:func:`attnbook.grading.hidden_cases.find` reads at grading time; the case makers
come from the part modules in :mod:`attnbook.grading.vit`, the parameters only from here.
"""

import torch

from attnbook.grading import reasoning
from attnbook.grading.engine import Case
from attnbook.grading.vit import block, embedding, masking, matching, patches, rollout, tokens

HIDDEN = {
    "check_pre_norm_block": (
        Case("a class token and 16 patches", block.block_case(651, 3, 17, None, 12, 3, 24), weight=2.0),
        Case("batch of one, odd length", block.block_case(652, 1, 7, None, 8, 4, 8)),
        Case("one token", block.block_case(653, 2, 1, None, 8, 2, 16)),
        Case("float64", block.block_case(654, 2, 5, None, 16, 2, 32, dtype=torch.float64)),
        Case("non-contiguous x", block.block_case(655, 3, 4, None, 8, 2, 16, swap=True)),
    ),
    "check_vit_embedding": (
        Case("batch of one", embedding._case(631, 1, 1, 8, 4, 8)),
        Case("three channels", embedding._case(632, 3, 3, 12, 4, 24), weight=2.0),
        Case("28 x 28, patch 7", embedding._case(633, 2, 1, 28, 7, 16)),
        Case("one patch", embedding._case(634, 2, 2, 4, 4, 8)),
        Case("float64", embedding._case(635, 2, 3, 6, 3, 12, torch.float64)),
        Case("non-contiguous (channels-last) images", embedding._case(636, 2, 3, 8, 2, 8, swap=True)),
        # Equivalent: `expand(B, 1, -1)` or `expand(B, +1, -1)` for `expand(B, -1, -1)` (the class token's
        # axis 1 has size 1), and another std in the initialisation of pos_embed, which the grader overwrites.
    ),
    "check_random_masking": (
        Case("batch of one", masking._case(691, 1, 16, 4, 0.75)),
        Case("half removed, N_keep rounds down", masking._case(692, 3, 7, 5, 0.5), weight=2.0),
        Case("nothing removed", masking._case(693, 2, 5, 3, 0.0)),
        Case("one token", masking._case(694, 2, 1, 3, 0.0)),
        Case("float64", masking._case(695, 2, 9, 3, 0.6, dtype=torch.float64)),
        Case("non-contiguous x", masking._case(696, 3, 12, 4, 0.75, swap=True)),
        Case("statistics, 25 % removed",
             masking._case(697, masking.STATS_ROWS, masking.STATS_N, 1, 0.25, "statistics"), weight=2.0),
        Case("statistics, 50 % removed",
             masking._case(698, masking.STATS_ROWS, masking.STATS_N, 2, 0.5, "statistics"), weight=2.0),
        Case("the draw follows the generator", masking._case(699, 4, 16, 2, 0.75, "generator"), weight=2.0),
    ),
    "check_matching": (
        Case("matching cost, other weights", matching._cost_case(711, 5, 3, 4, weights=(2.0, 1.5, 0.5)), weight=2.0),
        Case("matching cost, one target", matching._cost_case(712, 3, 1, 2)),
        Case("matching cost, float64", matching._cost_case(713, 4, 4, 5, dtype=torch.float64)),
        Case("matching cost, one prediction and one target", matching._cost_case(714, 1, 1, 3)),
        Case("matching cost, non-contiguous inputs", matching._cost_case(715, 6, 3, 4, swap=True)),
        Case("assignment", matching._assignment_case(721, 6, 6), weight=2.0),
        Case("assignment with ties", matching._assignment_case(722, 7, 7, integer=True), weight=2.0),
        Case("assignment, more columns than rows", matching._assignment_case(723, 3, 7)),
        Case("assignment, more rows than columns", matching._assignment_case(724, 8, 3), weight=2.0),
        Case("assignment, one row", matching._assignment_case(725, 1, 5)),
        Case("assignment, 1 x 1", matching._assignment_case(726, 1, 1)),
        Case("assignment, float64 and non-contiguous",
             matching._assignment_case(727, 8, 8, dtype=torch.float64, swap=True)),
        # An odd number of columns: the mutants of the potentials' update `for j in range(m + 1)` that leave out
        # the last column or two (`range(m)`, `m * 1`, `m // 1`, `m ** 1`, `m + 0`, `m - 1`, and `m | 1`, `m ^ 1`
        # when m is odd) return a one-to-one assignment that is not the cheapest here.
        Case("assignment, five by five", matching._assignment_case(734, 5, 5), weight=2.0),
        Case("assignment, more columns than rows", matching._assignment_case(732, 4, 5)),
        # Equivalent (the full run of the 419 mutants, autograder/mutation/06-vit.csv):
        # - `softmax(1)`, `softmax(+1)` for `softmax(-1)`: the logits are (Q, K);
        # - `len(c[-1])` for `len(c[0])`: every row has m entries;
        # - longer lists `[..] * (n << 1)`, `(m << 1)`, `(n + 2)`, `(m + 2)` for u, v, row_of, dist, prev, done:
        #   the loops read indices 0..n and 0..m only;
        # - `[1.0]`, `[-1.0]` for the potentials' `[0.0]` (u or v): every reduced cost c - u - v moves by the
        #   same constant, so every comparison, delta and path is the same;
        # - `[1]`, `[-1]` for prev's `[0]`, `j1 = 1` or `-1` for `j1 = 0`: each is written before it is read
        #   (every finite d beats dist = inf, and a free column always has a finite dist);
        # - `range(0, n + 1)` for the rows: row 0 finds row_of[0] = 0 and does nothing; `range(0, m + 1)` for the
        #   columns searched: column 0 is done from the start;
        # - `d <= dist[j]`, `dist[j] <= delta`: ties take another shortest path, another least-cost matching;
        # - `shape[0] >= shape[1]`: a square cost is transposed, matched, and transposed back.
    ),
    "check_patchify": (
        Case("batch of one", patches.images(611, 1, 1, 8, 8, 4)),
        Case("three channels", patches.images(612, 3, 3, 12, 12, 4), weight=2.0),
        Case("non-square images", patches.images(613, 2, 2, 8, 12, 4), weight=2.0),
        Case("patch size 1", patches.images(614, 2, 3, 3, 3, 1)),
        Case("one patch covers the image", patches.images(615, 2, 3, 5, 5, 5)),
        Case("float64", patches.images(616, 2, 3, 6, 6, 3, torch.float64)),
        Case("non-contiguous (channels-last) images", patches.images(617, 2, 3, 8, 8, 2, swap=True)),
        Case("28 x 28 digits, patch 7", patches.images(618, 2, 1, 28, 28, 7)),
    ),
    "check_attention_rollout": (
        Case("four layers, four heads", rollout._maps(671, 4, 3, 4, 6), weight=2.0),
        Case("add_residual=False", rollout._maps(672, 3, 2, 2, 5, residual=False), weight=2.0),
        Case("batch of one", rollout._maps(673, 2, 1, 3, 4)),
        Case("one layer", rollout._maps(674, 1, 2, 2, 5)),
        Case("one token", rollout._maps(675, 2, 2, 2, 1)),
        Case("float64", rollout._maps(676, 3, 2, 2, 5, dtype=torch.float64)),
        Case("non-contiguous maps", rollout._maps(677, 3, 2, 3, 5, swap=True)),
        Case("a class token and 16 patches, six layers", rollout._maps(678, 6, 2, 4, 17)),
        # attention_rollout(maps) alone: the statement's signature gives add_residual=True as the default
        # (the mutant `add_residual=False` changed it)
        Case("the default adds the identity", rollout._maps(679, 3, 2, 2, 6, residual=None), weight=2.0),
        # Equivalent, as every map is (B, nh, T, T) of one dtype and device: `shape[-2]` or `shape[~1]` for
        # `shape[-1]` (T x T), and `maps[-1]` for `maps[0]` to read T, the dtype or the device.
    ),
    "check_vit_tokens": (
        Case("ViT-B at 384 x 384, patch 16", tokens._case(384, 384, 16), weight=2.0),
        Case("ViT-H, patch 14", tokens._case(224, 224, 14)),
        Case("non-square images, wider than high", tokens._case(64, 96, 8), weight=2.0),
        Case("non-square images, higher than wide", tokens._case(40, 24, 8)),
        Case("one patch covers the image", tokens._case(12, 12, 12)),
        Case("patch size 1", tokens._case(5, 7, 1)),
        # H x W is a multiple of P^2 but neither side is one of P: a test of H * W % P**2 alone lets them through
        Case("a height that is not a multiple of P, H x W a multiple of P^2", tokens._case(6, 24, 4), weight=2.0),
        Case("a width that is not a multiple of P, H x W a multiple of P^2", tokens._case(16, 6, 4)),
        Case("neither side a multiple of P, H x W = P^2", tokens._case(27, 12, 18)),
    ),
    "check_vit_concepts": (
        Case("class_token", reasoning.key(
            "class_token", "c",
            a="no: the class token's embedding reads no pixel; before the first block it is the same learned "
              "vector (plus position 0) for every image",
            b="no: nothing forces it to be the mean of the patch tokens; it is a token of its own that attends "
              "to them with learned weights (mean pooling of the patches is another design, which some ViTs "
              "use)",
            c="right: it starts as one learned vector for every image and gathers the patches' information by "
              "attending to them in every block; the head reads it after the last one")),
        Case("patch_size", reasoning.key(
            "patch_size", "a",
            a="right: N = (224/8)^2 = 784 instead of 196, 4 times the tokens, and one map holds T^2 scores: "
              "785^2 / 197^2, about 16 times",
            b="no: halving P doubles the patches along each side, so N grows 4 times, not 2",
            c="no: 4 times is the growth of N, the tokens; one attention map scores every pair of tokens, T^2",
            d="no: the weights do not change with P except the patch embedding's input, but the sequence does, "
              "and attention's cost follows the sequence")),
        Case("mae_cost", reasoning.key(
            "mae_cost", "b",
            a="no: the encoder does not see the removed patches at all; only the light decoder gets mask tokens "
              "at every position",
            b="right: a quarter of the tokens: the per-token MLP and projections cost about a quarter, and "
              "attention, T^2 scores, about a sixteenth",
            c="no: the per-token parts (the MLP, the projections) shrink 4 times, but attention scores every "
              "pair of tokens and shrinks about 16 times")),
    ),
    "check_position_ablation": (
        Case("zeroed", reasoning.key(
            "zeroed", "a",
            a="right: without positions self-attention is equivariant to a permutation of the tokens and the "
              "class token, which reads them all, is invariant: it sees which patches the image holds, not "
              "where",
            b="no: images with different patches still get different class tokens; only the same patches in "
              "another arrangement are confused",
            c="no: the same random weights give the solid line, and the class token does depend on the patches' "
              "contents; what it cannot see without positions is their order")),
        Case("rounding", reasoning.key(
            "rounding", "c",
            a="no: the position embeddings are zeros in that model; nothing tells the tokens apart but their "
              "contents",
            b="no: the shuffle moves whole patches and keeps every pixel inside each patch",
            c="right: attention adds the same terms in another order, and float32 addition is not associative; "
              "1e-7 is float32's relative precision")),
        Case("positions", reasoning.key(
            "positions", "b",
            a="no: the solid line shows the opposite: with positions the class token changes when the patches "
              "move",
            b="right: a patch plus its position is another token at another place, so attention, and the class "
              "token, can depend on the layout, which a classifier needs",
            c="no: the change is about 10^5 times the rounding level, with random weights whose attention is "
              "almost uniform; training sharpens attention and makes it larger")),
    ),
}
