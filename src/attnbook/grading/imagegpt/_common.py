"""What chapter 5's parts share: a private copy of the reference, and checks of returned tensors."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from .._compare import require_tensor
from .._core import private_modules
from ..engine import Part
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


def answered(part: Part, name: str) -> Part:
    """A reasoning part (:func:`attnbook.grading.reasoning.choices`) that says "not implemented yet" as others do.

    The released cell of a reasoning part raises ``NotImplementedError`` and
    never defines ``name``, so the test cell receives ``None``; this part says
    so in the words of every other part instead of asking for a dict. (Its
    place is :mod:`attnbook.grading.reasoning`, for every chapter.)

    >>> from attnbook.grading.reasoning import choices, is_choices
    >>> part = answered(choices("check_demo", __name__, size=("a", "b")), "demo_answers")
    >>> is_choices(part)
    True
    >>> part(None)
    Traceback (most recent call last):
    attnbook.grading.errors.CheckFailed: demo_answers is not implemented yet (it raises NotImplementedError): ...
    """
    choose = part.check

    def check(answers: object) -> Callable[..., None]:
        if answers is None:
            raise CheckFailed(f"{name} is not implemented yet (it raises NotImplementedError): define it as a "
                              "dict of one letter per question")
        return choose(answers)

    check.__module__, check.__qualname__ = choose.__module__, choose.__qualname__  # still a reasoning part
    return dataclasses.replace(part, check=check)
