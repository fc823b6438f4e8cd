"""Feedback pages against hostile submissions (issue 36): nothing a student wrote runs when the instructor opens
their page, and every student gets one, whatever their id or their cells' tags.

A catalogue of payloads, each of which would set a marker when it runs (the
page's title becomes PWNED, an element ``pwned-<payload>`` appears) or would
leave live markup behind (a ``javascript:`` or ``data:`` link, an SVG, a frame,
a form, a style sheet of its own, a third script). The fast tests run the
sanitiser and the Content-Security-Policy on their own; the slow ones build the
autograded notebooks as ``attnbook-course grade`` does (``feedback_notebook``), and
also as a notebook written before the fix or by hand would be (only the
``generate_feedback`` preprocessor between it and the page), run nbgrader's
``generate_feedback`` once through ``feedback_pages.write_pages`` on a small
state folder (a gradebook made with nbgrader's API, no grading), and open every
page in headless Chromium, after load.
"""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import html.parser
import json
import os
import re
from pathlib import Path

import browser
import feedback_state
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from attnbook_course import feedback_filters, feedback_notebook, feedback_pages, notes
from attnbook_course.notes import Note

ROOT = Path(__file__).resolve().parent.parent

ASSIGNMENT = "hostile"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def mark(name: str, quotes: bool = False, where: str = "") -> str:
    """JavaScript that sets the markers of payload ``name`` (``where``: ``parent.`` from a frame); without
    quotes unless ``quotes`` (it sits in attributes), without a slash if it has them (a file name)."""
    text = (lambda s: f"'{s}'") if quotes else (lambda s: f"/{s}/.source")
    return (f"{where}document.title={text('PWNED')};{where}document.body.appendChild(Object.assign("
            f"{where}document.createElement({text('b')}),{{id:{text('pwned-' + name)}}}))")


def svg(name: str) -> str:
    return f'<svg xmlns="http://www.w3.org/2000/svg" onload="{mark(name)}"><rect width="9" height="9"/></svg>'


# Each payload: where it goes (a markdown cell, a raw cell, the notice's file name, an attachment, an output,
# the judge's message) and what. Outputs reach a page only from a notebook not written by feedback_notebook.
PAYLOADS = {
    "script": ("markdown", f"<script>{mark('script')}</script>"),
    "img-onerror": ("markdown", f'<img src=x onerror="{mark("img-onerror")}">'),
    "svg-onload": ("markdown", svg("svg-onload")),
    "iframe-srcdoc": ("markdown", f'<iframe srcdoc="<script>{mark("iframe-srcdoc", where="parent.")}</script>">'
                                  "</iframe>"),
    "javascript-link": ("markdown", f"[click](javascript:{mark('javascript-link')})"),
    "data-link": ("markdown", '<a href="data:text/html,<script>alert(1)</script>">open</a>'),
    "style-hides": ("markdown", "<style>#notebook-container {display: none} /* PWNED-STYLE */</style>"),
    "noscript-mxss": ("markdown", f'<noscript><p title="</noscript><img src=x onerror={mark("noscript-mxss")}>">'
                                  "</noscript>"),
    "math-mxss": ("markdown", f"<math><mtext><table><mglyph><style><img src=x onerror=\"{mark('math-mxss')}\">"
                              "</style></mglyph></table></mtext></math>"),
    "id-clobber": ("markdown", '<h2 id="pwned-id-clobber">a heading with an id of its own</h2>'),
    "meta-refresh": ("markdown", f'<meta http-equiv="refresh" content="0;url=javascript:{mark("meta-refresh")}">'),
    "form": ("markdown", f'<form><button formaction="javascript:{mark("form")}">go</button></form>'),
    "raw-cell": ("raw", f"<script>{mark('raw-cell')}</script>"),
    "attachment-svg": ("attachment", svg("attachment-svg")),
    "notice-filename": ("notice", f"x`<img src=x onerror=\"{mark('notice-filename', quotes=True)}\">`.ipynb"),
    "judge-message": ("judge", f'<img src=x onerror="{mark("judge-message")}">'),
    "html-output": ("output", {"text/html": f"<b>bold</b><script>{mark('html-output')}</script>"}),
    "js-output": ("output", {"application/javascript": mark("js-output")}),
    "svg-output": ("output", {"image/svg+xml": svg("svg-output"), "text/plain": "<Figure>"}),
    "markdown-output": ("output", {"text/markdown": f'<img src=x onerror="{mark("markdown-output")}">'}),
    "widget-output": ("output", {"application/vnd.jupyter.widget-view+json": {"model_id": "1", "version_major": 2,
                                                                             "version_minor": 0}}),
    "png-width": ("output", {"image/png": "AAAA"}),  # its metadata's width: see student_notebook
}
SAFE_MIMES = {"text/plain", "text/html", "image/png", "image/jpeg"}
IDS = ["[ab]", "x*", "xa", "q?", "eve.json", "<b>", "tags-comma"]  # globs, a name like a file, markup, a tag "a,b"
BENIGN = ("# Benign heading\n\nA table:\n\n| name | value |\n|------|-------|\n| `x_i` | $x^2$ |\n\n"
          f"An image: ![dot](data:image/png;base64,{PNG}) and [a link](https://example.org).")


def markers(dom: str) -> list[str]:
    """What of the catalogue's markers a page's DOM (after load) shows: ran, or left live."""
    found = [f"ran: {m}" for m in re.findall(r'id="(pwned-[\w-]+)"', dom)]
    found += ["ran: title"] if re.search(r"<title>\s*PWNED", dom) else []
    checks = {"javascript: or data: URL": r"""(href|src|action|formaction)\s*=\s*["']?\s*(javascript|data:text)""",
              "SVG": r'<svg[^>]*\son\w+=|<rect width="9"|data:image/svg',  # MathJax's own SVGs are fine
              "frame or object": r"<(iframe|object|embed|frame)[\s>]", "form": r"<form[\s>]",
              "refresh": r"<meta[^>]+refresh", "own style sheet": r"<style[^>]*>[^<]*PWNED-STYLE"}
    found += [f"live: {what}" for what, pattern in checks.items() if re.search(pattern, dom, re.I)]
    scripts = len(re.findall(r"<script[\s>]", dom, re.I))
    return found + ([f"live: {scripts} scripts"] if scripts > 2 else [])  # MathJax's settings and MathJax


# ------------------------------------------------------------------ the sanitiser and the CSP on their own


@pytest.mark.parametrize("name", [n for n, (kind, _) in PAYLOADS.items() if kind in ("markdown", "raw", "notice")])
def test_markdown_payloads_come_out_inert(name):
    kind, payload = PAYLOADS[name]
    source = notes.notice([Note("misnamed", payload)], None) \
        if kind == "notice" else payload
    cell = (new_raw_cell if kind == "raw" else new_markdown_cell)(source)
    feedback_filters.safe_cell(cell)
    assert not markers(cell.source), cell.source
    assert not re.search(r"<(script|svg|iframe|style|form|meta|math|noscript)|<[a-z][^>]*\son\w+\s*=", cell.source)
    again = nbformat.from_dict(json.loads(json.dumps(cell)))
    feedback_filters.safe_cell(again)  # the preprocessor's second pass changes nothing
    assert again.source == cell.source
    rendered = feedback_filters._markdown(cell.source, {})  # what the page's template makes of it
    assert rendered.strip() == cell.source


def test_outputs_keep_text_and_images_only():
    outputs = [new_output("display_data", data=data) for kind, data in PAYLOADS.values() if kind == "output"]
    outputs[-1]["metadata"] = {"width": "1 onerror=x()", "image/png": {"width": "1 onerror=x()"}}
    outputs.append(new_output("stream", name="stdout", text="<b>as typed</b>"))
    kept = feedback_filters.safe_outputs(outputs)
    assert all(set(o.get("data", {})) <= SAFE_MIMES and not o.get("metadata") for o in kept)
    html_out, js_out, svg_out, md_out, widget_out, png_out, stream = kept
    assert html_out["data"]["text/html"] == "<b>bold</b>"
    assert js_out["data"] == widget_out["data"] == {"text/plain": "[an output this page does not show]"}
    assert svg_out["data"]["text/plain"].startswith("[an SVG image is left out of this page")
    assert md_out["data"]["text/html"] == "<div><img></div>" and png_out["data"] == {"image/png": "AAAA"}
    assert stream["text"] == "<b>as typed</b>"  # the template escapes it


def test_cell_metadata_keeps_only_valid_tags_and_plain_grade_ids():
    cell = new_code_cell("x = 1")
    cell.metadata.update({"tags": ["a,b", "ok", "ok", ""], "nbgrader": {"grade_id": '"><b>'}, "jupyter": {}})
    feedback_filters.safe_cell(cell)
    assert cell.metadata == {"tags": ["ok"]}
    nbformat.validate(new_notebook(cells=[cell]))


class _Scripts(html.parser.HTMLParser):
    """The inline scripts of a page, and its CSP."""

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.scripts, self.csp, self._in = [], [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "meta" and attrs.get("http-equiv", "").lower() == "content-security-policy":
            self.csp.append(attrs["content"])
        if tag == "script":
            assert "src" not in attrs, attrs
            self._in = []

    def handle_data(self, data):
        if self._in is not None:
            self._in.append(data)

    def handle_endtag(self, tag):
        if tag == "script":
            self.scripts.append("".join(self._in))
            self._in = None


def check_csp(page: str) -> str:
    """Assert that ``page`` has one CSP, first in its head, that runs exactly its inline scripts."""
    parser = _Scripts()
    parser.feed(page)
    assert len(parser.csp) == 1, parser.csp
    assert re.search(r"<head>\s*<meta http-equiv=\"Content-Security-Policy\"", page)
    policy = dict((d.split()[0], d.split()[1:]) for d in parser.csp[0].split(";"))
    hashes = {f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in parser.scripts}
    assert set(policy["script-src"]) == hashes and len(parser.scripts) == 2, (policy, len(parser.scripts))
    assert policy["default-src"] == ["'none'"] and policy["img-src"] == ["data:"] and policy["font-src"] == ["data:"]
    assert policy["style-src"] == ["'unsafe-inline'"] and not {"connect-src", "frame-src", "object-src"} & set(policy)
    return parser.csp[0]


def test_csp_runs_exactly_the_pages_own_scripts():
    page = ('<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8"/>\n<title>exercises</title>\n'
            '<!-- Load mathjax --><script src="https://cdn/MathJax.js"></script><script type="text/x-mathjax-config">'
            "MathJax.Hub.Config({});</script><!-- End of mathjax configuration --></head><body>$x$</body></html>")
    script = feedback_pages._book_assets().mathjax()
    finished = feedback_filters.finish_page(page, script)
    check_csp(finished)
    assert script.decode() in finished and "https://cdn/MathJax.js" not in finished
    for broken in (page.replace("<!-- Load mathjax -->", ""), page.replace("<head>", ""), page + page):
        with pytest.raises(ValueError, match="page: expected"):  # never a page left without its CSP
            feedback_filters.finish_page(broken, script)


# ------------------------------------------------------------------ pages made by nbgrader, opened in Chromium


def released_notebook():
    """A small released notebook: a markdown cell, a solution cell and a test cell."""
    meta = {"schema_version": 3, "locked": False, "solution": True, "grade": False, "grade_id": "answer"}
    test = {"schema_version": 3, "locked": True, "solution": False, "grade": True, "grade_id": "test_answer",
            "points": 1}
    return new_notebook(cells=[new_markdown_cell("# Exercise\n\nWrite `answer`."),
                               new_code_cell("# YOUR CODE HERE", metadata={"nbgrader": meta}),
                               new_code_cell("check(answer)", metadata={"nbgrader": test})],
                        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})


def student_notebook(released, extra_cells=(), outputs=()):
    nb = nbformat.reads(nbformat.writes(released), as_version=4)
    nb.cells[1].source = "answer = 42"
    nb.cells[1].outputs = list(outputs)
    nb.cells.extend(extra_cells)
    return nb


def submissions(released) -> dict[str, tuple]:
    """student -> (autograded notebook, the judge's message), for every page the slow tests read."""
    judge = "judge: fine & dandy <ok>"
    made = {}

    def grader(nb, message=judge, notice=None):  # as attnbook-course grade writes it
        parts = {"test_answer": {"score": 1.0, "max_score": 1.0, "message": message}}
        return feedback_notebook.feedback_notebook(nb, parts, released, notice), message

    raw_cells = []
    for name, (kind, payload) in PAYLOADS.items():
        if kind == "markdown":
            raw_cells.append(new_markdown_cell(payload))
            made[name] = grader(student_notebook(released, [new_markdown_cell(payload)]))
        elif kind == "raw":
            raw_cells.append(new_raw_cell(payload))
            made[name] = grader(student_notebook(released, [new_raw_cell(payload)]))
        elif kind == "attachment":
            cell = new_markdown_cell("![picture](attachment:p.svg)")
            cell["attachments"] = {"p.svg": {"image/svg+xml": base64.b64encode(payload.encode()).decode()}}
            raw_cells.append(cell)
            made[name] = grader(student_notebook(released, [cell]))
        elif kind == "notice":
            made[name] = grader(student_notebook(released), notice=notes.notice([Note("misnamed", payload)], None))
        elif kind == "judge":
            made[name] = grader(student_notebook(released), message=payload)
        else:  # an autograded notebook that feedback_notebook did not write: the preprocessor alone
            out = new_output("display_data", data=payload)
            if name == "png-width":
                out["metadata"] = {"image/png": {"width": f"1 onerror={mark(name)}"}}
            made[name] = student_notebook(released, outputs=[out]), judge
    outputs = [new_output("display_data", data=p) for kind, p in PAYLOADS.values() if kind == "output"]
    made["unfiltered"] = student_notebook(released, raw_cells, outputs), judge  # every payload, preprocessor only
    made["benign"] = grader(student_notebook(released, [new_markdown_cell(BENIGN)]))
    for student in IDS:
        nb = student_notebook(released, [new_markdown_cell(BENIGN)])
        if student == "tags-comma":
            nb.cells[0].metadata["tags"] = ["a,b"]
        made[student] = grader(nb, message=f"judge's words for {student}")
    return made


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """A state folder with a gradebook and the autograded notebooks of :func:`submissions`, its pages written
    by ``feedback_pages.write_pages``: (state, what write_pages answered, the submissions)."""
    state = tmp_path_factory.mktemp("hostile-state")
    released = released_notebook()
    made = submissions(released)
    written = feedback_state.write_feedback(state, ASSIGNMENT, {s: nb for s, (nb, _) in made.items()}, 1.0)
    return state, written, made


def page_of(state: Path, student: str) -> Path:
    return state / "feedback" / student / ASSIGNMENT / "exercises.html"


@pytest.mark.slow
def test_every_student_gets_a_page(pages):
    state, written, made = pages
    assert (len(written.wanted), len(written.written), written.missing) == (len(made), len(made), {}), written
    assert f"({len(made)} pages wanted, {len(made)} written)" in written.log
    for student in IDS:  # each page is that student's own: a glob never picks another's notebook
        assert f"judge's words for {student}".replace("<", "&lt;").replace(">", "&gt;") in \
            page_of(state, student).read_text(), student
    line, problems = feedback_pages.report(state, [{"student": s, "assignment": ASSIGNMENT} for s in made], written)
    assert (line, problems) == (f"feedback pages: {len(made)} for {len(made)} submissions graded "
                                f"({len(made)} of {len(made)} written now)", [])
    page_of(state, "q?").unlink()  # a page gone: named, with a reason
    assert feedback_pages.report(state, [{"student": "q?", "assignment": ASSIGNMENT}], written)[1] == [
        f"no feedback page for q?/{ASSIGNMENT}: not written"]


@pytest.mark.slow
@pytest.mark.skipif(browser.CHROMIUM is None and os.environ.get("CI") != "true", reason="needs Chromium (CI has it)")
def test_no_payload_runs_or_stays_live_in_chromium(pages):
    state, _, made = pages
    hostile = [s for s in made if s in PAYLOADS or s == "unfiltered"]
    for student in hostile:
        check_csp(page_of(state, student).read_text())
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        doms = dict(zip(hostile, pool.map(lambda s: browser.dom_after_load(page_of(state, s), 5000), hostile),
                        strict=True))
    found = {student: markers(dom) for student, dom in doms.items() if markers(dom)}
    assert found == {}, found
    assert "Your notebook was named <code>x`&lt;img src=x onerror=" in doms["notice-filename"]  # as text


@pytest.mark.slow
@pytest.mark.skipif(browser.CHROMIUM is None and os.environ.get("CI") != "true", reason="needs Chromium (CI has it)")
def test_a_benign_page_shows_the_students_work_and_the_maths(pages):
    state, _, _ = pages
    dom = browser.dom_after_load(page_of(state, "benign"), 5000)
    assert markers(dom) == []
    assert re.search(r'<h1 id="user-content-Benign-heading">Benign heading', dom)
    assert re.search(r"<table>.*<code>x_i</code>.*</table>", dom, re.S)
    assert re.search(rf'<img (alt="dot" )?src="data:image/png;base64,{re.escape(PNG)}"( alt="dot")?>', dom)
    assert '<a href="https://example.org" rel="noopener noreferrer">a link</a>' in dom
    assert "judge: fine &amp; dandy &lt;ok&gt;" in dom  # the judge's words, as text
    assert "<mjx-container" in dom and "$x^2$" not in dom  # MathJax ran under the CSP: the maths is typeset
