"""The hidden cases of chapter 2 (``solutions/02-transformer``): instructor-only, never in the student's package.

``HIDDEN[part name]`` is the part's hidden cases, which
:func:`attnbook.grading.hidden_cases.find` reads at grading time; the case makers
come from the part modules in :mod:`attnbook.grading.transformer`, the parameters only from here.
"""

import torch

from attnbook.grading import reasoning
from attnbook.grading.engine import Case
from attnbook.grading.transformer import (
    beam,
    decoder,
    embeddings,
    encoder,
    greedy,
    loss,
    masks,
    mha,
    noam,
    params,
    prenorm,
    sdpa,
    sdpa_masks,
)

HIDDEN = {
    # Equivalent mutant (attnbook-course mutants): tgt_mask * causal for tgt_mask & causal: both are boolean,
    # and the product of two boolean tensors is their logical and, a boolean tensor.
    "check_decoder_block": (
        Case("source padding", decoder.block_case(602, 3, 5, 6, 12, 3, 24, memory_mask=True), weight=2.0),
        Case("target and source padding", decoder.block_case(603, 2, 6, 4, 8, 2, 16, True, True), weight=2.0),
        Case("batch of one, odd lengths", decoder.block_case(604, 1, 7, 3, 8, 4, 8)),
        Case("one target position", decoder.block_case(605, 2, 1, 5, 8, 2, 16, memory_mask=True)),
        Case("float64 with masks", decoder.block_case(606, 2, 5, 5, 16, 2, 32, True, True, torch.float64)),
        Case("batch of one, one target position, masks", decoder.block_case(607, 1, 1, 4, 8, 2, 16, True, True)),
        Case("non-contiguous x and memory, masks", decoder.block_case(608, 3, 4, 5, 8, 2, 16, True, True, swap=True)),
    ),
    "check_embeddings": (
        Case("embeddings, ids below the last word", embeddings._embed_case(411, 3, 6, 12, 8, top=7), weight=2.0),
        Case("embeddings, batch of one, one token", embeddings._embed_case(412, 1, 1, 5, 4)),
        Case("embeddings, float64", embeddings._embed_case(413, 2, 5, 9, 6, torch.float64)),
        Case("embeddings, non-contiguous ids and W", embeddings._embed_case(414, 3, 4, 7, 5, strided=True)),
        Case("embeddings are a product with W, batch of one", embeddings._probe_case(415, 1, 3, 6, 8)),
        Case("tied logits, batch of one, one position", embeddings._tied_case(416, 1, 1, 7, 4)),
        Case("tied logits, float64", embeddings._tied_case(417, 2, 3, 8, 8, torch.float64), weight=2.0),
        Case("tied logits, non-contiguous h and W", embeddings._tied_case(418, 3, 5, 9, 6, strided=True)),
    ),
    "check_encoder_block": (
        Case("padding mask", encoder.block_case(502, 3, 6, None, 12, 3, 24, tgt_mask=True), weight=2.0),
        Case("batch of one, odd length", encoder.block_case(503, 1, 7, None, 8, 4, 8)),
        Case("one position", encoder.block_case(504, 2, 1, None, 8, 2, 16)),
        Case("float64 with a padding mask", encoder.block_case(505, 2, 5, None, 16, 2, 32, True, dtype=torch.float64)),
        Case("batch of one, one position, padding mask", encoder.block_case(506, 1, 1, None, 8, 2, 16, tgt_mask=True)),
        Case("non-contiguous x, padding mask", encoder.block_case(507, 3, 4, None, 8, 2, 16, tgt_mask=True, swap=True)),
    ),
    # Equivalent mutants: argmax(dim=1) or dim=+1 for dim=-1: logits[:, -1] is (B, V), 2-D.
    "check_greedy_decode": (
        Case("padded sources", greedy._greedy_case(20, 1.5, 4, 7, 10, lengths=(7, 4, 2, 6)), weight=2.0),
        Case("batch of one", greedy._greedy_case(13, 1.5, 1, 5, 9, lengths=(5,))),
        Case("some never finish", greedy._greedy_case(5, 2.0, 3, 5, 6, lengths=(5, 5, 3))),
        Case("one step", greedy._greedy_case(5, 1.0, 2, 4, 1, lengths=(4, 2))),
        Case("padded sources, odd lengths",
             greedy._greedy_case(31, 2.5, 5, 9, 12, lengths=(9, 3, 7, 1, 5)), weight=2.0),
        Case("every sequence ends at its own step", greedy._greedy_case(14, 1.5, 4, 6, 10, lengths=(6, 5, 4, 3))),
        Case("another padding id", greedy._greedy_case(20, 1.5, 3, 7, 10, lengths=(7, 4, 2), pad_id=7)),
        Case("batch of one, padded source", greedy._greedy_case(31, 2.5, 1, 6, 8, lengths=(3,))),
        Case("non-contiguous source", greedy._greedy_case(20, 1.5, 3, 6, 8, lengths=(6, 3, 5), strided=True)),
        # killed the mutant done |= next_id <= eos_id (attnbook-course mutants): an EOS above the other ids
        Case("another EOS id", greedy._greedy_case(14, 1.5, 4, 6, 10, lengths=(6, 5, 4, 3), eos_id=9)),
        # killed the rule mutant that starts from BOS 1 whatever bos_id is (autograder/mutation/rules/)
        Case("another BOS id", greedy._greedy_case(20, 1.5, 3, 7, 10, lengths=(7, 4, 2), bos_id=5)),
    ),
    "check_translation_loss": (
        Case("padded targets, odd lengths", loss._case(22, 4, 7, 9, (7, 1, 4, 6)), weight=2.0),
        Case("batch of one, no padding", loss._case(23, 1, 6, 6, (4,))),
        Case("one prediction per sequence (BOS, EOS)", loss._case(24, 3, 4, 2, (0, 0, 0))),
        Case("another padding id", loss._case(25, 3, 6, 8, (6, 2, 4), pad_id=7), weight=2.0),
        Case("batch of one, padded target", loss._case(26, 1, 5, 7, (2,))),
        Case("non-contiguous src and tgt", loss._case(27, 3, 6, 7, (5, 3, 1), strided=True)),
    ),
    "check_masks": (
        Case("causal mask, one position", masks._causal_case(1)),
        Case("causal mask, odd length", masks._causal_case(7)),
        Case("padding mask, batch of one without padding", masks._padding_case(302, 1, 6, 0, lengths=(6,))),
        Case("padding mask, another padding id", masks._padding_case(303, 3, 7, 4, lengths=(7, 2, 5)), weight=2.0),
        Case("padding mask, odd length", masks._padding_case(304, 4, 9, 0)),
        Case("padding mask, one position", masks._padding_case(305, 3, 1, 0, lengths=(1, 1, 1))),
        Case("padding mask, non-contiguous ids", masks._padding_case(306, 3, 6, 0, lengths=(6, 2, 4), strided=True)),
        Case("padding mask, batch of one, padding id 5", masks._padding_case(307, 1, 6, 5, lengths=(3,))),
        # a padding id above every token id, with 0 among the real tokens: `ids != 0` and `ids > 0` fail
        Case("padding mask, another padding id", masks._padding_case(312, 5, 8, 10, lengths=(8, 3, 1, 8, 5))),
    ),
    # Equivalent mutant (attnbook-course mutants): mask.dim() >= 3 for mask.dim() == 3: the statement's masks
    # broadcast to (B, T, S), so none has more than three axes.
    "check_multi_head_attention": (
        Case("causal mask (T, T)", mha._mha_case(403, 2, 6, None, 12, 3, "causal")),
        Case("padding mask, batch size differs from heads", mha._mha_case(404, 3, 4, 7, 8, 2, "padding"), weight=2.0),
        Case("arbitrary mask (B, T, S)", mha._mha_case(405, 2, 5, 4, 16, 4, "arbitrary")),
        Case("batch of one, odd lengths", mha._mha_case(406, 1, 7, 3, 12, 2)),
        Case("one head", mha._mha_case(407, 2, 3, None, 6, 1)),
        Case("one query", mha._mha_case(408, 3, 1, 5, 8, 4)),
        Case("float64", mha._mha_case(409, 2, 5, 5, 16, 4, "padding", torch.float64), weight=2.0),
        Case("non-contiguous query, key and value", mha._mha_case(410, 3, 4, 5, 8, 2, "padding", swap=True)),
        Case("non-contiguous query, causal self-attention", mha._mha_case(411, 2, 5, None, 12, 3, "causal", swap=True)),
        Case("batch of one, one query", mha._mha_case(412, 1, 1, 4, 8, 2, "padding")),
    ),
    "check_sinusoidal_positions": (
        Case("one position, one pair", lambda: (1, 2)),
        Case("odd length", lambda: (9, 10)),
        Case("long table", lambda: (60, 32), weight=2.0),
        Case("wide table", lambda: (3, 128)),
    ),
    "check_prenorm_encoder_block": (
        Case("padding mask, dropout 0.1 (eval mode)", prenorm._case(803, 3, 6, 12, 3, 24, 0.1, mask=True), weight=2.0),
        Case("batch of one, odd length", prenorm._case(804, 1, 7, 8, 4, 8)),
        Case("one position", prenorm._case(805, 2, 1, 8, 2, 16)),
        Case("float64 with a padding mask", prenorm._case(806, 2, 5, 16, 2, 32, mask=True, dtype=torch.float64)),
        Case("batch of one, one position, padding mask", prenorm._case(807, 1, 1, 8, 2, 16, 0.2, mask=True)),
        Case("non-contiguous x, padding mask, dropout 0.3",
             prenorm._case(808, 3, 4, 8, 2, 16, 0.3, mask=True, swap=True)),
        # killed the mutants dropout=1.0 and dropout=-1.0 for the default 0.0 (attnbook-course mutants)
        Case("built without a dropout rate (training mode)", prenorm._case(809, 2, 5, 8, 2, 16, None, mask=True)),
    ),
    "check_scaled_dot_product_attention": (
        Case("batch of one, odd lengths", sdpa._plain(101, (1,), 7, 5, 16, 3)),
        Case("one query", sdpa._plain(102, (3,), 1, 6, 4, 2)),
        Case("float64 inputs", sdpa._plain(103, (2,), 5, 4, 6, 3, torch.float64)),
        Case("extra leading axis (heads)", sdpa._plain(104, (2, 3), 4, 4, 8, 8)),
        Case("large d_k", sdpa._plain(105, (2,), 4, 6, 256, 4), weight=2.0),
        Case("non-contiguous q, k, v (heads split by a transpose)", sdpa._plain(106, (2, 3), 5, 6, 8, 4, swap=(1, 2))),
        Case("batch of one, one query, float64", sdpa._plain(107, (1,), 1, 3, 8, 2, torch.float64)),
    ),
    "check_attention_masks": (
        Case("causal mask, heads", sdpa_masks._causal(201, (2, 2), 5, 8, 4)),
        Case("causal mask, float64", sdpa_masks._causal(202, (1,), 6, 16, 2, torch.float64)),
        Case("padding mask (B, 1, S)", sdpa_masks._padded(203, 4, 3, 7, 8, 5), weight=2.0),
        Case("arbitrary mask (B, T, S)", sdpa_masks._random_mask(204, 2, 5, 6, 32, 3), weight=2.0),
        Case("padding mask, non-contiguous q, k, v (heads split by a transpose)",
             sdpa_masks._padded(205, 3, 4, 6, 8, 4, heads=2)),
        Case("padding mask, batch of one, one query", sdpa_masks._padded(206, 1, 1, 5, 8, 3)),
    ),
    # Part 12: other sizes only; one head (weight 2) kills the answer that drops W^O when there is one head.
    "check_encoder_block_params": (
        Case("one head", params._case(16, 1, 64), weight=2.0),
        Case("as many heads as d_model (d_k = 1)", params._case(6, 6, 10)),
        Case("d_ff equal to d_model", params._case(20, 4, 20)),
        Case("the paper's big model", params._case(1024, 16, 4096)),
        Case("odd sizes", params._case(30, 5, 7)),
        Case("one head, sizes too large to build", params._case(3 * 2**18, 1, 5 * 2**19)),
    ),
    # Parts 13 and 14: one case per question, the key and a sentence for every option (the feedback).
    "check_attention_reason": (
        Case("positions", reasoning.key(
            "positions", "b",
            a="no: the outputs do change, since attention without positions treats the input as a set; a set "
              "reordered is the same set, so each token's output stays the same vector and only its place moves",
            b="right: without positions attention is permutation-equivariant; every token's output depends on "
              "the set of tokens, not their order, so swapping two inputs swaps their two outputs and leaves the "
              "others as they were. Word order is lost, which is why positions are added to the embeddings",
            c="no: every token does attend to every other, but through a weighted sum over the set of keys; "
              "reordering the keys reorders the terms of the sum, which changes nothing, so the other outputs "
              "stay the same and the two swapped ones swap")),
        Case("causal", reasoning.key(
            "causal", "d",
            a="no: no row is empty without the mask, since every position may then attend to every other; the "
              "loss stays finite, and it falls too easily",
            b="no: teacher forcing gives the decoder the true previous tokens, and the true next tokens too, in "
              "the same input row; only the causal mask keeps position t from reading the token it must predict",
            c="no: the mask does not change how much is computed (all T × T scores are computed, then masked); "
              "what it changes is what each position may read",
            d="right: the decoder reads the true target shifted by one, so input t + 1 is the very token that "
              "position t must predict; without the causal mask position t attends to it and copies it, the "
              "training loss falls toward zero, and at generation time, where the future is not there yet, the "
              "model has learnt nothing it can use")),
        Case("padding", reasoning.key(
            "padding", "a",
            a="right: a query's output belongs to its own position only; the loss skips the padding targets and "
              "no real token reads a padding position, since the mask hides padding as a key. Keys need the "
              "mask, because a real token's output is a weighted sum over all the keys",
            b="no: a padding position's embedding is not a zero vector (it is the learned row of the padding "
              "id, plus its position), and its output is not zero either; it is simply never used",
            c="no: a padding query's weights are not uniform in general, and nothing cancels; its output is "
              "computed and then ignored")),
    ),
    "check_scaling_ablation": (
        Case("weights", reasoning.key(
            "weights", "b",
            a="no: look at the left panel: the curve without the scale leaves the scaled one as soon as d_k "
              "grows past a few dimensions",
            b="right: q · k is a sum of d_k products of unit variance, so its variance is d_k and its spread "
              "grows like sqrt(d_k); the largest score then stands far above the others, and the softmax puts "
              "nearly all the weight (over 0.9 from d_k = 256 on) on one key",
            c="no: the weights would tend to uniform (1/16) only if the scores came closer together; without the "
              "scale they spread further apart as d_k grows")),
        Case("gradient", reasoning.key(
            "gradient", "c",
            a="no: the gradient does not grow; larger scores saturate the softmax, and a saturated softmax "
              "passes on a smaller gradient, not a larger one",
            b="no: the two curves of the right panel part from d_k = 32 or so: without the scale the factor "
              "falls toward zero, with it it stays near 0.3",
            c="right: the softmax's Jacobian diag(p) - p pᵀ vanishes as p tends to one-hot: a saturated softmax "
              "barely changes when its scores move, so almost no gradient reaches q and k and the attention "
              "stops learning (the median factor falls from about 0.3 to about 0.1 at d_k = 64, to near 0 past "
              "d_k = 512)")),
        Case("flat", reasoning.key(
            "flat", "c",
            a="no: the softmax makes each row sum to one with or without the scale, and the unscaled curves do "
              "not stay flat; what keeps the scaled ones flat is the variance of the scores",
            b="no: the scaled curves stay flat for any unit-variance q and k, trained or random: the scale "
              "matters wherever the scores' variance grows with d_k",
            c="right: each score q · k has variance d_k, so q · k / sqrt(d_k) has variance 1 for every d_k; the "
              "softmax sees scores of the same spread whatever the width, so its largest weight and its "
              "gradient do not change with d_k")),
    ),
    "check_beam_step": (
        Case("eight beams, forty tokens", beam._case(101, 8, 40, 8), weight=2.0),
        Case("one beam kept", beam._case(102, 5, 9, 1)),
        Case("many ties", beam._case(103, 6, 5, 12, ties=True), weight=2.0),
        Case("float64", beam._case(104, 3, 11, 6, torch.float64)),
        # log_probs.view(-1) fails on a transposed view; reshape and flatten copy when they must
        Case("log-probabilities that are a transposed view", beam._case(105, 4, 6, 5, strided=True)),
        Case("every extension kept", beam._case(106, 2, 2, 4)),
    ),
    "check_noam_lr": (
        Case("the paper's big model, long training",
             noam._ints(1024, 8000, (1, 7, 2500, 7999, 8000, 8001, 30_000, 10**6, 10**7)), weight=2.0),
        Case("no warm-up (warmup 1)", noam._ints(96, 1, (1, 2, 3, 17, 1000))),
        Case("a narrow model, a short warm-up", noam._ints(6, 3, range(1, 12))),
        Case("step 0, before the first update", noam._ints(1024, 8000, (0,))),
        Case("a tensor of one step (0-dim)", noam._tensor(301, (), 9000, 320, 1200)),
        # .view(-1) fails on a transposed view; reshape and flatten copy when they must
        Case("a transposed view of steps", noam._tensor(302, (5, 7), 700, 48, 250, strided=True), weight=2.0),
        Case("int32 steps, three axes", noam._tensor(303, (2, 3, 4), 5000, 768, 1500, dtype=torch.int32)),
        Case("a long range of steps", noam._tensor(304, (), 30_000, 200, 3000, arange=True)),
    ),
}
