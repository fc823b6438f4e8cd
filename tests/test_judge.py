"""The judge and its sandboxed worker, on a small part: routes to the reference, crashes, limits, data.

Each test starts a real worker (in bubblewrap when it is installed) and judges
one tiny part -- ``sdpa(q, k, v) -> (out, weights)`` -- on one student source.
"""

import importlib
import math
import pkgutil
import sys
import types
from pathlib import Path

import pytest
import torch

import attnbook.grading
from attnbook.grading import _refuse
from attnbook.grading._compare import close, require_tensor
from attnbook.grading._core import private_modules, run_student
from attnbook.grading.engine import Case, Part
from attnbook.grading.errors import CheckFailed
from attnbook.grading.transformer._common import ATTENTION_KERNELS
from attnbook_course import _wire, judge, notes, sandbox, submission
from attnbook_course.notes import Note
from attnbook_course.plan import Cell, Test

(ATT,) = private_modules("attnbook.attention")
ROOT = Path(__file__).resolve().parent.parent


def _inputs(seed):
    def make():
        g = torch.Generator().manual_seed(seed)
        q = torch.randn(1, 3, 4, generator=g, dtype=torch.float64)
        k = torch.randn(1, 4, 3, generator=g).transpose(1, 2)  # (1, 3, 4), non-contiguous
        return q, k.double(), torch.randn(1, 3, 2, generator=g, dtype=torch.float64)
    return make


def _check(fn):
    def one(q, k, v):
        before = q.clone()
        result = run_student(fn, q, k, v, what="sdpa")
        out = require_tensor(result[0], "out")
        if not torch.equal(q, before):
            raise CheckFailed("sdpa changed q in place")
        if not close(out, ATT.scaled_dot_product_attention(q, k, v)[0]):
            raise CheckFailed("out is wrong")
    return one


PART = Part("check_sdpa", (Case("visible", _inputs(0)),), _check,
            forbidden=("attnbook.attention.scaled_dot_product_attention",
                       "torch.nn.functional.scaled_dot_product_attention"),
            kernels=ATTENTION_KERNELS,
            own_hidden=(Case("a", _inputs(1)), Case("b", _inputs(2))))
GOOD = """import math, torch
def sdpa(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1)
    return w @ v, w
"""


def grade(source, tmp_path, monkeypatch, seconds=20, part=PART, name="sdpa", points=3):
    """Judge ``source`` on ``part`` (its function ``name``) in a real worker: (result, what it reached)."""
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", str(seconds))
    judgement = judge.Judgement(judge.open_worker(tmp_path, [ROOT]), budget=600)
    try:
        calls = (judge.TestCall(part, (name,), None), judge.TestCall(part, (name,), points))
        result, report = judgement.part([source], calls, points)
    finally:
        judgement.worker.close()
    return result, report


def test_a_right_answer_gets_full_marks(tmp_path, monkeypatch):
    result, report = grade(GOOD, tmp_path, monkeypatch)
    assert result.score == 3.0 and "All 3 checks passed." in result.message
    assert report.notes == [] and report.called == set()


def test_partial_credit_and_changes_in_place_are_seen(tmp_path, monkeypatch):
    source = GOOD.replace("    w = ", "    q.mul_(1.0 if q.dtype == torch.float64 and q.shape[0] else 1)\n    w = ")
    assert grade(source, tmp_path, monkeypatch)[0].score == 3.0
    inplace = GOOD.replace("    w = ", "    q.add_(1.0)\n    w = ")
    result, _ = grade(inplace, tmp_path, monkeypatch)
    assert result.score == 0 and "changed q in place" in result.message


@pytest.mark.parametrize("source", [
    "from attnbook.attention import scaled_dot_product_attention as f\ndef sdpa(q, k, v):\n    return f(q, k, v)",
    "import attnbook.attention as a, types\nf = a.scaled_dot_product_attention\n"
    "sdpa = types.FunctionType(f.__code__, f.__globals__, \"f\", f.__defaults__)",
    "import importlib, attnbook.attention as a\nsdpa = importlib.reload(a).scaled_dot_product_attention",
    "import torch\ndef sdpa(q, k, v):\n    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v)",
    "import torch.nn.functional as F\ndef sdpa(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v), None",
    "import torch\ndef sdpa(q, k, v):\n    out = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu("
    "q[:, None], k[:, None], v[:, None])\n    return out[0][:, 0], None",  # a CPU kernel, not a decomposition
    "from torch._C._nn import scaled_dot_product_attention as f\ndef sdpa(q, k, v):\n    return f(q, k, v), None",
], ids=["alias", "clone", "reload", "math-kernel", "fused", "cpu-kernel", "fused-re-export"])
def test_no_route_reaches_the_reference(source, tmp_path, monkeypatch):
    result, report = grade(source, tmp_path, monkeypatch)
    assert result.score == 0 and "calls the reference implementation" in result.message
    assert report.called


def test_the_references_source_is_not_in_the_worker(tmp_path, monkeypatch):
    source = ("import inspect, attnbook.attention as a\n"
              "def sdpa(q, k, v):\n    raise RuntimeError(repr(inspect.getsource(a.scaled_dot_product_attention)))")
    result, _ = grade(source, tmp_path, monkeypatch)
    assert result.score == 0 and "sqrt" not in result.message  # no source, or only the stub


@pytest.mark.parametrize("source, status", [
    ("import os\ndef sdpa(q, k, v):\n    os._exit(3)", "ended the worker (exit 3)"),
    ("import torch\ndef sdpa(q, k, v):\n    x = torch.ones(2**36)\n    return x, x", "memory limit exceeded"),
    ("def sdpa(q, k, v):\n    while True:\n        pass", "time limit exceeded"),
], ids=["exit", "memory", "time"])
def test_a_crash_costs_the_part_and_says_why(source, status, tmp_path, monkeypatch):
    result, report = grade(source, tmp_path, monkeypatch, seconds=5)
    assert result.score == 0 and any(status in n.status() for n in report.notes), report.notes


def test_a_slow_start_of_the_worker_costs_no_part_its_time(tmp_path, monkeypatch):
    """A busy machine that takes 4 s to start the worker (sandbox, torch) does not fail a 3-second part."""
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "3")
    worker = judge.open_worker(tmp_path, [ROOT])
    script = worker.command.index("-I") + 1  # python -I _worker.py ...: the same worker, 4 s late
    worker.command[script:script] = ["-c", "import runpy, sys, time; time.sleep(4); sys.argv = sys.argv[1:]; "
                                           "runpy.run_path(sys.argv[0], run_name='__main__')"]
    try:
        calls = (judge.TestCall(PART, ("sdpa",), 3),)
        result, report = judge.Judgement(worker, budget=600).part([GOOD], calls, 3)
    finally:
        worker.close()
    assert result.score == 3.0 and report.notes == [], (result.message, report.notes)


def test_a_library_a_part_imported_is_loaded_before_the_next_parts_child(tmp_path, monkeypatch):
    """A heavy module of the course's (``_wire.PRELOADS``) that one part's child imported is imported by the
    worker's host before it forks the next part's child: once, not once per part."""
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "20")
    loaded = "import sys\nloaded = 'sklearn.datasets' in sys.modules\n" + GOOD.replace(
        "return w @ v, w", "return (w @ v) * (1 if loaded else 2), w")
    calls = (judge.TestCall(PART, ("sdpa",), 3),)
    worker = judge.open_worker(tmp_path, [ROOT])
    judgement = judge.Judgement(worker, budget=600)
    try:
        scores = [judgement.part([source], calls, 3)[0].score
                  for source in (loaded, "import sklearn.datasets\n" + GOOD, loaded)]
    finally:
        worker.close()
    assert scores == [0.0, 3.0, 3.0] and "sklearn.datasets" in worker.preload


def test_an_error_in_the_worker_names_the_students_line(tmp_path, monkeypatch):
    source = "import torch\ndef sdpa(q, k, v):\n    w = q @ k\n    return w @ v, w"  # (B, T, d) @ (B, T, d)
    result, _ = grade(source, tmp_path, monkeypatch)
    assert result.score == 0 and "sdpa raised RuntimeError" in result.message, result.message
    assert "(line 3 of your cell: `w = q @ k`)" in result.message, result.message


MASKED_SDPA = """import math, torch
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, -1)
    return w @ v, w
"""
SDPA_TEST = ("from attnbook.grading.transformer import check_scaled_dot_product_attention\n"
             "check_scaled_dot_product_attention(scaled_dot_product_attention)")
HANG = "while True:\n    pass"


def test_cells_that_hang_cost_one_time_limit_not_one_per_part(monkeypatch):
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "5")
    plan = [Cell(MASKED_SDPA), Test("before", SDPA_TEST, 2), Cell(HANG),
            Test("hangs", SDPA_TEST, 2), Test("after", SDPA_TEST, 2)]
    results, statuses = judge.grade_cells(submission.planned(plan), [ROOT])
    assert results["before"].score == 2.0
    assert results["hangs"].score == 0 and "time limit exceeded in the notebook's cells" in results["hangs"].message
    assert results["after"].score == 0
    assert results["after"].message == judge.FAILED_CELLS.format("ran past the time limit (5 s)")  # not run
    assert notes.status(statuses) == "time limit exceeded in the notebook's cells"


def test_cells_that_end_the_worker_are_not_run_again_for_later_parts(monkeypatch):
    """A cell that ends the worker's child (here: exits it; a forged frame makes the judge kill the whole
    worker) would do so again for every later part: those parts score 0 without running, and say why; a part
    before it is graded."""
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "20")
    plan = [Cell(MASKED_SDPA), Test("before", SDPA_TEST, 2), Cell("import os\nos._exit(3)"),
            Test("dies", SDPA_TEST, 2), Test("after", SDPA_TEST, 2), Test("later", SDPA_TEST, 2)]
    starts = []
    start = judge.Worker._start
    monkeypatch.setattr(judge.Worker, "_start", lambda self, end_by: (starts.append(1), start(self, end_by))[1])
    results, statuses = judge.grade_cells(submission.planned(plan), [ROOT])
    assert results["before"].score == 2.0 and results["dies"].score == 0
    how = "could not run (the student's code ended the worker (exit 3))"
    assert [results[p].message for p in ("after", "later")] == [judge.FAILED_CELLS.format(how)] * 2, results
    assert len(starts) == 1
    assert statuses and all("ended" in n.text or "broke off" in n.text for n in statuses), statuses


def test_a_function_that_hangs_costs_its_part_only(monkeypatch):
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "5")
    hangs = "def scaled_dot_product_attention(q, k, v, mask=None):\n    " + HANG.replace("\n", "\n    ")
    plan = [Cell(hangs), Test("hangs", SDPA_TEST, 2), Cell(MASKED_SDPA), Test("fixed", SDPA_TEST, 2)]
    results, statuses = judge.grade_cells(submission.planned(plan), [ROOT])
    assert results["hangs"].score == 0 and results["hangs"].message.endswith("time limit exceeded.")
    assert statuses == [Note("limit", "time limit exceeded")]  # in the check's call, not in the cells
    assert results["fixed"].score == 2.0  # the cells ran in time: the later part is graded


def test_a_part_built_on_a_wrong_earlier_part_is_judged_again_with_the_solutions(monkeypatch):
    """Part 1 divides by d_k; Parts 2 and 3 call it. Part 2, right on its own, gets full marks with a note
    naming Part 1; Part 3 gains partial credit there and what its code raises in that run is not shown;
    Part 4, wrong on its own too, keeps its first grade; Part 5 does not call Part 1 and is not judged
    again."""
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "30")
    runs = []
    judged = judge.Judgement.part
    monkeypatch.setattr(judge.Judgement, "part", lambda self, cells, *args, **kwargs:
                        runs.append(len(cells)) or judged(self, cells, *args, **kwargs))
    wrong = MASKED_SDPA.replace("/ math.sqrt(q.shape[-1])", "/ q.shape[-1]")
    built = {
        "built_on_it": "def attend(q, k, v, mask=None):\n    return scaled_dot_product_attention(q, k, v, mask)",
        "leaky": ("def attend(q, k, v, mask=None):\n    if q.shape[0] == 1:  # a batch of one: hidden cases only\n"
                  "        raise RuntimeError('SECRET ' + repr(scaled_dot_product_attention.__code__.co_consts))\n"
                  "    return scaled_dot_product_attention(q, k, v, mask)"),
        "own_mistake": ("def attend(q, k, v, mask=None):\n    out, w = scaled_dot_product_attention(q, k, v, mask)\n"
                        "    return 2 * out, w"),
        "alone": "def attend(q, k, v, mask=None):\n    return q, q",
    }
    plan = [Cell(wrong, own=True, solution=MASKED_SDPA), Test("own", SDPA_TEST, 3)]
    test = SDPA_TEST.replace("(scaled_dot_product_attention)", "(attend)")
    test += "\ncheck_scaled_dot_product_attention(attend, points=3)"  # the hidden cases too
    for gid, source in built.items():
        plan += [Cell(source, own=True, solution=source), Test(gid, test, 3)]
    results, statuses = judge.grade_cells(submission.planned(plan), [ROOT])
    assert results["own"].score == 0 and "divided by d_k" in results["own"].message
    assert results["built_on_it"].score == 3.0
    assert results["built_on_it"].message.startswith(
        "Part 2 matches when your Part 1 is replaced by the reference: fix Part 1.\n")
    assert 0 < results["leaky"].score < 3 and "Part 3 scores more" in results["leaky"].message
    # the line of the student's own cell is shown; what it raised (the reference's constants) is not
    assert "SECRET (" not in results["leaky"].message and "not shown" in results["leaky"].message
    assert "line 3 of your cell" in results["leaky"].message
    assert results["own_mistake"].score == 0 and "replaced" not in results["own_mistake"].message
    assert results["alone"].score == 0 and statuses == []
    assert len(runs) == 8  # five parts, three of them again: the rerun has the one cell more
    assert runs[2] == runs[1] + 1 and runs[4] == runs[3] + 1 and runs[6] == runs[5] + 1


@pytest.mark.skipif(sandbox.isolation() == "none", reason="bubblewrap is not installed here")
def test_the_course_files_are_out_of_reach(tmp_path, monkeypatch):
    """Whatever the sandbox shows at the checkout's path (nothing, or an empty folder where the clone sits
    under a mounted /tmp), the course's files cannot be listed or read, and the code runs as nobody."""
    reference = str(ROOT / "src" / "attnbook" / "attention.py")
    source = ("import os\ndef sdpa(q, k, v):\n"
              "    try:\n"
              f"        listed = os.listdir({str(ROOT)!r})\n"
              "    except OSError:\n"
              "        listed = []\n"
              "    try:\n"
              f"        read = len(open({reference!r}).read()) > 0\n"
              "    except OSError:\n"
              "        read = False\n"
              "    raise RuntimeError(f'listed={listed} uid={os.getuid()} read={read}')")
    result, _ = grade(source, tmp_path, monkeypatch)
    assert "uid=65534 read=False" in result.message, result.message
    assert "solutions" not in result.message and "src" not in result.message.split("listed=")[1].split("uid=")[0]


def test_wire_refuses_to_build_anything_outside_attnbook():
    with pytest.raises(_wire.WireError, match="only attnbook objects"):
        _wire.decode({"$build": ["os.system", {"$dict": []}]}, handles={})
    assert isinstance(_wire.decode({"$opaque": "Evil"}), _wire.Opaque)


def test_test_cells_may_only_call_checks():
    with pytest.raises(ValueError, match="may only import checks"):
        judge.parse_test_cell("from attnbook.grading.transformer import check_masks\nimport os\ncheck_masks(a, b)")


def test_the_worker_package_lacks_the_forbidden_code_and_the_checks():
    sources, packages = judge.package_sources(("attnbook.attention.scaled_dot_product_attention",))
    assert "math.sqrt" not in sources["attnbook.attention"].split("def scaled_dot_product_attention")[1][:300]
    assert "attnbook.grading.fixtures" in sources and "attnbook.grading.engine" not in sources
    assert not any(name.startswith("attnbook.grading.transformer") for name in sources)
    assert "attnbook" in packages and math.isfinite(len(sources))


def test_a_re_exported_reference_is_stubbed_where_it_is_defined():
    """attnbook.gpt re-exports generate from attnbook.gpt.sampling: the stub goes there, named as forbidden."""
    sources, _ = judge.package_sources(("attnbook.gpt.generate",))
    body = sources["attnbook.gpt.sampling"].split("def generate")[1].split("\ndef ")[0]
    assert "reference_called('attnbook.gpt.generate')" in body and "multinomial" not in body
    assert sources["attnbook.gpt"] == (judge.PACKAGE / "gpt" / "__init__.py").read_text()


def _token_count(seed):
    return lambda: ("aaabdaaabac" * (seed + 1),)


def _check_count(fn):
    def one(text):
        if run_student(fn, text, what="count") != len(text):
            raise CheckFailed("the count is wrong")
    return one


TOKENIZER_PART = Part("check_count", (Case("visible", _token_count(0)),), _check_count,
                      forbidden=("tokenizers.Tokenizer", "tokenizers.models.BPE"),
                      own_hidden=(Case("a", _token_count(1)),))


@pytest.mark.parametrize("route", ["tokenizers.Tokenizer", "tokenizers.tokenizers.Tokenizer"])
def test_a_compiled_class_is_trapped_under_every_name(route, tmp_path, monkeypatch):
    """tokenizers' Tokenizer is Rust: its methods cannot be replaced, so each name it has is."""
    source = (f"import tokenizers, tokenizers.models\ndef count(text):\n"
              f"    {route}(tokenizers.models.BPE())\n    return len(text)")
    result, report = grade(source, tmp_path, monkeypatch, part=TOKENIZER_PART, name="count", points=2)
    assert result.score == 0 and "calls the reference implementation" in result.message
    assert report.called


SCIPY_PART = Part("check_count", (Case("visible", _token_count(0)),), _check_count,
                  forbidden=("scipy.optimize.linear_sum_assignment",), own_hidden=(Case("a", _token_count(1)),))


@pytest.mark.parametrize("route", ["scipy.optimize._lsap", "scipy.optimize._qap"])
def test_a_function_is_refused_in_every_module_that_holds_it(route, tmp_path, monkeypatch):
    """The part names SciPy's public name; the function is also held by its defining module and by another
    module that imported it, and the worker refuses it there too."""
    source = (f"import numpy as np\nfrom {route} import linear_sum_assignment as solve\ndef count(text):\n"
              f"    solve(np.zeros((1, 1)))\n    return len(text)")
    result, report = grade(source, tmp_path, monkeypatch, part=SCIPY_PART, name="count", points=2)
    assert result.score == 0 and "calls the reference implementation" in result.message
    assert report.called == {"scipy.optimize.linear_sum_assignment"}


def _every_part() -> list[Part]:
    chapters = [importlib.import_module(f"attnbook.grading.{m.name}")
                for m in pkgutil.iter_modules(attnbook.grading.__path__) if m.ispkg]
    return [p for chapter in chapters for p in vars(chapter).values() if isinstance(p, Part)]


def _is_stub(obj: object) -> bool:
    return isinstance(obj, types.FunctionType) and obj.__module__ == _refuse.__name__ and obj.__name__ == "stub"


def test_every_name_a_part_refuses_outside_attnbook_is_refused_and_put_back():
    """What the worker does for good (attnbook's own names are stripped from its sources instead), the
    student's kernel does around each call: the same function, so it is checked here once for every part,
    compiled classes (tokenizers', tiktoken's) included."""
    for part in _every_part():
        outside = [path for path in part.forbidden if not path.startswith("attnbook.")]
        before = {path: getattr(importlib.import_module(path.rsplit(".", 1)[0]), path.rsplit(".", 1)[1])
                  for path in outside}
        refusal = _refuse.refuse(outside, part.kernels)
        try:
            for path in outside:
                module, attr = path.rsplit(".", 1)
                now = getattr(importlib.import_module(module), attr)
                methods = [v for v in vars(now).values() if isinstance(v, types.FunctionType)] \
                    if isinstance(now, type) else []
                assert _is_stub(now) or (methods and all(map(_is_stub, methods))), (part.name, path)
            if part.kernels:
                with pytest.raises(_refuse.ReferenceCalled, match="kernel"):
                    torch.ops.aten.scaled_dot_product_attention(*torch.randn(3, 1, 2, 4))
        finally:
            refusal.undo()
        for path, original in before.items():
            module, attr = path.rsplit(".", 1)
            assert getattr(importlib.import_module(module), attr) is original, path
            if isinstance(original, type):
                assert not any(map(_is_stub, vars(original).values())), path
    torch.nn.functional.scaled_dot_product_attention(*torch.randn(3, 1, 2, 4))


def test_a_model_crosses_with_its_frozen_parameters_frozen():
    """A case may hand the student a model frozen beforehand (chapter 3's freezing part): the worker's copy
    keeps each parameter's requires_grad, as well as its weights."""
    from attnbook.bert import BertConfig, BertModel

    model = BertModel(BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=16, max_position_embeddings=8))
    model.embeddings.requires_grad_(False)
    copy = _wire.decode(_wire.encode(model), handles={})  # as the worker decodes it
    frozen = {n for n, p in copy.named_parameters() if not p.requires_grad}
    assert frozen == {n for n, p in model.named_parameters() if not p.requires_grad} and frozen
    assert all(torch.equal(a, b) for a, b in zip(copy.state_dict().values(), model.state_dict().values(), strict=True))


NUMPY_COUNT = """import numpy as np
def alignment_params(query_size, key_size, attn_size, method="additive"):
    if method == "additive":
        return np.int64(query_size * attn_size + key_size * attn_size + 2 * attn_size)
    return np.int64(query_size * key_size if method == "general" else 0)
"""


def test_a_numpy_number_counts_at_hand_in_as_in_the_notebook(tmp_path, monkeypatch):
    """A count returned as a NumPy integer passes the visible check in the kernel (``numbers.Integral``); the
    worker sends it to the judge as the number it is, so it scores the same at hand-in."""
    from attnbook.grading.rnn import check_alignment_params

    namespace: dict = {}
    exec(NUMPY_COUNT, namespace)
    assert check_alignment_params(namespace["alignment_params"]) is None  # the kernel's visible check
    result, _ = grade(NUMPY_COUNT, tmp_path, monkeypatch, part=check_alignment_params, name="alignment_params",
                      points=2)
    assert result.score == 2.0, result.message


@pytest.mark.skipif(sandbox.isolation() == "none", reason="bubblewrap is not installed here")
def test_a_part_sees_nothing_an_earlier_parts_process_left(tmp_path, monkeypatch):
    """An earlier part's process may read what its statement allows (a reference a later part refuses) and
    leave a copy in /tmp or /dev/shm, or a process that writes one later: the next part's child starts with
    both folders empty and no process of the earlier part alive."""
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "20")
    worker = judge.open_worker(tmp_path, [ROOT])
    leave = ("import subprocess, sys\n"
             "open('/tmp/reference.py', 'w').write('copied')\nopen('/dev/shm/copy', 'w').write('copied')\n"
             "subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True:\\n"
             "    open(\"/tmp/late\", \"w\").write(\"x\"); time.sleep(0.05)'], start_new_session=True)\n"
             "import time; time.sleep(0.5)\nleft = 1")
    look = ("import os\nleft = sorted(os.listdir('/tmp')) + sorted(os.listdir('/dev/shm'))\n"
            "alive = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid(), os.getppid())]")
    try:
        assert worker.start_part(judge.package_sources(()), [leave], ["left"], [], []) == {"left": 1}
        worker.end_part()
        seen = worker.start_part(judge.package_sources(()), [look], ["left", "alive"], [], [])
        worker.end_part()
    finally:
        worker.close()
    # A checkout (or its interpreter) under /tmp is bound read-only in the sandbox, on its own path: not a leftover.
    binds = {Path(p).resolve().relative_to("/tmp").parts[0] for p in (ROOT, sys.prefix)
             if Path(p).resolve().is_relative_to("/tmp")}
    assert {"left": [n for n in seen["left"] if n not in binds], "alive": seen["alive"]} == \
        {"left": [], "alive": []}, seen


META_COUNT = """import torch
from attnbook.gpt import GPT, GPTConfig
def gpt_params(vocab_size, block_size, n_embd, n_layer):
    with torch.device("meta"):
        model = GPT(GPTConfig(vocab_size=vocab_size, block_size=block_size, n_embd=n_embd, n_layer=n_layer))
    return sum(p.numel() for p in model.parameters() if p is not model.lm_head.weight)
"""


def test_a_count_by_reasoning_builds_no_model_at_hand_in_as_in_the_notebook(tmp_path, monkeypatch):
    """Chapter 4's Part 7 asks for a count by reasoning; a GPT built on the meta device and counted while the
    student's function runs is refused in the kernel and in the worker alike, though a cell may build one."""
    from attnbook.grading.errors import CheckFailed
    from attnbook.grading.gpt import check_gpt_params

    namespace: dict = {}
    exec(META_COUNT, namespace)
    with pytest.raises(CheckFailed, match="attnbook.gpt.model.GPT"):
        check_gpt_params(namespace["gpt_params"])
    built_in_a_cell = ("import torch\nfrom attnbook.gpt import GPT, GPTConfig\n"
                       "GPT(GPTConfig(vocab_size=10, block_size=4, n_embd=8, n_layer=1, n_head=2))\n")
    result, report = grade(built_in_a_cell + META_COUNT, tmp_path, monkeypatch, part=check_gpt_params,
                           name="gpt_params", points=2)
    assert result.score == 0 and "attnbook.gpt.model.GPT" in result.message, result.message
    assert report.called == {"attnbook.gpt.model.GPT"}
