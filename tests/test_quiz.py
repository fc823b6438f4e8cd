"""The end-of-section questions: every answer folded in a <details>, every option explained, text never markup."""

import re

import pytest

from attnbook.quiz import Choice, Number, Quiz


def test_each_question_has_its_answer_folded_and_every_option_explained():
    quiz = Quiz([Choice("Pick one", ["x", "y", "z"], answer=2, why=["no x", "no y", "yes z"]),
                 Number("How many?", answer=3072, tolerance=0.5, unit="heads", why="Count them.")])
    page = quiz._repr_html_()
    folded = re.findall(r"<details><summary>(.*?)</summary>(.*?)</details>", page)
    assert [s for s, _ in folded] == ["Answer to question 1", "Answer to question 2"]
    assert "(c) z" in folded[0][1] and "(a) wrong: no x" in folded[0][1] and "(c) right: yes z" in folded[0][1]
    assert "3,072 heads (anything within 0.5 counts)" in folded[1][1]
    assert "no x" not in page.replace(folded[0][1], "")  # the reasons are inside the fold only
    assert '<ol type="a"><li>x</li><li>y</li><li>z</li></ol>' in page  # the options are not folded


def test_text_is_escaped_code_is_marked_and_maths_is_marked_for_mathjax():
    page = Quiz([Number("<script>x</script> `a<b` and $q \\cdot k$", answer=1, why="<b>no</b>")])._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "<b>no</b>" not in page
    assert "<code>a&lt;b</code>" in page and "\\(q \\cdot k\\)" in page and "mathjax_process" in page


@pytest.mark.parametrize("kwargs, words", [
    ({"options": ["only"], "answer": 0, "why": ["x"]}, "2 to 8 options"),
    ({"options": ["a", "b"], "answer": 0, "why": ["x"]}, "explains every option"),
    ({"options": ["a", "b"], "answer": 2, "why": ["x", "y"]}, "index, 0 to 1"),
])
def test_a_malformed_choice_is_refused_with_the_reason(kwargs, words):
    with pytest.raises(ValueError, match=words):
        Choice("q", **kwargs)


def test_an_empty_quiz_is_refused_and_text_shows_no_answer():
    with pytest.raises(ValueError, match="at least one question"):
        Quiz([])
    text = repr(Quiz([Choice("Pick", ["x", "y"], answer=1, why=["a", "b"])]))
    assert text.splitlines() == ["Check your understanding", "1. Pick", "   (a) x", "   (b) y"]
