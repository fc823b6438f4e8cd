"""Reasoning parts (``attnbook.grading.reasoning``): the form is visible, the keys hidden, each option explained."""

import re

import pytest

from attnbook.grading import reasoning
from attnbook.grading.engine import Case
from attnbook.grading.errors import CheckFailed


def _part():
    part = reasoning.choices("check_demo", "attnbook.grading.rnn.demo", size=("a", "b", "c"), sign=("a", "b"))
    hidden = (Case("size", reasoning.key("size", "b", a="too small", b="the width", c="too large")),
              Case("sign", reasoning.key("sign", "a", a="it falls", b="it does not rise")))
    return part.__class__(**{**part.__dict__, "own_hidden": hidden})


def test_the_visible_check_tells_the_form_never_the_key(capsys):
    part = _part()
    part({"size": "c", "sign": "b"})  # both wrong: the visible check still passes
    assert "graded at hand-in" in capsys.readouterr().out
    for answers, words in [(None, "the dict of answers is not implemented yet"),
                           (["b", "a"], "should be a dict"), ({"size": "b"}, "'sign' missing"),
                           ({"size": "b", "sign": "a", "why": "a"}, "'why' not asked"),
                           ({"size": "d", "sign": "a"}, "answers['size'] should be one of 'a', 'b', 'c'"),
                           ({"size": 2, "sign": "a"}, "a letter, as a string")]:
        with pytest.raises(CheckFailed, match=re.escape(words)):
            part(answers)


def test_each_question_earns_its_share_and_its_explanation(capsys):
    part = _part()
    assert part({"size": " B ", "sign": "a"}, points=3) == 3
    out = capsys.readouterr().out
    assert "size (b): the width" in out and "sign (a): it falls" in out
    assert part({"size": "c", "sign": "a"}, points=3) == 1.5
    assert "size (c): too large" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=r"no check passed:[\s\S]*it does not rise"):
        part({"size": "a", "sign": "b"}, points=3)


def test_a_part_is_declared_with_its_chapter_and_keys_explain_the_right_option():
    part = reasoning.choices("check_demo", "attnbook.grading.bert.demo", why=("a", "b"))
    assert reasoning.is_choices(part) and part.check.__module__ == "attnbook.grading.bert.demo"
    assert part.forbidden == () and part.visible[0].weight == 0
    with pytest.raises(ValueError, match="explain its right option"):
        reasoning.key("why", "b", a="no")
    with pytest.raises(ValueError, match="at least two options"):
        reasoning.choices("check_demo", "m", why=("a",))
