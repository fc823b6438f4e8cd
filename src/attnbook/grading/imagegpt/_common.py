"""What chapter 5's parts share: a private copy of the reference, and checks of returned tensors."""

from __future__ import annotations

import torch

from .._compare import require_tensor
from .._core import private_modules
from ..errors import CheckFailed
from ..steps import require_shape

# The checks' own copy of the references: a notebook that patched the public modules changes nothing here.
(IG,) = private_modules("attnbook.imagegpt")


def require_ids(result: object, what: str, shape: tuple[int, ...], described: str) -> torch.Tensor:
    """``result`` as an integer tensor of ``shape``, or a failure that says what ``what`` returns."""
    ids = require_tensor(result, what)
    require_shape(ids, shape, f"{what} should have shape {described}, got {tuple(ids.shape)}")
    if ids.is_floating_point() or ids.dtype == torch.bool or ids.is_complex():
        raise CheckFailed(f"{what} should hold integer ids (torch.long), got {ids.dtype}")
    return ids.long()
