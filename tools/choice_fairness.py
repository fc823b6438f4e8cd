"""Whether the book's multiple-choice questions can be beaten without reading them.

Every question is read from its source, nothing is run: a graded question's
options from the markdown of its solution notebook
(``solutions/NN-slug/exercises.ipynb``), its key from the instructor's
``reasoning.key(name, letter, a=..., ...)`` in ``autograder/hidden/<pkg>.py``;
a page quiz's ``Choice(question, options, answer=i, ...)`` from the code cells
of ``chapters/NN-slug/*.md``, with :mod:`ast`. For each chapter the table gives
the number of questions, what guessing at random scores, what always picking
the longest option scores, and how the keys spread over the letters.
``tests/test_choice_fairness.py`` holds every chapter to :data:`LONGEST_OVER_CHANCE`
and :data:`TOP_LETTER_SHARE`.

Run it from the repository's root: ``python tools/choice_fairness.py``.

>>> q = Question("01-x", "page", "q", ("short", "a longer one"), key=1)
>>> longest_score(q), q.letter
(1.0, 'b')
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LETTERS = "abcdefgh"
LONGEST_OVER_CHANCE = 0.10  # "always pick the longest" may beat chance by this much, no more
TOP_LETTER_SHARE = 0.40  # no letter is the key of more than this share of a chapter's questions


@dataclass(frozen=True)
class Question:
    chapter: str  # "01-rnn-attention"
    kind: str  # "graded" or "page"
    name: str  # the question's name in its part, or the page and the question's number
    options: tuple[str, ...]
    key: int  # the right option's index

    @property
    def letter(self) -> str:
        return LETTERS[self.key]


def _length(text: str) -> int:
    return len(" ".join(text.split()))


def longest_score(q: Question) -> float:
    """What "always pick the longest option" scores on ``q``: 1, 0, or 1/k where k options tie."""
    lengths = [_length(o) for o in q.options]
    longest = [i for i, n in enumerate(lengths) if n == max(lengths)]
    return 1 / len(longest) if q.key in longest else 0.0


# --- graded questions: the solution notebook's options, the hidden file's keys ---------------------------

_QUESTION = re.compile(r'^\*\*`"?(\w+)"?`\.?\*\*')  # **`name`** —, **`"name"`.**, **`name`.**
_OPTION = re.compile(r"^[-*] +(?:\*\*([a-h])\.?\*\*(?: +—)?|\(([a-h])\)) +(.*)$")  # - **a** —, * **a.**, * (a)
_PACKAGE = re.compile(r"from attnbook\.grading\.(\w+) import check_")


def notebook_options(cells: Iterable[dict]) -> dict[str, dict[str, str]]:
    """``{question: {letter: option}}`` from the markdown cells of a notebook.

    >>> md = "**`size`.** Which?\\n\\n* (a) one;\\n* (b) two,\\n  or three.\\n"
    >>> notebook_options([{"cell_type": "markdown", "source": md}])
    {'size': {'a': 'one;', 'b': 'two, or three.'}}
    """
    found: dict[str, dict[str, str]] = {}
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        question, letter = None, None
        for line in "".join(cell["source"]).split("\n"):
            if m := _QUESTION.match(line):
                question, letter = m.group(1), None
            elif question and (m := _OPTION.match(line)):
                letter = m.group(1) or m.group(2)
                found.setdefault(question, {})[letter] = m.group(3).strip()
            elif question and letter and line.startswith(" ") and line.strip():
                found[question][letter] += " " + line.strip()
            else:
                letter = None
    return {q: options for q, options in found.items() if len(options) >= 2}


def hidden_keys(source: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``{question: (right letter, explained letters)}`` from the ``reasoning.key(...)`` calls of a hidden file.

    >>> hidden_keys('x = key("size", "b", a="one is too few", b="two")')
    {'size': ('b', ('a', 'b'))}
    """
    keys: dict[str, tuple[str, tuple[str, ...]]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "key":
            name, right = (ast.literal_eval(a) for a in node.args[:2])
            if name in keys:
                raise ValueError(f"two keys for the question {name!r}")
            keys[name] = (right, tuple(k.arg for k in node.keywords if k.arg))
    return keys


def solution_letters(cells: Iterable[dict]) -> dict[str, str]:
    """``{question: letter}`` from the dicts of letters assigned in the notebook's solution cells."""
    letters: dict[str, str] = {}
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or "### BEGIN SOLUTION" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                value = ast.literal_eval(node.value)
                if all(isinstance(v, str) and len(v) == 1 for v in value.values()):
                    letters.update(value)
    return letters


def graded_questions(root: Path = ROOT) -> list[Question]:
    questions = []
    for notebook in sorted(root.glob("solutions/*/exercises.ipynb")):
        chapter, cells = notebook.parent.name, json.loads(notebook.read_text())["cells"]
        packages = Counter(p for c in cells if c["cell_type"] == "code" for p in _PACKAGE.findall("".join(c["source"])))
        package = packages.most_common(1)[0][0]
        keys = hidden_keys((root / "autograder" / "hidden" / f"{package}.py").read_text())
        options, solution = notebook_options(cells), solution_letters(cells)
        if set(options) != set(keys):
            raise ValueError(f"{chapter}: the notebook asks {sorted(options)}, the hidden keys answer {sorted(keys)}")
        for name, (right, explained) in keys.items():
            letters = tuple(sorted(options[name]))
            if letters != tuple(LETTERS[:len(letters)]) or tuple(sorted(explained)) != letters:
                raise ValueError(f"{chapter} {name}: options {letters}, explanations for {explained}")
            if solution.get(name) != right:
                raise ValueError(f"{chapter} {name}: the key is {right!r}, the solution says {solution.get(name)!r}")
            texts = tuple(options[name][letter] for letter in letters)
            questions.append(Question(chapter, "graded", name, texts, letters.index(right)))
    return questions


# --- page quizzes: the Choice(...) calls in the pages' code cells -------------------------------------------

def page_code(markdown: str) -> str:
    """The code of every ``{code-cell}`` of a MyST page, its metadata (YAML block, ``:tags:``) left out."""
    lines, code, i = markdown.split("\n"), [], 0
    while i < len(lines):
        if lines[i].startswith("```{code-cell}"):
            i += 1
            if i < len(lines) and lines[i] == "---":
                i = lines.index("---", i + 1) + 1
            while i < len(lines) and not lines[i].startswith("```"):
                if not lines[i].startswith(":"):
                    code.append("pass" if lines[i].lstrip().startswith(("%", "!")) else lines[i])
                i += 1
            code.append("")
        i += 1
    return "\n".join(code)


def choice_calls(code: str) -> list[tuple[str, tuple[str, ...], int]]:
    """``(question, options, answer)`` of every ``Choice(...)`` call in ``code``, read without running it.

    >>> choice_calls('Quiz([Choice("Q?", ["x", "y" "z"], answer=1, why=["", ""])])')
    [('Q?', ('x', 'yz'), 1)]
    """
    calls = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "Choice":
            given = dict(zip(("question", "options", "answer"), node.args, strict=False))  # a call may name them
            given |= {k.arg: k.value for k in node.keywords}
            question, options, answer = (ast.literal_eval(given[k]) for k in ("question", "options", "answer"))
            calls.append((question, tuple(options), answer))
    return calls


def page_questions(root: Path = ROOT) -> list[Question]:
    questions = []
    for page in sorted(root.glob("chapters/*/*.md")):
        for k, (_, options, answer) in enumerate(choice_calls(page_code(page.read_text())), 1):
            questions.append(Question(page.parent.name, "page", f"{page.stem} #{k}", options, answer))
    return questions


def all_questions(root: Path = ROOT) -> list[Question]:
    return graded_questions(root) + page_questions(root)


# --- the measure and the table ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tally:
    label: str
    questions: int
    chance: float  # the mean of 1 / (number of options)
    longest: float  # the share "always pick the longest option" gets right
    letters: Counter[str]

    @property
    def top_share(self) -> float:
        return max(self.letters.values()) / self.questions

    def problems(self) -> list[str]:
        found = []
        if self.longest > self.chance + LONGEST_OVER_CHANCE:
            found.append(f"{self.label}: always picking the longest option scores {self.longest:.0%}, chance "
                         f"{self.chance:.0%} (at most {LONGEST_OVER_CHANCE:.0%} more is fair)")
        letter, count = self.letters.most_common(1)[0]
        if self.top_share > TOP_LETTER_SHARE:
            found.append(f"{self.label}: ({letter}) is the key of {count} of {self.questions} questions "
                         f"({self.top_share:.0%}, at most {TOP_LETTER_SHARE:.0%} is fair)")
        return found


def tally(label: str, questions: Sequence[Question]) -> Tally:
    n = len(questions)
    return Tally(label, n, sum(1 / len(q.options) for q in questions) / n,
                 sum(longest_score(q) for q in questions) / n, Counter(q.letter for q in questions))


def tallies(questions: Sequence[Question]) -> list[Tally]:
    """A row per chapter, then its graded questions and its page quizzes, then the book's totals."""
    rows = []
    for chapter in sorted({q.chapter for q in questions}):
        mine = [q for q in questions if q.chapter == chapter]
        rows.append(tally(chapter, mine))
        for kind, label in (("graded", "  graded"), ("page", "  pages")):
            if part := [q for q in mine if q.kind == kind]:
                rows.append(tally(label, part))
    for kind, label in (("graded", "all graded"), ("page", "all pages")):
        rows.append(tally(label, [q for q in questions if q.kind == kind]))
    rows.append(tally("all", questions))
    return rows


def table(rows: Sequence[Tally]) -> str:
    lines = [f"{'':18}{'questions':>10}{'chance':>8}{'longest':>9}  keys a/b/c/d/e  top letter",
             "-" * 70]
    for r in rows:
        spread = "/".join(str(r.letters.get(letter, 0)) for letter in "abcde")
        lines.append(f"{r.label:18}{r.questions:>10}{r.chance:>8.0%}{r.longest:>9.0%}  {spread:14} "
                     f"{r.top_share:>4.0%}")
    return "\n".join(lines)


def main() -> int:
    rows = tallies(all_questions())
    print(table(rows))
    print(f"\nfair: always-longest at most chance + {LONGEST_OVER_CHANCE:.0%}, no letter the key of more than "
          f"{TOP_LETTER_SHARE:.0%}")
    chapters = [r for r in rows if not r.label.startswith(("  ", "all"))]
    problems = [p for r in chapters for p in r.problems()]
    print("\n".join(problems) if problems else "every chapter is fair")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
