"""Chapter 2's Part 16 (attnbook.grading.transformer.noam): what is particular to the schedule's check.

The catalogue's answers to the part are graded by tests/test_exercises.py; here each mistake the check
names is named for an answer that makes it (no earlier mistake takes its place), on the visible cases.
"""

import pytest
import torch

from attnbook.grading.errors import CheckFailed
from attnbook.grading.transformer import check_noam_lr, noam

pytestmark = pytest.mark.usefixtures("one_thread")


def _answer(which: int):
    """An answer that makes mistake ``which`` of ``noam._mistakes``, for int steps and tensors alike."""

    def noam_lr(step, d_model, warmup):
        rates = noam._mistakes(torch.as_tensor(step), d_model, warmup)[which][1]()
        return rates.float() if isinstance(step, torch.Tensor) else rates.item()

    return noam_lr


@pytest.mark.parametrize("which", range(len(noam._mistakes(torch.arange(3), 8, 2))))
def test_each_mistake_is_named(which, capsys):
    message = noam._mistakes(torch.arange(3), 8, 2)[which][0]
    with pytest.raises(CheckFailed) as failed:
        check_noam_lr(_answer(which))
    assert str(failed.value) == message


def test_the_reference_passes_and_the_visible_cases_hold_step_0_and_a_tensor_of_two_axes(capsys):
    from attnbook.train import noam_lr

    cases = [case.make() for case in check_noam_lr.visible]
    check_one = check_noam_lr.check(noam_lr)  # every visible case, without refusing the reference
    for case in cases:
        check_one(*case)
    assert any(kind == "ints" and 0 in steps for kind, steps, *_ in cases)
    assert any(kind == "tensor" and steps.dim() == 2 for kind, steps, *_ in cases)
