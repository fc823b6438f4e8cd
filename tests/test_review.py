"""The review flags of ``attnbook-course grade`` (attnbook_course.review): one spelling of each trick per case."""

import doctest
from pathlib import Path

import pytest

from attnbook_course import review
from attnbook_course.fixtures import catalogue

ROOT = Path(__file__).resolve().parent.parent

SPELLINGS = {
    "edits modules": [
        "import builtins\nbuiltins.len = lambda x: 3",
        '__import__("bu" + "iltins").len = lambda x: 3',
        'b = __import__("".join(["bu", "iltins"]))\nb.len = lambda x: 3',
        'm = getattr(__import__("s" + "ys"), "mod" + "ules")',
        'name = "mod" + "ules"\nmods = getattr(sys, name)',
        'import importlib as il\nil.import_module("bu" + "iltins").print = None',
        'globals()["__buil" + "tins__"]["len"] = len',
        'vars()["allclose"] = lambda *a, **k: True',
        'globals().update(allclose=lambda *a, **k: True)',
        "f = lambda: None\ng = f.__globals__",
        "[c for c in object.__subclasses__()]",
        "setattr(sys, 'displayhook', print)",
    ],
    "patches torch": [
        "torch.allclose = lambda *a, **k: True",
        "import torch as T\nT.allclose = lambda *a, **k: True",
        "t = torch\nt.testing.assert_close = print",
        "setattr(torch, 'all' + 'close', lambda *a, **k: True)",
        "from torch import testing as tt\ntt.assert_close = print",
        "F.softmax, x = print, 1",
        "del torch.nn.functional.softmax",
    ],
    "touches the grader": ["from attnbook.grading import errors", "import nbgrader"],
    "runs code built from strings": ['exec("torch.all" + "close = print")', "eval(compile('1', 'x', 'eval'))"],
}


def test_doctests():
    assert doctest.testmod(review).failed == 0


@pytest.mark.parametrize(("flag", "code"), [(f, c) for f, codes in SPELLINGS.items() for c in codes])
def test_each_spelling_is_flagged(flag, code):
    assert flag in review.flags(["def helper(x):\n    return x\n", code])


def test_a_cell_that_is_not_python_is_searched_for_the_words():
    assert review.flags(["%timeit 1\nimport builtins"]) == ["edits modules"]
    assert review.flags(["%timeit 1\nprint(1)"]) == []


def test_right_and_wrong_answers_raise_no_flag():
    """No answer of the catalogue but the hostile ones and the one that patches torch is flagged:
    setattr on self, torch.compile, getattr with a constant, reading torch's attributes are all fine."""
    flagged = {name for name, a in catalogue.ANSWERS.items() if review.flags(list(a.get("cells", {}).values()))}
    assert flagged - {n for n, a in catalogue.ANSWERS.items() if a.get("hostile")} == {"patches_torch"}
    fine = ("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        setattr(self, 'q_proj', nn.Linear(2, 2))\n"
            "m = torch.compile(M())\nd = getattr(torch, 'float64')\nx = torch.float32\n"
            "y = F.softmax(torch.ones(2), -1)")
    assert review.flags([fine]) == []
