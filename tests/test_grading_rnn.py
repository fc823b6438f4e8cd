"""attnbook.grading.rnn, fast: chapter 1's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/fixtures/answers/01-rnn-attention.py) is graded
end to end through the sandboxed judge in test_autograder.py.
"""

from pathlib import Path

import pytest

_harness = Path(__file__).with_name("exercise_harness.py")
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location("exercise_harness", _harness)
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)
EXERCISE = harness.Exercise("01-rnn-attention")
ANSWERS = EXERCISE.answers


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_catalogued_answer_is_graded_as_expected(name, capsys):
    EXERCISE.assert_graded_as_expected(name, capsys)
