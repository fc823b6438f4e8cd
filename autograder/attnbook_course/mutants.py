"""Mutation testing of the graded parts: which small edits of a solution do the checks catch?

For every answer cell of a chapter's solution notebook, the operators of
`cosmic-ray <https://github.com/sixty-north/cosmic-ray>`_ make one small edit
at a time: ``+`` for ``-``, ``<`` for ``<=``, a number nudged, ``not`` added,
``break`` for ``continue``, a loop that never runs. Each edited cell, a
*mutant*, is graded as a student's answer by the cell's test cells, with every
case, visible and hidden, here in this process (the instructor's own code: no
sandbox needed). A mutant is

* **killed** when a test cell scores below full marks (or its check raises),
* **broken** when the edited cell itself fails to run (killed by Python, not by a check),
* **survived** when every test cell gives full marks: either the edit does not
  change what the code computes (an equivalent mutant: say so beside the
  part's cases) or no case exercises what it broke (add a hidden case).

Beside cosmic-ray's, each part has *rule mutants*, written by hand in
``autograder/mutation/rules/<assignment>.py``: ``RULES = {"<answer cell>": [(rule, old, new), ...]}``,
one for each rule the part's statement states (each special id, each argument's non-default value,
each axis, "whatever their state before"), each the solution cell with ``old`` (found there exactly
once) replaced by ``new`` so that only that rule is broken. Every rule mutant must be killed, and
*seen*: failed by a visible check, which the student runs before handing in (tests/test_mutants.py
grades them all); ``--messages`` prints what that check tells the student.

    attnbook-course mutants 02-transformer                 # every answer cell of a chapter
    attnbook-course mutants 02-transformer --cells sdpa_solution --out /tmp/m
    attnbook-course mutants 01-rnn-attention 02-transformer --rules   # only the rule mutants
    attnbook-course mutants 04-gpt-bpe --rules --messages  # and what each one's visible check says

Each chapter has its own two files, so that runs of different chapters never write the same one:
``OUT/<assignment>.csv`` (a ``# command | machine | date`` line per run that made it, then one row per
answer cell: its mutants, those graded -- all of them unless ``--sample N`` -- killed, survived,
broken, the score, and ``rules``, its rule mutants killed/total; ``seen`` and ``rules_seen``, those a
visible check fails) and ``OUT/<assignment>-survivors.md``
(the diff of every surviving mutant, rule mutants in a ``· rules`` section). A whole chapter's run
rewrites them; with ``--cells`` or ``--rules`` only the rows and survivors of what was run change. The
score of a cell is killed / (killed + survived); broken mutants are counted apart.

>>> sorted({op.split("/")[1] for op, _ in mutants("y = x + 1")})[:2]
['NumberReplacer', 'ReplaceBinaryOperator_Add_BitAnd']
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import difflib
import io
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import torch
from cosmic_ray.mutating import mutate_code
from cosmic_ray.plugins import get_operator, operator_names

from attnbook.grading import hidden_cases
from attnbook.measure import machine_header

from . import GRADER, HIDDEN_CASES, ROOT, judge
from .inprocess import quietly, run_cell

RULES = GRADER / "mutation" / "rules"  # <assignment>.py: the hand-written rule mutants
SECONDS = 10  # a mutant that runs longer than this (a loop that never ends) is killed by the clock


@dataclass
class CellScore:
    """What the mutants of one answer cell did."""

    assignment: str
    cell: str
    tests: list[str]
    mutants: int = 0  # all the cell's mutants; more than those graded when sampled
    killed: int = 0
    seen: int = 0  # of the killed, those a visible check fails: the student learns of it before handing in
    broken: int = 0
    survivors: list[str] = field(default_factory=list)  # unified diffs
    hidden_only: list[str] = field(default_factory=list)  # killed, but the visible checks pass it: diff, then why

    @property
    def score(self) -> float:
        graded = self.killed + len(self.survivors)
        return self.killed / graded if graded else 1.0


@dataclass
class RuleScore:
    """What the hand-written rule mutants of one answer cell did: each must be killed."""

    assignment: str
    cell: str
    total: int = 0
    killed: int = 0
    seen: int = 0  # of the killed, those a visible check fails
    survivors: list[str] = field(default_factory=list)  # "survived: rule" or "broken: rule", then the diff
    unseen: list[str] = field(default_factory=list)  # the rules killed by hidden cases only
    said: dict[str, str] = field(default_factory=dict)  # rule -> what its visible check tells the student


def mutants(source: str) -> Iterator[tuple[str, str]]:
    """Every distinct one-edit mutant of ``source`` as (operator, code), from cosmic-ray's core operators."""
    seen = {source}
    for name in operator_names():
        operator = get_operator(name)
        if operator.arguments():  # operators that need settings (variable replacers) are left out
            continue
        for occurrence in range(1000):
            code = mutate_code(source, operator(), occurrence)
            if code is None:
                break
            if code not in seen:
                seen.add(code)
                yield name, code


@contextlib.contextmanager
def _clock(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in this (main) thread after ``seconds``, then again every 0.2 s until the block ends.

    A check that turns the first TimeoutError into a failed case goes on to its
    next case; a mutant that loops there too must be stopped again.
    """
    def ring(signum, frame):
        raise TimeoutError(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.2)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _grade(namespace: dict, calls: tuple[judge.TestCall, ...], points: float) -> float:
    """The points a test cell gives the objects in ``namespace``, as the judge scores it, quietly."""
    with quietly():
        try:
            return judge.score_test_cell(calls, namespace, points)[0]
        except Exception:  # a check that fails on what a mutant returned: no points
            return 0.0


def _hidden_failure(namespace: dict, tests: list[tuple[tuple[judge.TestCall, ...], float]]) -> str:
    """The words of the first test cell that gives the objects in ``namespace`` less than full marks: for a
    mutant the visible checks pass, the hidden cases that fail it."""
    for calls, points in tests:
        printed = io.StringIO()
        with quietly(), contextlib.redirect_stdout(printed):
            try:
                score, words = judge.score_test_cell(calls, namespace, points)
            except Exception as err:
                return f"a check could not handle what it returned ({type(err).__name__})"
        if score < points:  # partial credit prints "- <case>: <why>" for each failing case
            cases = [line[2:].split(":")[0] for line in printed.getvalue().splitlines() if line.startswith("- ")]
            return words or "; ".join(cases)
    return "(none when graded again: the first grading ran past its clock, or its outcome varies)"


def _visible_failure(namespace: dict, calls: tuple[judge.TestCall, ...], points: float) -> str | None:
    """What a test cell's visible calls tell the student about the objects in ``namespace``: None when they
    pass, else the failure's words (a check that breaks on what it was given says so)."""
    visible = [c for c in calls if c.points is None]
    with quietly():
        try:
            score, words = judge.score_test_cell(visible, namespace, points)
        except TimeoutError:
            return "over the time limit"
        except Exception as err:
            return f"the check could not handle what it returned ({type(err).__name__})"
    return None if score >= points else words


class Notebook:
    """A solution notebook run once; its answer cells, the locked cells after each, and its test cells.

    An answer cell's test cells are those between it and the next answer cell,
    as nbgrader lays a notebook out; the locked cells there (helpers that call
    the answer, examples) run again after each mutant.
    """

    def __init__(self, assignment: str):
        path = ROOT / "solutions" / assignment / "exercises.ipynb"
        if not path.exists():
            raise ValueError(f"assignment {assignment!r}: no {path.relative_to(ROOT)}")
        hidden_cases.default_to(HIDDEN_CASES)  # every case, visible and hidden, as the class is graded
        self.assignment = assignment
        self.answers: dict[str, str] = {}
        self.after: dict[str, list[str]] = {}  # answer cell -> the locked cells that follow it
        self.tests_of: dict[str, list[str]] = {}  # answer cell -> its test cells
        self.tests: dict[str, tuple[tuple[judge.TestCall, ...], float]] = {}
        self.namespace: dict = {"__name__": "__main__"}
        current = None
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code":
                continue
            if meta.get("grade"):
                self.tests[meta["grade_id"]] = judge.parse_test_cell(cell.source), meta["points"]
                if current:
                    self.tests_of[current].append(meta["grade_id"])
                continue
            if meta.get("solution"):
                current = meta["grade_id"]
                self.answers[current], self.after[current], self.tests_of[current] = cell.source, [], []
            elif current:
                self.after[current].append(cell.source)
            run_cell(cell.source, self.namespace, meta.get("grade_id", "cell"))

    def grade(self, cell: str, code: str) -> str:
        """``"killed"``, ``"broken"`` or ``"survived"``: ``code`` in place of the answer cell ``cell``,
        graded as a student's answer by the cell's test cells; ``"seen"`` for one killed that a visible check,
        which the student runs before handing in, already fails (what it says is then in ``self.said``; for one
        killed by hidden cases only, what they say)."""
        namespace = dict(self.namespace)  # earlier parts' objects keep the unmutated globals
        try:
            with _clock(SECONDS):
                run_cell(code, namespace, f"mutant of {cell}")
        except Exception:
            return "broken"
        for source in self.after[cell]:  # the cells that call it; one that raises stops nothing
            with contextlib.suppress(Exception), _clock(SECONDS):
                run_cell(source, namespace, f"after {cell}")
        tests = self.tests_of[cell]
        try:
            with _clock(SECONDS):
                full = all(_grade(namespace, *self.tests[t]) >= self.tests[t][1] for t in tests)
        except TimeoutError:
            full = False
        if full:
            return "survived"
        self.said = "over the time limit"
        try:
            with _clock(SECONDS):
                for test in tests:
                    said = _visible_failure(namespace, *self.tests[test])
                    if said is not None:
                        self.said = said
                        return "seen"
        except TimeoutError:
            return "seen"
        try:
            with _clock(SECONDS):
                self.said = _hidden_failure(namespace, [self.tests[t] for t in tests])
        except TimeoutError:
            self.said = "over the time limit, in the hidden cases"
        return "killed"

    def _check_cell(self, cell: str) -> None:
        if cell not in self.answers:
            raise ValueError(f"{self.assignment}: no answer cell {cell!r}; there are {sorted(self.answers)}")

    def score(self, cell: str, sample: int | None = None) -> CellScore:
        """Grade every mutant of the answer cell ``cell`` by its test cells (``sample``: at most that many,
        evenly spaced through the list, for a cell whose mutants loop until the clock stops them)."""
        self._check_cell(cell)
        result = CellScore(self.assignment, cell, self.tests_of[cell])
        original = self.answers[cell]
        every = list(mutants(original))
        result.mutants = len(every)
        if sample is not None and len(every) > sample:
            every = [every[round(i * len(every) / sample)] for i in range(sample)]
        for operator, code in every:
            outcome = self.grade(cell, code)
            if outcome == "survived":
                result.survivors.append(f"{operator}\n" + _diff(original, code))
            elif outcome in ("killed", "seen"):
                result.killed += 1
                result.seen += outcome == "seen"
                if outcome == "killed":
                    result.hidden_only.append(f"{operator}\n" + _diff(original, code) + "\n# killed by: "
                                              + " ".join(self.said.split()))
            else:
                result.broken += 1
        return result

    def rule_mutant(self, cell: str, old: str, new: str) -> str:
        """The answer cell ``cell`` with ``old``, which must occur in it exactly once, replaced by ``new``."""
        self._check_cell(cell)
        source = self.answers[cell]
        if source.count(old) != 1:
            raise ValueError(f"{self.assignment} {cell}: {old!r} occurs {source.count(old)} times in the "
                             "solution cell, not once")
        return source.replace(old, new)

    def score_rules(self, cell: str, rules: list[tuple[str, str, str]]) -> RuleScore:
        """Grade the hand-written mutant of each rule of ``cell`` (``(rule, old, new)``)."""
        result = RuleScore(self.assignment, cell, total=len(rules))
        for rule, old, new in rules:
            code = self.rule_mutant(cell, old, new)
            outcome = self.grade(cell, code)
            if outcome in ("killed", "seen"):
                result.killed += 1
                result.seen += outcome == "seen"
                result.unseen += [rule] if outcome == "killed" else []
                if outcome == "seen":
                    result.said[rule] = self.said
            else:
                result.survivors.append(f"{outcome}: {rule}\n" + _diff(self.answers[cell], code))
        return result


def _diff(original: str, code: str) -> str:
    return "\n".join(list(difflib.unified_diff(original.splitlines(), code.splitlines(), lineterm="", n=1))[2:])


def load_rules(assignment: str, folder: Path = RULES) -> dict[str, list[tuple[str, str, str]]]:
    """``RULES`` of ``folder/<assignment>.py``: answer cell -> its rule mutants ``(rule, old, new)``; {} if none."""
    path = folder / f"{assignment}.py"
    if not path.exists():
        return {}
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    rules = namespace["RULES"]
    for cell, triples in rules.items():
        for triple in triples:
            if not (isinstance(triple, tuple) and len(triple) == 3 and all(isinstance(t, str) for t in triple)):
                raise ValueError(f"{path.name} {cell}: a rule mutant is (rule, old, new), not {triple!r}")
    return rules


# --- the chapter's files: OUT/<assignment>.csv and OUT/<assignment>-survivors.md -----------------------------

COLUMNS = ["assignment", "cell", "tests", "mutants", "graded", "killed", "seen", "survived", "broken", "score", "rules",
           "rules_seen"]  # seen: killed, and failing a visible check too (blank: not measured yet)
_SECTION = re.compile(r"^## (?P<assignment>\S+) · (?P<cell>\S+)(?: · (?P<kind>rules|hidden cases only))? \(\d+\)$")
KINDS = ("", "rules", "hidden cases only")  # the survivors' sections of a cell: cosmic-ray's, the rule mutants',
# and cosmic-ray mutants killed by hidden cases only (the visible checks pass them)


@dataclass
class Chapter:
    """What a chapter's two files hold: the header lines, a row per answer cell, the survivors' blocks."""

    assignment: str
    header: list[str] = field(default_factory=list)  # "# command | machine | date" lines, oldest first
    rows: dict[str, dict[str, str]] = field(default_factory=dict)
    survivors: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (cell, one of KINDS) -> blocks

    @classmethod
    def read(cls, out: Path, assignment: str) -> Chapter:
        chapter = cls(assignment)
        table = out / f"{assignment}.csv"
        if table.exists():
            lines = table.read_text().splitlines()
            chapter.header = [line for line in lines if line.startswith("#")]
            for row in csv.DictReader(line for line in lines if not line.startswith("#")):
                chapter.rows[row["cell"]] = {c: row.get(c) or "" for c in COLUMNS}
        notes = out / f"{assignment}-survivors.md"
        if notes.exists():
            for block in re.split(r"\n(?=## )", notes.read_text()):
                first, _, body = block.partition("\n")
                match = _SECTION.match(first)
                if match:
                    key = (match["cell"], match["kind"] or "")
                    chapter.survivors[key] = re.findall(r"```diff\n(.*?)\n```", body, flags=re.S)
        return chapter

    def update(self, score: CellScore | RuleScore) -> None:
        row = self.rows.setdefault(score.cell, dict.fromkeys(COLUMNS, ""))
        row["assignment"], row["cell"] = self.assignment, score.cell
        if isinstance(score, CellScore):
            row.update(tests=" ".join(score.tests), mutants=str(score.mutants), seen=str(score.seen),
                       graded=str(score.killed + len(score.survivors) + score.broken), killed=str(score.killed),
                       survived=str(len(score.survivors)), broken=str(score.broken), score=f"{score.score:.3f}")
            self.survivors[(score.cell, "")] = list(score.survivors)
            self.survivors[(score.cell, "hidden cases only")] = list(score.hidden_only)
        else:
            row["rules"], row["rules_seen"] = f"{score.killed}/{score.total}", f"{score.seen}/{score.total}"
            self.survivors[(score.cell, "rules")] = list(score.survivors)

    def write(self, out: Path, order: list[str]) -> None:
        """The two files, rows in ``order`` (the notebook's) and then any other cell already there."""
        out.mkdir(parents=True, exist_ok=True)
        cells = [c for c in order if c in self.rows] + [c for c in self.rows if c not in order]
        with open(out / f"{self.assignment}.csv", "w", newline="") as f:
            f.write("".join(line + "\n" for line in self.header))
            w = csv.writer(f)
            w.writerow(COLUMNS)
            for cell in cells:
                w.writerow([self.rows[cell][c] for c in COLUMNS])
        with open(out / f"{self.assignment}-survivors.md", "w") as f:
            f.write(f"# Surviving mutants of {self.assignment}\n\n"
                    "Each block is one mutant that scored full marks: a cosmic-ray mutant's first line names its\n"
                    "operator, a rule mutant's (autograder/mutation/rules/) the rule it breaks. A survivor that\n"
                    "computes the same thing as the solution, under the part's statement, is explained in a comment\n"
                    "beside the part's cases in autograder/hidden/; any other needs a hidden case. A block in a\n"
                    "'hidden cases only' section was killed, but the visible checks pass it: its last line says\n"
                    "which hidden cases fail it (other sizes, dtypes, seeds than the visible ones). Made by\n\n")
            f.write("".join(f"- `{line.removeprefix('# ')}`\n" for line in self.header))
            for cell in cells:
                for kind in KINDS:
                    blocks = self.survivors.get((cell, kind))
                    if blocks:
                        f.write(f"\n## {self.assignment} · {cell}{' · ' + kind if kind else ''} ({len(blocks)})\n")
                        f.write("".join(f"\n```diff\n{b}\n```\n" for b in blocks))


def run(args: argparse.Namespace) -> int:
    """``attnbook-course mutants``: grade the mutants ``args`` ask for and write their tables (headed by
    ``args.command_line``)."""
    torch.set_num_threads(1)
    header = machine_header("cpu", command=args.command_line)
    chosen = args.assignments or sorted(p.parent.name for p in (ROOT / "solutions").glob("*/exercises.ipynb"))
    for assignment in chosen:
        notebook = Notebook(assignment)
        rules = load_rules(assignment)
        chapter = Chapter.read(args.out, assignment)
        whole = not args.cells and not args.rules  # the whole chapter: its header starts again
        chapter.header = [header] if whole else [*chapter.header, header.replace("# ", "# then: ", 1)]
        if whole:
            chapter.rows, chapter.survivors = {}, {}
        for cell in args.cells or notebook.answers:
            if not args.rules:
                s = notebook.score(cell, args.sample)
                chapter.update(s)
                print(f"{assignment} {cell}: {s.killed} killed ({s.seen} by a visible check), {len(s.survivors)} "
                      f"survived, {s.broken} broken, score {s.score:.2f}", flush=True)
            r = notebook.score_rules(cell, rules.get(cell, []))
            chapter.update(r)
            print(f"{assignment} {cell}: rule mutants {r.killed}/{r.total} killed, {r.seen}/{r.total} by a visible "
                  "check" + "".join(f"\n    hidden cases only: {rule}" for rule in r.unseen), flush=True)
            for rule, said in r.said.items() if args.messages else ():
                print(f"    {rule}: {said}", flush=True)
            chapter.write(args.out, list(notebook.answers))  # after every cell: a long run can be read as it goes
    return 0
