"""The checks that the test cells of the exercise notebooks call, and the engine that grades them.

A test cell runs a check twice: ``check_x(student_fn)`` runs the visible cases
and raises :class:`CheckFailed` with an explanation at the first failure; the
hidden part, ``check_x(student_fn, points=N)``, runs every case and returns the
points earned. Each check is a :class:`~attnbook.grading.engine.Part`.

Where things live:

* :mod:`.engine` (``Case``, ``Part``, ``score_cases``), :mod:`.steps`,
  :mod:`._core` and :mod:`._compare`: what every part shares; :mod:`._shared`:
  the helpers that several chapters' parts share;
* one subpackage per chapter, one module per graded part, named after the
  package module it grades: :mod:`.rnn` (chapter 1), :mod:`.transformer`
  (chapter 2), :mod:`.bert` (chapter 3), :mod:`.gpt` (chapter 4), :mod:`.imagegpt`
  (chapter 5), :mod:`.vit` (chapter 6); a test cell imports its check from its
  chapter's package;
* :mod:`.fixtures`: the random models and losses handed to student code;
* :mod:`._refuse`: refusing a part's references, in the grader's sandboxed
  worker and in the student's kernel alike; :mod:`.hidden_cases`: finding
  the hidden cases the instructor names.

Grading a submission in the sandbox (the judge, the worker, the sandbox) is
the instructor's package ``attnbook_course``'s, never shipped to students; what
of this package it uses besides the checks is declared in :mod:`.seam`.

Nothing chapter-specific is imported here until it is asked for, so that one
chapter's checks never break another chapter's test cells.
"""

import importlib

from .errors import CheckFailed

_LAZY = dict.fromkeys(("greedy_test_model", "perplexity_test_model", "HardAttentionLoss"), "fixtures")

__all__ = ["CheckFailed", *_LAZY]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
