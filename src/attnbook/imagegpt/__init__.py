"""ImageGPT (chapter 5): images as sequences of pixel tokens, modelled by chapter 4's GPT.

Small to large: colour palettes (:mod:`~attnbook.imagegpt.palette`), raster
order (:mod:`~attnbook.imagegpt.sequence`), the model and bits per dimension
(:mod:`~attnbook.imagegpt.model`), sampling and completion
(:mod:`~attnbook.imagegpt.sampling`), PixelCNN's masked convolutions
(:mod:`~attnbook.imagegpt.pixelcnn`), masked-pixel (BERT-style) training
(:mod:`~attnbook.imagegpt.masked`), baselines that ignore the other pixels
(:mod:`~attnbook.imagegpt.baselines`), linear probes
(:mod:`~attnbook.imagegpt.probe`) and the chapter's training recipe with early
stopping (:mod:`~attnbook.imagegpt.training`).

>>> import torch
>>> from attnbook.imagegpt import quantize_9bit, to_sequence
>>> img = torch.zeros(1, 3, 2, 2, dtype=torch.uint8)
>>> to_sequence(quantize_9bit(img)).shape        # 2 x 2 pixels -> 4 tokens
torch.Size([1, 4])
"""



from .baselines import (
    completion_scores,
    fill_rows,
    histogram_bits,
    ink_iou,
    ink_mask,
    position_histogram,
    position_mode,
    shape_agreement,
)
from .masked import BidirectionalSelfAttention, MaskedPixelModel, mask_pixels, masked_pixel_bits, masked_pixel_loss
from .model import IMAGEGPT_PRESETS, ImageGPT, ImageGPTConfig, bits_per_dim, uniform_bits
from .palette import (
    dequantize_9bit,
    grey_levels,
    kmeans_inertia,
    kmeans_palette,
    kmeans_step,
    nearest_colour,
    palette_dequantize,
    palette_quantize,
    palette_size_errors,
    psnr,
    quantize_9bit,
)
from .pixelcnn import MaskedConv2d, PixelCNN, pixelcnn_mask
from .probe import layer_features, layer_probes, linear_probe, ridge_probe
from .sampling import (
    complete,
    evaluate_bits_per_dim,
    next_pixel_loss,
    pixel_logits,
    receptive_field,
    sample_images,
)
from .sequence import from_sequence, sequence_cost, to_sequence
from .training import fit_early_stopped, random_batches

__all__ = [
    "quantize_9bit",
    "dequantize_9bit",
    "grey_levels",
    "kmeans_step",
    "kmeans_palette",
    "kmeans_inertia",
    "nearest_colour",
    "palette_quantize",
    "palette_dequantize",
    "psnr",
    "palette_size_errors",
    "to_sequence",
    "from_sequence",
    "sequence_cost",
    "ImageGPTConfig",
    "IMAGEGPT_PRESETS",
    "ImageGPT",
    "bits_per_dim",
    "uniform_bits",
    "pixel_logits",
    "receptive_field",
    "next_pixel_loss",
    "evaluate_bits_per_dim",
    "complete",
    "sample_images",
    "pixelcnn_mask",
    "MaskedConv2d",
    "PixelCNN",
    "layer_features",
    "layer_probes",
    "linear_probe",
    "ridge_probe",
    "BidirectionalSelfAttention",
    "MaskedPixelModel",
    "mask_pixels",
    "masked_pixel_loss",
    "masked_pixel_bits",
    "position_histogram",
    "histogram_bits",
    "position_mode",
    "fill_rows",
    "ink_mask",
    "shape_agreement",
    "ink_iou",
    "completion_scores",
    "random_batches",
    "fit_early_stopped",
]
