"""Every chapter's multiple-choice questions, graded and on the pages, are fair to a student who reads them.

A question whose right option is the longest one, or a chapter whose keys are
mostly (b), can be answered without knowing anything. ``tools/choice_fairness.py``
reads every question from its source (nothing runs) and measures both; here each
chapter is held to its limits. ``python -m pytest tests/test_choice_fairness.py -s``
prints the table, and so does ``python tools/choice_fairness.py``.
"""

import doctest
import importlib.util
import re
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("choice_fairness",
                                               Path(__file__).parents[1] / "tools" / "choice_fairness.py")
assert _spec is not None and _spec.loader is not None
fair = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fair  # dataclasses look their module up there
_spec.loader.exec_module(fair)

ROOT = Path(__file__).parents[1]


def test_the_tool_s_examples():
    assert doctest.testmod(fair).failed == 0


def test_every_question_of_the_book_is_read():
    questions = fair.all_questions()
    graded = [q for q in questions if q.kind == "graded"]
    keys = sum(len(fair.hidden_keys(p.read_text())) for p in (ROOT / "autograder" / "hidden").glob("*.py"))
    assert len(graded) == keys  # graded_questions also checks each against its options and its solution
    written = sum(len(re.findall(r"\bChoice\(", p.read_text())) for p in ROOT.glob("chapters/*/*.md"))
    assert len(questions) - len(graded) == written
    assert {q.chapter for q in questions} == {p.name for p in ROOT.glob("solutions/*/") if p.is_dir()}


def test_no_chapter_can_be_answered_by_length_or_by_letter():
    rows = fair.tallies(fair.all_questions())
    print("\n" + fair.table(rows))
    chapters = [r for r in rows if not r.label.startswith(("  ", "all"))]
    problems = [p for r in chapters for p in r.problems()]
    assert not problems, "\n".join(problems)


def test_the_measure_flags_a_chapter_that_the_longest_option_wins():
    def question(key, longest):
        options = ["a claim, and a reason for it", "another claim, and its reason", "a third claim, for a reason"]
        options[longest] += " that goes on for much longer than the others do"
        return fair.Question("01-x", "page", "q", tuple(options), key)

    keys = [0, 1, 2] * 4  # spread over the letters
    biased = fair.tally("biased", [question(k, longest=k) for k in keys])
    assert biased.longest == 1.0 and biased.top_share < fair.TOP_LETTER_SHARE
    assert [p for p in biased.problems() if "longest" in p] and not [p for p in biased.problems() if "key" in p]
    fair_one = fair.tally("fair", [question(k, longest=(k + i) % 3) for i, k in enumerate(keys)])
    assert fair_one.problems() == []
    all_b = fair.tally("all b", [question(1, longest=0)] * 5)
    assert ["(b) is the key of 5 of 5" in p for p in all_b.problems()] == [True]
