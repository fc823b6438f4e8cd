"""The hidden cases of chapter 5 (``solutions/05-imagegpt``): instructor-only, never in the student's package.

``HIDDEN[part name]`` is the part's hidden cases, which
:func:`attnbook.grading.hidden_cases.find` reads at grading time; the case makers
come from the part modules in :mod:`attnbook.grading.imagegpt`, the parameters only from here.
"""

import torch

from attnbook.grading import reasoning
from attnbook.grading.engine import Case
from attnbook.grading.imagegpt import bpd, completion, cost, mask, palette, predict, probe, quantize, sequence

HIDDEN = {
    "check_bits_per_dim": (
        Case("images (B, H, W, V)", bpd._case(1, (3, 4, 4), 8), weight=2.0),
        Case("a batch of one", bpd._case(2, (1, 10), 8)),
        Case("512 colours", bpd._case(3, (2, 6), 512)),
        Case("float64 logits", bpd._case(4, (2, 5), 6, torch.float64)),
        Case("non-contiguous logits", bpd._case(5, (3, 7), 5, strided=True)),
        Case("the gradient reaches the logits", bpd._case(6, (2, 9), 8, grad=True), weight=2.0),
    ),
    "check_complete": (
        Case("temperature 0.5", completion._case(801, 1, 0.5), weight=2.0),
        Case("temperature 1.7", completion._case(802, 2, 1.7)),
        Case("no row kept: the whole image sampled", completion._case(803, 0, 1.0), weight=2.0),
        Case("every row kept: nothing to sample", completion._case(804, 3, 1.0, B=4)),
        Case("another image size (4 x 3)", completion._case(805, 2, 1.0, H=4, W=3), weight=2.0),
        Case("a seeded generator repeats the completion", completion._case(806, 1, 1.0, "repeat", B=200)),
        Case("the completion follows the generator", completion._case(807, 1, 1.0, "seeds", B=200)),
        Case("a batch of one", completion._case(808, 2, 1.0, "one", B=1)),
        Case("non-contiguous tokens", completion._case(809, 1, 0.8, "strided")),
        # complete(model, tokens, rows_kept) alone: the statement's signature gives temperature=1.0
        Case("the default temperature", completion._case(810, 1, 1.0, "defaults")),
        # the last row of two pixels: the last pixel of the image is the second one drawn and checked (the rule
        # mutant `range(rows_kept * W, H * W - 1)` left it undrawn)
        Case("the last pixel is drawn too", completion._case(811, 2, 1.0, W=2)),
        # Equivalent: `softmax(..., dim=1)` or `dim=+1` for `dim=-1` on logits (B, V); `seq[:, : i + 2]` for
        # `: i + 1`, as the model is causal and logits[:, i] reads only the pixels before i; `[:, -1]` for `[:, 0]`
        # of one draw; `multinomial(probs, 2)[:, 0]`, whose first draw without replacement follows probs (the
        # statement: any correct way of sampling passes). Grading this part takes seconds to minutes on a loaded
        # machine, near mutants.py's 10 s clock, so some of these are killed by the clock in one run and survive
        # the next (the first run killed all 70 mutants).
    ),
    "check_uniform_bits": (
        # K not a power of two: log2 K is not a whole number (rounding it up, the bits that write an id, fails)
        Case("three values, not a power of two", predict._case(3, 7, 5), weight=2.0),
        Case("ten values, a 28 x 28 image", predict._case(10, 28, 28), weight=2.0),
        Case("one value: nothing to tell apart, 0 bits", predict._case(1, 6, 11)),
        Case("one pixel", predict._case(256, 1, 1)),
        Case("one row", predict._case(5, 1, 9)),
        Case("iGPT's 64 x 64 images", predict._case(512, 64, 64)),
    ),
    # The reasoning parts: one case per question, the right letter and what every option means.
    "check_design_answers": (
        Case("channels", reasoning.key(
            "channels", "d",
            a="a pixel as three tokens makes the sequence three times longer: 3,072 tokens, not 1,024",
            b="the tokens grow 3 times, but attention compares every token with every token: 3,072 squared is 9 "
              "times 1,024 squared",
            c="the three bytes are predicted one at a time, 256 values each: no token has 16.7 million values, "
              "but there are three times as many tokens, and 9 times the attention",
            d="3,072 tokens instead of 1,024 give 9 times the entries (T squared), for a softmax of 256 scores "
              "instead of 512: the palette buys a short sequence with a wider softmax")),
        Case("typeb", reasoning.key(
            "typeb", "a",
            a="with the centre in the first layer the network reads the very pixel it predicts and learns to "
              "copy it: a training loss far below the honest model's; sampling has no value there yet, so "
              "the samples are not digits",
            b="one weight of nine is enough: it lets the pixel itself into the prediction, and copying the "
              "answer beats any real model of the image",
            c="a type-B first layer sees more, not less: the centre, which is the answer itself",
        )),
        Case("probe", reasoning.key(
            "probe", "c",
            a="chance is not the baseline: a linear probe on random features, or on the raw pixels, already "
              "separates the digits far above 10 percent",
            b="the training accuracy measures how well the probe fits its own images, not what the features "
              "hold for new ones",
            c="only the gap over the same network with random weights (and over the raw pixels) is what "
              "next-pixel training added; here the raw pixels are hard to beat")),
    ),
    "check_palette_reading": (
        Case("error", reasoning.key(
            "error", "b",
            a="the curves fall: more colours put a palette colour nearer to every pixel",
            b="each doubling gives k-means more colours to place, so every pixel's nearest colour is nearer: "
              "the three seeds' curves fall at every step",
            c="the curves keep falling after 8 colours, less steeply but at every doubling",
            d="the three seeds' curves lie almost on top of each other and all fall: the effect is larger "
              "than the seed's",
        )),
        Case("gain", reasoning.key(
            "gain", "a",
            a="from 2 to 4 colours the error falls by far the most: a few colours are spread over the "
              "largest gaps first, later ones split clusters that are already close",
            b="the last doubling buys the least: by 16 colours every pixel already has a colour near it",
            c="the steps shrink: each doubling buys less than the one before",
        )),
        Case("cost", reasoning.key(
            "cost", "b",
            a="the tokens per image do not depend on K: one token per pixel, whatever the palette",
            b="the right panel: the sequence stays at one token per pixel, while the softmax (and the "
              "embedding) grows with K, and each colour is seen in fewer training pixels",
            c="K is paid in the model: a score per colour at every pixel, and a row of the embedding per colour",
            d="the palette changes each pixel's colour, never the number of pixels")),
    ),
    "check_sequence_cost": (
        Case("iGPT's largest input, 64 x 64", cost._case(64), weight=2.0),
        Case("256 x 256 pixels", cost._case(256)),
        Case("one pixel", cost._case(1)),
        Case("several heads", cost._case(48, n_head=8), weight=2.0),
        Case("2-byte values (bf16)", cost._case(16, bytes_per_value=2), weight=2.0),
        Case("heads and bytes together", cost._case(8, n_head=3, bytes_per_value=8)),
    ),
    "check_pixelcnn_mask": (
        Case("11 x 11, type A", mask._case(11, "A"), weight=2.0),
        Case("5 x 5, type B", mask._case(5, "B")),
        Case("7 x 7, type A (PixelCNN's first layer)", mask._case(7, "A"), weight=2.0),
        Case("1 x 1", mask._case(1, "A")),
        Case("1 x 1", mask._case(1, "B")),
        Case("9 x 9, type B", mask._case(9, "B")),
        # Equivalent: `mask_type >= "B"` and `mask_type is "B"` for `== "B"`, as mask_type is "A" or "B" and
        # CPython keeps one object for each one-character string.
    ),
    "check_palette": (
        Case("extra leading axes (B, H, W, 3)", palette._case(1, (2, 4, 5), 8), weight=2.0),
        Case("ties go to the lower id", palette._case(2, (12,), 3, ties=True)),
        Case("a colour no pixel is nearest to", palette._case(3, (50,), 7, empty=True), weight=2.0),
        Case("a palette of one colour", palette._case(4, (9,), 1)),
        Case("one pixel", palette._case(5, (1,), 5)),
        Case("float64", palette._case(6, (30,), 16, torch.float64)),
        Case("a non-contiguous palette", palette._case(7, (25,), 9, strided=True)),
        Case("512 colours", palette._case(8, (300,), 512)),
        # Equivalent: `len(mine) != 0` for `> 0`, a length is never negative.
    ),
    "check_ridge_probe": (
        Case("a test set that has drifted", probe._case(1, 300, 6, 3, 1e-3, shift=2.5), weight=2.0),
        Case("classes of unequal size", probe._case(7, 300, 4, 3, 1e-3, prior=(0.8, 0.15, 0.05)), weight=2.0),
        Case("a penalty that matters", probe._case(8, 40, 30, 3, 30.0), weight=2.0),
        Case("a training set barely larger than the features", probe._case(2, 40, 30, 4, 1e-3), weight=2.0),
        Case("features far from zero", probe._case(3, 300, 5, 3, 1e-3, offset=50.0)),
        Case("features on very different scales, a strong penalty", probe._case(4, 200, 8, 3, 300.0, scale=100.0),
             weight=2.0),
        Case("ten classes", probe._case(5, 500, 12, 10, 1e-2)),
        Case("float64, non-contiguous features", probe._case(6, 250, 7, 5, 1e-3, dtype=torch.float64, strided=True)),
        # l2 left to its default, 1e-3, which the statement's signature gives: the mutants `l2=1.001` and
        # `l2=-0.999` move the accuracy by 10 and 7 rows of 200 here (few samples per feature)
        Case("the default penalty", probe._case(11, 40, 30, 3, None, prior=(0.7, 0.2, 0.1)), weight=2.0),
        # the statement's clamp(min=1e-8): without it (`clamp(min=-0.99999999)`) a constant feature gives 0 / 0
        Case("a feature that never changes", probe._case(9, 200, 5, 3, 1e-3, constant=True)),
        # a second column of ones (`torch.ones(len(z), 2)`) halves the bias's penalty; with a strong penalty and
        # unequal classes that moves 8 rows of 200
        Case("a strong penalty, classes of unequal size", probe._case(13, 40, 30, 3, 30.0, prior=(0.7, 0.2, 0.1))),
        # Equivalent: `int(train_labels.max()) << 1` or `+ 2` classes for `+ 1`. The extra one-hot columns are
        # zero, so are their columns of W (X^T Y is zero there) and their scores. The real classes' scores sum
        # to N / (N + l2) > 0 for every test row (standardised columns sum to zero, so X^T X + l2 I is block
        # diagonal with the bias apart, and X^T 1 = N e_bias), so one of them is positive and wins the argmax.
    ),
    "check_quantize_9bit": (
        Case("every value of every channel", quantize._case(1, 1, 16, 16, every_value=True), weight=2.0),
        Case("a batch of one", quantize._case(2, 1, 3, 7)),
        Case("one pixel", quantize._case(3, 4, 1, 1)),
        Case("channels-last (non-contiguous) images", quantize._case(4, 3, 5, 4, strided=True)),
        Case("a larger batch", quantize._case(5, 16, 8, 8)),
        # Equivalent: `|` or `^` for `+` in `(bins << 5) + 16` (the low five bits of bins << 5 are zero), and
        # `+` or `^` for `|` in packing the bins (bins 0..7 shifted by 6, 3 and 0 never share a bit), whatever
        # the precedence of the mixed expression.
    ),
    "check_raster_order": (
        Case("tall images (H > W)", sequence._case(1, 3, 5, 2), weight=2.0),
        Case("a batch of one", sequence._case(2, 1, 4, 6)),
        Case("one row", sequence._case(3, 2, 1, 7)),
        Case("one column", sequence._case(4, 2, 6, 1)),
        Case("non-contiguous tokens", sequence._case(5, 2, 4, 3, strided=True), weight=2.0),
        Case("int32 ids", sequence._case(6, 2, 3, 3, dtype=torch.int32)),
        Case("8 x 8 digits", sequence._case(7, 5, 8, 8)),
    ),
}
