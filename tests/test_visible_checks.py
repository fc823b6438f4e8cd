"""Visible checks in the student's kernel: a loop that never ends fails in time, an error names the student's line.

Each visible case runs under :func:`attnbook.grading._core.time_limit` (a
SIGALRM in the main thread, ``ATTNBOOK_VISIBLE_SECONDS`` to set it); an
exception from the student's code ends with the line of the cell that raised
(:func:`attnbook.grading._core.student_line`). A student's cell is compiled
here as IPython compiles it: under ipykernel's file name, its lines in
``linecache``. The last test runs the same in a real Jupyter kernel.
"""

import linecache
import math
import signal
import textwrap
import threading
import time
import types

import pytest
import torch

import attnbook.attention
from attnbook.grading import _core
from attnbook.grading.engine import Case, Part
from attnbook.grading.errors import CheckFailed
from attnbook.grading.transformer import check_scaled_dot_product_attention as check_sdpa

CELL = "/tmp/ipykernel_123/4567.py"  # ipykernel >= 6 names a cell's code so; plain IPython: <ipython-input-…>

CORRECT = """
def scaled_dot_product_attention(q, k, v, mask=None):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return weights @ v, weights
"""
LOOPS = """
def scaled_dot_product_attention(q, k, v, mask=None):
    i = 0
    while i < q.shape[-1]:
        weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
    return weights @ v, weights
"""
SWALLOWS = """
def scaled_dot_product_attention(q, k, v, mask=None):
    try:
        while True:
            pass
    except:  # a bare except catches the first alarm too; the next one rings a second later
        pass
    while True:
        pass
"""


@pytest.fixture
def cell(monkeypatch):
    """Run a cell's source as IPython does and return the function it defines."""
    def run(source: str, name: str = CELL) -> types.FunctionType:
        source = textwrap.dedent(source).lstrip("\n")
        monkeypatch.setitem(linecache.cache, name, (len(source), None, source.splitlines(True), name))
        namespace = {"torch": torch, "math": math}
        exec(compile(source, name, "exec"), namespace)
        return namespace["scaled_dot_product_attention"]

    return run


@pytest.fixture
def one_second(monkeypatch):
    monkeypatch.setenv("ATTNBOOK_VISIBLE_SECONDS", "1")


def test_a_correct_answer_passes(cell, capsys):
    check_sdpa(cell(CORRECT))
    out = capsys.readouterr().out
    assert out == f"All {len(check_sdpa.visible)} visible checks passed.\n"


@pytest.mark.usefixtures("one_second")
@pytest.mark.parametrize("source", [LOOPS, SWALLOWS], ids=["loops", "swallows the alarm"])
def test_a_loop_that_never_ends_fails_in_time_and_the_kernel_goes_on(cell, source, capsys):
    start = time.monotonic()
    with pytest.raises(CheckFailed) as failed:
        check_sdpa(cell(source))
    assert time.monotonic() - start < 5
    message = str(failed.value)
    assert message.startswith("check_scaled_dot_product_attention: scaled_dot_product_attention ran longer than 1 s "
                              "on the visible case '")
    assert "look for a loop that never ends (line " in message and message.endswith("`)")
    if source is LOOPS:
        assert "(line 3 of your cell: `while i < q.shape[-1]:`)" in message \
               or "(line 4 of your cell: `weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1)`)" in message
    # the kernel goes on: the references are back, gradients on, and the next check runs
    assert attnbook.attention.scaled_dot_product_attention.__module__ == "attnbook.attention"
    assert torch.is_grad_enabled()
    capsys.readouterr()
    check_sdpa(cell(CORRECT))
    assert "passed" in capsys.readouterr().out


def test_an_error_ends_with_the_students_line(cell):
    with pytest.raises(CheckFailed) as failed:
        check_sdpa(cell("""
            def scaled_dot_product_attention(q, k, v, mask=None):
                scores = q @ k.transpose(-2, -1)

                idx = 99
                return scores[..., idx], scores
            """))
    message = str(failed.value)
    assert message.startswith("scaled_dot_product_attention raised IndexError: ")
    assert message.endswith(" (line 5 of your cell: `return scores[..., idx], scores`)")


def test_an_error_inside_torch_points_at_the_students_call(cell):
    """F.softmax is Python that raises: the innermost frame of the student's is the call, not torch's."""
    with pytest.raises(CheckFailed) as failed:
        check_sdpa(cell("""
            def scaled_dot_product_attention(q, k, v, mask=None):
                weights = torch.nn.functional.softmax(q @ k.transpose(-2, -1), dim=7)
                return weights @ v, weights
            """, name="<ipython-input-3-0123abcd>"))  # as plain IPython (the judge's worker) names a cell
    message = str(failed.value)
    assert message.startswith("scaled_dot_product_attention raised IndexError: Dimension out of range")
    assert message.endswith(" (line 2 of your cell: `weights = torch.nn.functional.softmax(q @ k.transpose(-2, "
                            "-1), dim=7)`)")


def test_a_call_of_the_reference_names_the_line_that_calls_it(cell):
    with pytest.raises(CheckFailed) as failed:
        check_sdpa(cell("""
            from attnbook.attention import scaled_dot_product_attention as ours
            def scaled_dot_product_attention(q, k, v, mask=None):
                return ours(q, k, v)
            """))
    assert "calls the reference implementation" in str(failed.value)
    assert str(failed.value).endswith("(line 3 of your cell: `return ours(q, k, v)`)")


def test_a_long_line_is_cut_and_code_outside_a_cell_keeps_todays_message(cell):
    line = 'raise ValueError("no") if True else ' + "x" * 100
    with pytest.raises(CheckFailed) as failed:
        check_sdpa(cell(f"def scaled_dot_product_attention(q, k, v, mask=None):\n    {line}\n"))
    assert str(failed.value).endswith(f"(line 2 of your cell: `{line[:77]}...`)")
    with pytest.raises(CheckFailed) as failed:
        check_sdpa(cell("""
            def scaled_dot_product_attention(q, k, v, mask=None):
                raise ValueError("shapes")
            """, name="<string>"))
    assert str(failed.value) == "scaled_dot_product_attention raised ValueError: shapes"


def _sentinel(signum, frame):
    raise AssertionError("the outer alarm rang")


@pytest.mark.usefixtures("one_second")
def test_the_previous_handler_and_timer_are_restored(cell):
    before = signal.signal(signal.SIGALRM, _sentinel)
    try:
        signal.setitimer(signal.ITIMER_REAL, 100.0, 7.0)
        check_sdpa(cell(CORRECT))
        with pytest.raises(CheckFailed, match="ran longer than 1 s"):
            check_sdpa(cell(LOOPS))
        assert signal.getsignal(signal.SIGALRM) is _sentinel
        remaining, interval = signal.getitimer(signal.ITIMER_REAL)
        assert 90 < remaining <= 100 and interval == 7.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert signal.getsignal(signal.SIGALRM) is before


def test_a_sooner_outer_alarm_is_left_alone(cell, monkeypatch):
    """As attnbook_course.mutants' clock: its TimeoutError rings inside the student's code, none of ours."""
    monkeypatch.setenv("ATTNBOOK_VISIBLE_SECONDS", "30")

    def ring(signum, frame):
        raise TimeoutError("the outer clock")

    before = signal.signal(signal.SIGALRM, ring)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5, 0.2)
        with pytest.raises(CheckFailed, match="scaled_dot_product_attention raised TimeoutError: the outer clock"):
            check_sdpa(cell(LOOPS))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def test_only_visible_checks_in_the_kernel_are_timed():
    """Not the hidden cases (points=N), not the judge's proxies of the worker's objects, not outside the main
    thread; the judge and the worker keep their own limits."""
    seen = []
    part = Part("check_probe", (Case("one", lambda: ()),),
                lambda fn: lambda: seen.append(signal.getitimer(signal.ITIMER_REAL)[0] > 0),
                own_hidden=(Case("two", lambda: ()),))
    part(len)
    part(len, points=1)
    part(types.SimpleNamespace(__handle__=1))  # a proxy, as the judge has
    assert seen == [True, False, False, False]
    thread = threading.Thread(target=part, args=(len,))
    thread.start()
    thread.join()
    assert seen[-1] is False


def test_the_limit_is_generous_unless_set(monkeypatch):
    monkeypatch.delenv("ATTNBOOK_VISIBLE_SECONDS", raising=False)
    assert _core.visible_seconds() >= 10
    monkeypatch.setenv("ATTNBOOK_VISIBLE_SECONDS", "0")  # no limit
    assert _core.visible_seconds() == 0


NOTEBOOK = [
    "import os\nos.environ['ATTNBOOK_VISIBLE_SECONDS'] = '1'\nimport math, torch",
    LOOPS,
    "from attnbook.grading.transformer import check_scaled_dot_product_attention\n"
    "check_scaled_dot_product_attention(scaled_dot_product_attention)",
    "def scaled_dot_product_attention(q, k, v, mask=None):\n    scores = q @ k.mT\n    return scores[..., 99], scores",
    "check_scaled_dot_product_attention(scaled_dot_product_attention)",
    CORRECT,
    "check_scaled_dot_product_attention(scaled_dot_product_attention)",
]


@pytest.mark.slow
def test_in_a_real_jupyter_kernel():
    """ipykernel's own file names and main thread: the loop fails in time, the error names the line, the next
    cells run."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(textwrap.dedent(s)) for s in NOTEBOOK])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True).execute()
    outputs = [cell.outputs for cell in nb.cells]
    errors = [o for out in outputs for o in out if o.output_type == "error"]
    assert [e.ename for e in errors] == ["CheckFailed", "CheckFailed"]
    assert errors[0].evalue.startswith("check_scaled_dot_product_attention: scaled_dot_product_attention ran "
                                       "longer than 1 s")
    assert "of your cell: `w" in errors[0].evalue  # the loop's line 3 or 4
    assert errors[1].evalue.startswith("scaled_dot_product_attention raised IndexError: ")
    assert errors[1].evalue.endswith("(line 3 of your cell: `return scores[..., 99], scores`)")
    assert "passed" in "".join(o.get("text", "") for o in outputs[-1])
