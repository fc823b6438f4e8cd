"""Raster order: an image of tokens (B, H, W) read row by row as one sequence (B, H * W).

Position ``t = r * W + c`` holds pixel ``(r, c)``: the first row from left to
right, then the second, and so on -- the order in which PixelRNN, PixelCNN and
ImageGPT factor ``p(x) = prod_t p(x_t | x_<t)``. :func:`to_sequence` and
:func:`from_sequence` are inverses. :func:`sequence_cost` tabulates why this
forces small images: the attention matrix has ``(H W)^2`` entries per head.
"""

from __future__ import annotations

import torch

from attnbook._checks import positive_int, token_ids

__all__ = ["to_sequence", "from_sequence", "sequence_cost"]


def to_sequence(tokens: torch.Tensor) -> torch.Tensor:
    """Token images (B, H, W) as sequences (B, H * W) in raster order (row by row).

    >>> to_sequence(torch.tensor([[[1, 2], [3, 4]]]))
    tensor([[1, 2, 3, 4]])
    """
    tokens = token_ids("tokens", tokens)
    if tokens.dim() != 3:
        raise ValueError(f"tokens must have shape (B, H, W), got {tuple(tokens.shape)}")
    B, H, W = tokens.shape
    return tokens.reshape(B, H * W)  # (B, H, W) -> (B, H*W): row r occupies positions r*W .. r*W+W-1


def from_sequence(seq: torch.Tensor, H: int, W: int) -> torch.Tensor:
    """Sequences (B, H * W) in raster order back to token images (B, H, W).

    >>> from_sequence(torch.tensor([[1, 2, 3, 4, 5, 6]]), 2, 3)
    tensor([[[1, 2, 3],
             [4, 5, 6]]])
    """
    seq = token_ids("seq", seq)
    positive_int("H", H)
    positive_int("W", W)
    if seq.dim() != 2 or seq.shape[1] != H * W:
        raise ValueError(f"seq must have shape (B, H*W) = (B, {H * W}), got {tuple(seq.shape)}")
    return seq.reshape(seq.shape[0], H, W)  # (B, H*W) -> (B, H, W)


def sequence_cost(side: int, *, n_head: int = 1, bytes_per_value: int = 4) -> dict[str, float]:
    """What one image of ``side`` x ``side`` tokens costs a transformer layer.

    Returns ``tokens`` (``side^2``), ``attention_entries`` per head and image
    (``tokens^2``) and ``attention_mib``, the memory of one layer's attention
    matrices for ``n_head`` heads in MiB. BERT's 512 tokens make 262,144 entries:

    >>> c = sequence_cost(256)
    >>> c["tokens"], c["attention_entries"], round(c["attention_entries"] / 512**2)
    (65536, 4294967296, 16384)
    """
    positive_int("side", side)
    positive_int("n_head", n_head)
    positive_int("bytes_per_value", bytes_per_value)
    tokens = side * side
    entries = tokens * tokens
    return {
        "tokens": tokens,
        "attention_entries": entries,
        "attention_mib": entries * n_head * bytes_per_value / 2**20,
    }
