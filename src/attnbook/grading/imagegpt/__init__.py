"""Checks for chapter 5's exercises (``solutions/05-imagegpt``): palettes, raster order, bits/dim, completion, probes.

One module per graded part, in the notebook's order: the 9-bit palette
(:mod:`.quantize`, ``check_quantize_9bit``), nearest colours and a k-means
step (:mod:`.palette`, ``check_palette``), raster order (:mod:`.sequence`,
``check_raster_order``), bits per dimension (:mod:`.bpd`,
``check_bits_per_dim``), image completion by sampling (:mod:`.completion`,
``check_complete``) and PixelCNN's kernel mask (:mod:`.mask`,
``check_pixelcnn_mask``), a linear probe in closed form (:mod:`.probe`,
``check_ridge_probe``), what a sequence of pixels costs attention
(:mod:`.cost`, ``check_sequence_cost``), then three reasoning parts: the
bits of a model that knows nothing, predicted before it is measured
(:mod:`.predict`, ``check_uniform_bits``), three design decisions reasoned
(:mod:`.design`, ``check_design_answers``) and the reading of a palette-size
ablation (:mod:`.ablation`, ``check_palette_reading``), the last two answered
by a letter per question and keyed in the instructor's hidden cases. Each of
the first nine compares the student's function with a private
copy of :mod:`attnbook.imagegpt` and names the mistakes students make most
(channels packed in the wrong order, rounding instead of flooring,
column-major order, nats instead of bits, a mean per image, completions that
overwrite the given rows, a type-B mask where type A is needed, ...).

>>> def to_sequence(tokens):            # reads the image column by column
...     return tokens.transpose(1, 2).reshape(tokens.shape[0], -1)
>>> def from_sequence(seq, H, W):
...     return seq.reshape(seq.shape[0], H, W)
>>> check_raster_order(to_sequence, from_sequence)
Traceback (most recent call last):
...
attnbook.grading.errors.CheckFailed: the pixels are read column by column: raster order reads row by row, ...
"""

from .ablation import check_palette_reading
from .bpd import check_bits_per_dim
from .completion import check_complete, completion_test_model
from .cost import check_sequence_cost
from .design import check_design_answers
from .mask import check_pixelcnn_mask
from .palette import check_palette
from .predict import check_uniform_bits
from .probe import check_ridge_probe
from .quantize import check_quantize_9bit
from .sequence import check_raster_order

__all__ = [
    "check_quantize_9bit",
    "check_palette",
    "check_raster_order",
    "check_bits_per_dim",
    "check_complete",
    "check_pixelcnn_mask",
    "check_ridge_probe",
    "check_sequence_cost",
    "check_uniform_bits",
    "check_design_answers",
    "check_palette_reading",
    "completion_test_model",
]
