"""Reasoning parts: answers a student states (a choice per question), graded at hand-in and explained.

A reasoning part asks a few questions at once, each with a handful of options,
and the student answers in a dict of option letters::

    scaling_reading = {"entropy": "b", "gradient": "a"}

The visible check says whether each answer is *one of its question's options*,
never whether it is right: a check that told right from wrong before hand-in
could be beaten by trying every option. The hidden cases, in the instructor's
``autograder/hidden/<chapter>.py``, hold the key of each question and a
sentence for every option; the feedback prints that sentence for the option
chosen, so a student learns why from the grade. Each question is one case of
weight one: two right answers out of three earn two thirds of the points.

A chapter declares its part in its own package, where :mod:`.hidden_cases`
looks for the hidden cases::

    check_scaling_reading = choices("check_scaling_reading", __name__, answers="scaling_reading",
                                    entropy=("a", "b", "c"), gradient=("a", "b"))

and the instructor's file keys it::

    "check_scaling_reading": (
        Case("entropy", reasoning.key("entropy", "b", a="...", b="...", c="...")),
        Case("gradient", reasoning.key("gradient", "a", a="...", b="...")),
    ),

>>> part = choices("check_demo", __name__, size=("a", "b"))
>>> part({"size": "B"})  # the visible check: the form only
Each answer is one of its options; it is graded at hand-in, and the feedback explains every option.
The visible check passed.
>>> part({"size": "c"})
Traceback (most recent call last):
attnbook.grading.errors.CheckFailed: answers['size'] should be one of 'a', 'b' (a letter, as a string)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .engine import Case, Part
from .errors import CheckFailed

__all__ = ["choices", "is_choices", "key"]


def _letter(value: object) -> str | None:
    """An answer as its lower-case letter (``" B "`` -> ``"b"``), or ``None`` if it is not a string."""
    return value.strip().lower() if isinstance(value, str) else None


def _form(questions: Mapping[str, tuple[str, ...]], answers: object, name: str) -> None:
    if answers is None:  # the released cell raises NotImplementedError, so the name is never bound
        raise CheckFailed(f"{name} is not implemented yet (its cell raises NotImplementedError): write the dict "
                          "of your letters")
    if not isinstance(answers, dict):
        raise CheckFailed(f"the answers should be a dict with the keys {', '.join(map(repr, questions))}")
    missing = [q for q in questions if q not in answers]
    extra = [repr(k) for k in answers if k not in questions]
    if missing or extra:
        raise CheckFailed("the answers should have exactly the keys " + ", ".join(map(repr, questions))
                          + (f"; {', '.join(map(repr, missing))} missing" if missing else "")
                          + (f"; {', '.join(extra)} not asked" if extra else ""))
    for question, options in questions.items():
        if _letter(answers[question]) not in options:
            raise CheckFailed(f"answers[{question!r}] should be one of {', '.join(map(repr, options))} "
                              "(a letter, as a string)")


def is_choices(part: Part) -> bool:
    """Whether ``part`` is a reasoning part made by :func:`choices` (it has no reference to refuse)."""
    return getattr(part.check, "__qualname__", "").startswith("choices.")


def key(question: str, right: str, **why: str) -> Callable[[], tuple]:
    """A hidden case: ``question``'s right option and, for every option, the sentence the feedback prints."""
    if right not in why:
        raise ValueError(f"the key of {question!r} should explain its right option {right!r} too")
    return lambda: ("key", question, right, why)


def choices(name: str, module: str, *, answers: str = "the dict of answers", **questions: tuple[str, ...]) -> Part:
    """A reasoning part named ``name`` (its chapter's module ``module``), with the options of each question;
    ``answers`` is the notebook's name for the student's dict, which the feedback uses.

    The visible case (weight 0: the form earns nothing) checks the form; the
    hidden cases (:func:`key`) grade each question.
    """
    if not questions or any(len(options) < 2 for options in questions.values()):
        raise ValueError("a reasoning part asks at least one question of at least two options")

    def check(given: object) -> Callable[..., None]:
        def check_one(kind: str, *args: object) -> None:
            _form(questions, given, answers)
            if kind == "form":
                print("Each answer is one of its options; it is graded at hand-in, "
                      "and the feedback explains every option.")
                return
            question, right, why = args
            assert isinstance(question, str) and isinstance(why, dict)
            chosen = _letter(given[question])  # type: ignore[index]  # a dict: _form checked it
            if chosen != right:
                raise CheckFailed(f"{question} ({chosen}): {why.get(chosen, 'not one of the options')}")
            print(f"- {question} ({chosen}): {why[right]}")

        return check_one

    check.__module__ = module  # the chapter's package: where hidden_cases looks for the keys
    return Part(name=name, visible=(Case("the form of the answers", lambda: ("form",), weight=0.0),),
                check=check)
