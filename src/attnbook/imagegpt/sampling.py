"""Training loss, evaluation and sampling for any next-pixel model (ImageGPT or PixelCNN).

Both models answer one question, :func:`pixel_logits`: for every pixel of a
token image (B, H, W), scores (B, H, W, V) for its value given the pixels
before it in raster order. On top of it:

* :func:`next_pixel_loss` -- the training loss (nats), shaped for
  :func:`attnbook.train.fit`'s ``loss_fn(model, batch)``;
* :func:`evaluate_bits_per_dim` -- bits per dimension over a data set;
* :func:`complete` -- keep the top ``rows_kept`` rows and sample the rest,
  one pixel at a time in raster order, each from ``p(x_t | x_<t)``;
* :func:`sample_images` -- the same from an empty canvas;
* :func:`receptive_field` -- which input pixels the scores at one pixel
  depend on, found by the gradient (PixelCNN's blind spot shows in it).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnbook._checks import int_in_range, positive_int, token_ids
from attnbook.gpt import KVCache, next_token_probs

from .model import ImageGPT, bits_per_dim
from .pixelcnn import PixelCNN
from .sequence import to_sequence

__all__ = [
    "pixel_logits",
    "next_pixel_loss",
    "evaluate_bits_per_dim",
    "complete",
    "sample_images",
    "receptive_field",
]


def _model(model: object) -> ImageGPT | PixelCNN:
    if not isinstance(model, (ImageGPT, PixelCNN)):
        raise TypeError(f"model must be an ImageGPT or a PixelCNN, got {type(model).__name__}")
    return model


def _vocab(model: ImageGPT | PixelCNN) -> int:
    return model.config.vocab_size if isinstance(model, ImageGPT) else model.vocab_size


def _images(name: str, tokens: object, model: ImageGPT | PixelCNN) -> torch.Tensor:
    tokens = token_ids(name, tokens)
    if tokens.dim() != 3 or tokens.numel() == 0:
        raise ValueError(f"{name} must have shape (B, H, W) and not be empty, got {tuple(tokens.shape)}")
    if isinstance(model, ImageGPT):
        want = (model.config.height, model.config.width)
        if tuple(tokens.shape[1:]) != want:
            raise ValueError(f"{name} must be (B, {want[0]}, {want[1]}) images for this model, "
                             f"got {tuple(tokens.shape)}")
    return token_ids(name, tokens, _vocab(model))


def pixel_logits(model: ImageGPT | PixelCNN, tokens: torch.Tensor) -> torch.Tensor:
    """Logits (B, H, W, V): at ``(r, c)``, scores for that pixel given the pixels before it.

    >>> _ = torch.manual_seed(0)
    >>> pixel_logits(PixelCNN(8, channels=8, n_layers=1), torch.randint(8, (2, 4, 4))).shape
    torch.Size([2, 4, 4, 8])
    """
    model = _model(model)
    tokens = _images("tokens", tokens, model)
    if isinstance(model, PixelCNN):
        return model(tokens)
    B, H, W = tokens.shape
    return model(to_sequence(tokens)).view(B, H, W, -1)  # (B, H*W, V) -> (B, H, W, V)


def next_pixel_loss(model: ImageGPT | PixelCNN, tokens: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) of every pixel of ``tokens`` (B, H, W) given the pixels before it.

    Its signature is ``fit``'s ``loss_fn(model, batch)``; divide by ``ln 2`` for bits per dimension.

    >>> _ = torch.manual_seed(0)
    >>> model = PixelCNN(8, channels=8, n_layers=1)
    >>> 1.5 < next_pixel_loss(model, torch.randint(8, (2, 4, 4))).item() < 2.6   # about ln 8 = 2.08
    True
    """
    logits = pixel_logits(model, tokens)  # (B, H, W, V)
    return F.cross_entropy(logits.flatten(0, 2).float(), tokens.to(logits.device).flatten())  # (BHW, V), (BHW,)


@torch.no_grad()
def evaluate_bits_per_dim(model: ImageGPT | PixelCNN, tokens: torch.Tensor, *, batch_size: int = 256) -> float:
    """Bits per dimension of ``model`` on the token images (N, H, W), in eval mode, without gradients.

    >>> from attnbook.imagegpt import ImageGPTConfig
    >>> _ = torch.manual_seed(0)
    >>> model = ImageGPT(ImageGPTConfig.preset("digits-8x8"))
    >>> 2.9 < evaluate_bits_per_dim(model, torch.randint(8, (10, 8, 8))) < 3.1   # uniform: log2 8 = 3
    True
    """
    model = _model(model)
    tokens = _images("tokens", tokens, model)
    positive_int("batch_size", batch_size)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        for batch in tokens.split(batch_size):
            batch = batch.to(device)
            total += bits_per_dim(pixel_logits(model, batch), batch).item() * batch.numel()
    finally:
        model.train(was_training)
    return total / tokens.numel()


@torch.no_grad()
def complete(
    model: ImageGPT | PixelCNN,
    tokens: torch.Tensor,
    rows_kept: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Keep the first ``rows_kept`` rows of ``tokens`` (B, H, W) and sample the others pixel by pixel.

    Pixel ``t`` (raster order) is drawn from the model's ``p(x_t | x_<t)`` with
    its logits divided by ``temperature`` (``0``: the most likely value), and
    written into the canvas before pixel ``t + 1`` is scored. The kept rows are
    copied, never changed; the values of the other rows in ``tokens`` are
    ignored. ``generator`` (on the model's device) makes a draw repeatable. Runs
    in eval mode and restores the mode. Returns (B, H, W) ids on the model's device.

    >>> from attnbook.imagegpt import ImageGPTConfig
    >>> _ = torch.manual_seed(0)
    >>> model = ImageGPT(ImageGPTConfig(vocab_size=8, height=4, width=4, n_layer=1, n_head=2, n_embd=16))
    >>> images = torch.randint(8, (3, 4, 4))
    >>> done = complete(model, images, rows_kept=2, generator=torch.Generator().manual_seed(0))
    >>> torch.equal(done[:, :2], images[:, :2]), done.shape
    (True, torch.Size([3, 4, 4]))
    """
    model = _model(model)
    tokens = _images("tokens", tokens, model)
    B, H, W = tokens.shape
    int_in_range("rows_kept", rows_kept, 0, H, " (0 .. H, the image's rows)")
    device = next(model.parameters()).device
    canvas = to_sequence(tokens).to(device, copy=True)  # (B, H*W): written in place, tokens untouched
    was_training = model.training
    model.eval()
    try:
        if isinstance(model, ImageGPT):
            _fill_with_cache(model, canvas, rows_kept * W, temperature, generator)
        else:  # a PixelCNN scores every pixel at once: run it on the whole canvas each step
            for t in range(rows_kept * W, H * W):
                last = model(canvas.view(B, H, W))[:, t // W, t % W]  # (B, V)
                probs = next_token_probs(last, temperature)  # (B, V)
                canvas[:, t] = torch.multinomial(probs, 1, generator=generator)[:, 0]
    finally:
        model.train(was_training)
    return canvas.view(B, H, W)  # (B, H*W) -> (B, H, W)


def _fill_with_cache(model: ImageGPT, canvas: torch.Tensor, first: int, temperature: float,
                     generator: torch.Generator | None) -> None:
    """Sample ``canvas[:, first:]`` (B, T) in place, in raster order, one pixel per step of the GPT.

    The GPT reads the start token and then the pixels shifted by one, so its
    output at position ``t`` scores pixel ``t``; a :class:`~attnbook.gpt.KVCache`
    keeps every block's keys and values, and each step runs only the pixel just
    drawn: the same logits as running the whole prefix again (chapter 4's
    cache), at one position's cost instead of ``t``'s.
    """
    V, T = model.config.vocab_size, canvas.shape[1]
    cache = KVCache(model.config.n_layer)
    inputs = model._inputs(canvas)  # (B, T): start token, then pixels 0 .. T - 2
    logits, _ = model.gpt(inputs[:, : first + 1], cache=cache)  # (B, first + 1, V + 1)
    for t in range(first, T):
        probs = next_token_probs(logits[:, -1, :V], temperature)  # (B, V): pixel t given pixels < t
        canvas[:, t] = torch.multinomial(probs, 1, generator=generator)[:, 0]
        if t + 1 < T:
            logits, _ = model.gpt(canvas[:, t : t + 1], cache=cache)  # (B, 1, V + 1): scores pixel t + 1


def sample_images(
    model: ImageGPT | PixelCNN,
    n: int,
    H: int | None = None,
    W: int | None = None,
    generator: torch.Generator | None = None,
    *,
    temperature: float = 1.0,
) -> torch.Tensor:
    """``n`` new token images (n, H, W), every pixel sampled (``complete`` with no rows kept).

    ``H`` and ``W`` default to an ImageGPT's image size (a PixelCNN needs them).

    >>> from attnbook.imagegpt import ImageGPTConfig
    >>> _ = torch.manual_seed(0)
    >>> model = ImageGPT(ImageGPTConfig(vocab_size=8, height=3, width=5, n_layer=1, n_head=2, n_embd=16))
    >>> sample_images(model, 2).shape
    torch.Size([2, 3, 5])
    """
    model = _model(model)
    positive_int("n", n)
    if isinstance(model, ImageGPT):
        H = model.config.height if H is None else H
        W = model.config.width if W is None else W
    if H is None or W is None:
        raise ValueError("a PixelCNN has no fixed image size: pass H and W")
    blank = torch.zeros(n, positive_int("H", H), positive_int("W", W), dtype=torch.long)
    return complete(model, blank, 0, temperature, generator)


def receptive_field(model: ImageGPT | PixelCNN, H: int, W: int, r: int, c: int) -> torch.Tensor:
    """The input pixels (H, W) bool that the logits at pixel ``(r, c)`` depend on, found by gradients.

    Puts one random (1, H, W) token image (a generator seeded 0) through the
    model, backpropagates the sum of the logits at ``(r, c)`` to the token
    embeddings and keeps the pixels whose gradient is not zero. For an
    ImageGPT, input position ``t + 1`` holds pixel ``t`` (position 0 is the
    start token).

    >>> _ = torch.manual_seed(0)
    >>> field = receptive_field(PixelCNN(8, channels=8, n_layers=1, first_kernel=3), 5, 5, 2, 2)
    >>> field.int()                         # a type-A and a type-B 3 x 3 layer: the blind spot at the top right
    tensor([[1, 1, 1, 1, 1],
            [1, 1, 1, 1, 0],
            [1, 1, 0, 0, 0],
            [0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0]], dtype=torch.int32)
    """
    model = _model(model)
    int_in_range("r", r, 0, positive_int("H", H) - 1)
    int_in_range("c", c, 0, positive_int("W", W) - 1)
    embedding = model.embed if isinstance(model, PixelCNN) else model.gpt.wte
    seen: list[torch.Tensor] = []

    def keep(module: torch.nn.Module, inputs: object, output: torch.Tensor) -> None:
        output.retain_grad()
        seen.append(output)

    handle = embedding.register_forward_hook(keep)
    try:
        x = torch.randint(_vocab(model), (1, H, W), generator=torch.Generator().manual_seed(0))
        pixel_logits(model, x)[0, r, c].sum().backward()  # logits (1, H, W, V)
    finally:
        handle.remove()
    grad = seen[0].grad
    assert grad is not None  # the logits depend on the embeddings
    norms = grad[0].abs().sum(-1)  # PixelCNN: (H, W); ImageGPT: (HW + 1,) over start, x_0, ..
    if isinstance(model, ImageGPT):  # input position t + 1 holds pixel t; the last pixel is never read
        norms = torch.cat([norms[1:], norms.new_zeros(1)]).view(H, W)
    return norms > 0
