"""The feedback pages' filters: the student's work made inert, the hidden tests hidden, the maths offline.

A feedback page shows a student's notebook to its instructor (in a browser, or
in the formgrader, on the gradebook's origin), so nothing a student wrote may
run there. :func:`safe_cell` rewrites a cell into what cannot: a markdown cell
becomes the HTML nbconvert would render from it, sanitised with ``nh3`` (the
Rust ``ammonia`` sanitiser; bleach, which nbconvert's own ``sanitize_html``
uses, has been deprecated and unmaintained since 2023) with a strict allowlist
(text, headings, lists, tables, code, links to http(s)/mailto/#, images only
``data:`` PNG/JPEG/GIF; no style, event, svg, iframe, form or script), put on
one line inside a ``<div>`` so that nbconvert's second markdown pass passes it
through unchanged (checked for every cell); outputs keep text, PNG and JPEG,
sanitised HTML (markdown as HTML), and lose JavaScript, widgets and SVG (a
one-line note says so). It runs twice, on purpose: ``feedback_notebook.py``
applies it when it writes the autograded notebook, because the formgrader
renders that notebook itself, without our preprocessors; the preprocessor
:class:`SafeStudentWork` applies it again, first, in every ``generate_feedback``,
because a notebook written before this (a kept submission gets its page from
it) or by hand reaches nbgrader too, and before nbconvert validates the
notebook (a tag with a comma would cost the page). nbconvert then re-parses the
whole page with BeautifulSoup; the CSP below is the wall behind both.

>>> print(safe_markdown('*Hi* <img src=x onerror="alert(1)"> [a](javascript:alert(1)) `<b>`'))
<div><p><em>Hi</em> <img> <a rel="noopener noreferrer">a</a> <code>&lt;b&gt;</code></p></div>

In an autograded notebook, the test cells hold their hidden part again (nbgrader
restores it before running), and a traceback quotes the source line that
failed. The preprocessor :class:`HideHiddenTests` removes the hidden region from
every test cell and cuts each error output down to its last line, the check's
own message.

nbgrader's feedback template loads MathJax 2 from a CDN, so a page opened
offline shows raw LaTeX; :func:`finish_page` puts the book's MathJax 3 in its
place, inline (nbgrader's ``release_feedback`` sends students the HTML file
alone, so nothing can sit beside it), and a Content-Security-Policy first in
its head that runs those two scripts alone (by their hashes) and loads nothing:

>>> page = '<html><head><!-- Load mathjax --><script src="https://cdn.example/mathjax.js"></script><!-- End of mathjax '
>>> local = finish_page(page + 'configuration --></head></html>', b"/* MathJax */")
>>> "https://" in local, "<script>/* MathJax */</script>" in local, local.count("'sha256-")
(False, True, 2)
>>> local.startswith('<html lang="en"><head>'), A11Y_STYLE in local
(True, True)
"""

import base64
import hashlib
import html
import json
import re
from pathlib import Path

import nh3
from nbconvert.preprocessors import Preprocessor
from pygments.token import STANDARD_TYPES
from traitlets import Bool

_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S)

# ------------------------------------------------------------------ the student's work, inert

_TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "b", "strong", "i", "em", "u", "s", "del", "ins", "sub",
         "sup", "mark", "small", "q", "blockquote", "code", "pre", "kbd", "samp", "var", "ul", "ol", "li", "dl", "dt",
         "dd", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption", "a", "img", "span", "div", "abbr"}
_GONE = {"script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "math", "textarea", "title",
         "select", "xmp", "noembed", "noframes"}  # tags dropped with what they hold
_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title", "width", "height"}, "abbr": {"title"},
               "th": {"colspan", "rowspan"}, "td": {"colspan", "rowspan"}, "ol": {"start"},
               **{f"h{n}": {"id"} for n in range(1, 7)}}
_CLASSES = {"a": {"anchor-link"}, "div": {"highlight"}, "span": set(STANDARD_TYPES.values()) - {""}}  # Pygments's
_HREF = re.compile(r"(https?://|mailto:|#)", re.I)
_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*", re.I)
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
ID_PREFIX = "user-content-"  # the student's ids and anchors, apart from the page's own


def _attribute(tag: str, name: str, value: str) -> str | None:
    if name == "href":
        if value.startswith("#"):
            return value if value.startswith("#" + ID_PREFIX) else "#" + ID_PREFIX + value[1:]
        return value if _HREF.match(value) else None
    if name == "src":
        return value if _IMAGE.fullmatch(value) else None
    if name == "id":
        return value if value.startswith(ID_PREFIX) else ID_PREFIX + value
    return value


def clean_html(text: str) -> str:
    """``text`` (HTML) with only the allowlist's tags, attributes and URLs."""
    return nh3.clean(text, tags=_TAGS, clean_content_tags=_GONE, attributes=_ATTRIBUTES, attribute_filter=_attribute,
                     url_schemes={"http", "https", "mailto", "data"}, allowed_classes=_CLASSES)


def _markdown(source: str, attachments: dict) -> str:
    """``source`` as nbconvert's HTML exporter renders a markdown cell (its ``markdown2html`` filter)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    return MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments)).render(source)


def _inert(cleaned: str) -> str:
    """Sanitised HTML as one markdown HTML block (one line: a blank line would end it) that renders as itself."""
    cleaned = cleaned.strip().replace("<pre>\n", "<pre>\n\n")  # a parser drops a <pre>'s first newline
    line = cleaned.replace("\n", "&#10;")  # the same text, in <pre> too
    block = line if line.startswith("<div>") and line.endswith("</div>") else f"<div>{line}</div>"
    if _markdown(block, {}).strip() != block:
        raise ValueError(f"sanitised HTML that markdown would change: {block[:200]!r}")
    return block


def _images(attachments: object) -> dict:
    """A cell's attachments that can be shown: PNG, JPEG and GIF, as base64 text."""
    kept = {}
    for name, bundle in (attachments.items() if isinstance(attachments, dict) else ()):
        for mime in ("image/png", "image/jpeg", "image/gif"):
            data = _text(bundle.get(mime)) if isinstance(bundle, dict) else None
            if isinstance(name, str) and data is not None and _BASE64.fullmatch(data):
                kept[name] = {mime: data}
                break
    return kept


def _text(value: object) -> str | None:
    """An output's or attachment's text, as nbformat writes it: a string or a list of them."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return value if isinstance(value, str) else None


def safe_markdown(source: str, attachments: object = None) -> str:
    """A markdown cell's source as inert HTML (its attachments' images inline)."""
    try:
        rendered = _markdown(source, _images(attachments))
    except Exception:  # an attachment missing or malformed: the text as typed
        rendered = f"<pre>{html.escape(source)}</pre>"
    return _inert(clean_html(rendered))


def safe_outputs(outputs: object) -> list:
    """Outputs that cannot run: text, errors, PNG and JPEG, sanitised HTML; no JavaScript, widget or SVG."""
    from nbformat.v4 import new_output

    kept = []
    for out in outputs if isinstance(outputs, list) else []:
        kind = out.get("output_type") if isinstance(out, dict) else None
        if kind == "stream":
            kept.append(new_output("stream", name="stderr" if out.get("name") == "stderr" else "stdout",
                                   text=_text(out.get("text")) or ""))
        elif kind == "error":
            lines = out.get("traceback")
            kept.append(new_output("error", ename=str(out.get("ename", "")), evalue=str(out.get("evalue", "")),
                                   traceback=[str(line) for line in lines] if isinstance(lines, list) else []))
        elif kind in ("display_data", "execute_result"):
            data = out.get("data") if isinstance(out.get("data"), dict) else {}
            shown = {mime: _text(data.get(mime)) for mime in ("text/plain", "image/png", "image/jpeg")}
            shown = {mime: text for mime, text in shown.items()
                     if text is not None and (mime == "text/plain" or _BASE64.fullmatch(text))}
            if (page := _text(data.get("text/html"))) is not None:
                shown["text/html"] = clean_html(page)
            elif (page := _text(data.get("text/markdown"))) is not None:
                shown["text/html"] = safe_markdown(page)
            if "image/svg+xml" in data and not set(shown) - {"text/plain"}:
                shown["text/plain"] = "[an SVG image is left out of this page: SVG can run scripts]\n" + (
                    shown.get("text/plain") or "")
            extra = {"execution_count": None} if kind == "execute_result" else {}
            kept.append(new_output(kind, data=shown or {"text/plain": "[an output this page does not show]"},
                                   **extra))
    return kept


def safe_cell(cell: dict) -> None:
    """Make ``cell`` (an nbformat cell) inert in place: see the module's docstring."""
    meta = given if isinstance(given := cell.get("metadata"), dict) else {}
    tags = [t for t in meta.get("tags", []) if isinstance(t, str) and t and "," not in t] \
        if isinstance(meta.get("tags"), list) else []
    grading = meta.get("nbgrader")
    keep: dict[str, object] = {"tags": list(dict.fromkeys(tags))} if tags else {}  # nbformat: unique, no comma
    if isinstance(grading, dict) and re.fullmatch(r"[\w.-]+", str(grading.get("grade_id"))):
        keep["nbgrader"] = grading  # the template writes the id into the page as it is
    if cell.get("cell_type") == "markdown":
        cell["source"] = safe_markdown(_text(cell.get("source")) or "", cell.pop("attachments", None))
    elif cell.get("cell_type") == "raw":
        cell.pop("attachments", None)
        source = _text(cell.get("source")) or ""  # shown as text, unless it is HTML (sanitised: a second pass keeps it)
        html_raw = str(meta.get("raw_mimetype", "")).lower() == "text/html"
        cell["source"] = _inert(clean_html(source if html_raw else f"<pre>{html.escape(source)}</pre>"))
        keep["raw_mimetype"] = "text/html"
    elif cell.get("cell_type") == "code":
        cell["outputs"] = safe_outputs(cell.get("outputs"))
        cell["execution_count"] = cell.get("execution_count") if type(cell.get("execution_count")) is int else None
    cell["metadata"] = type(cell.get("metadata", {}))(keep) if isinstance(cell.get("metadata"), dict) else keep


class SafeStudentWork(Preprocessor):
    """:func:`safe_cell` on every cell, and the notebook's metadata cut to what the page reads."""
    enabled = Bool(True)  # nbgrader registers feedback preprocessors without enabling them

    def preprocess(self, nb, resources):
        nb.metadata = type(nb.metadata)({k: v for k, v in nb.metadata.items() if k in ("kernelspec", "language_info")
                                         and isinstance(v, dict)})
        for cell in nb.cells:
            safe_cell(cell)
        return nb, resources


# ------------------------------------------------------------------ the page: hidden tests, grades, maths, CSP


class HideHiddenTests(Preprocessor):
    enabled = Bool(True)  # nbgrader registers feedback preprocessors without enabling them

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        cell.source = _HIDDEN.sub("", cell.source).rstrip()
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


QUEUE_NAMES = "students.json"  # feedback_pages.py's queue: {folder name: student id}


def __getattr__(name: str) -> type:
    """``GetGrades``: nbgrader's, reading the student of a queue folder (``feedback_pages.py``) from the queue's
    ``students.json``; made on first use, as importing nbgrader's preprocessors takes seconds."""
    if name != "GetGrades":
        raise AttributeError(name)
    from nbgrader.preprocessors import GetGrades as Nbgraders

    class GetGrades(Nbgraders):
        def preprocess(self, nb, resources):
            folder = Path(resources.get("metadata", {}).get("path") or ".").resolve()  # <queue>/<name>/<assignment>
            names, given = folder.parent.parent / QUEUE_NAMES, resources["nbgrader"]["student"]
            if names.is_file():
                resources["nbgrader"]["student"] = json.loads(names.read_text())[folder.parent.name]
            try:
                return super().preprocess(nb, resources)
            finally:  # nbgrader writes the page into the folder of the student it gave
                resources["nbgrader"]["student"] = given

    globals()["GetGrades"] = GetGrades
    return GetGrades


# MathJax 3's settings for the notebook's maths: $...$ and \(...\) inline, $$...$$ and \[...\] displayed.
_MATHJAX_CONFIG = ("window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], "
                   "displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']], tags: 'ams'}, svg: {fontCache: 'global'}};")
_MATHJAX_BLOCK = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)
_HEAD = re.compile(r"<head>", re.I)
_HTML = re.compile(r"<html(?![^>]*\blang=)", re.I)
_HEAD_END = re.compile(r"</head>", re.I)
# WCAG 2.1 AA where nbgrader's template falls short (tests/test_a11y.py checks a page with axe-core; the code's
# colours are nbgrader_config.py's pygments style): a link is underlined, not told from the text by its colour
# alone (1.4.1); the links of the panels' headings and the late penalty's red reach 4.5:1 (1.4.3): nbgrader's
# #BBBBBB on the cells' blue heading is 2.4:1, Bootstrap's link blue and nbgrader's red on the grey one 4.2:1.
A11Y_STYLE = """a { text-decoration: underline; }
div.panel-default > div.panel-heading a { color: #23527c; }
div.nbgrader_cell.panel-primary > div.panel-heading a { color: #ffffff; }
div.panel-default > div.panel-heading li.late-penalty { color: #b02a24; }"""


def csp(scripts: list[str]) -> str:
    """The page's Content-Security-Policy: its own inline ``scripts`` run, nothing else runs or loads.

    >>> csp(["a"])
    "default-src 'none'; script-src 'sha256-ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs='; style-src 'unsafe-inline'; \
img-src data:; font-src data:; base-uri 'none'; form-action 'none'"
    """
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts)
    return (f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data:; font-src data:; "
            "base-uri 'none'; form-action 'none'")


def finish_page(page: str, script: bytes) -> str:
    """``page`` (a feedback page nbgrader wrote) with MathJax ``script`` inline instead of its CDN's, the
    CSP first in its head, its language (English, for a screen reader) and :data:`A11Y_STYLE` last in its head;
    a page without one MathJax block and one ``<head>`` is refused (ValueError)."""
    blocks = _MATHJAX_BLOCK.findall(page)
    if len(blocks) != 1:
        raise ValueError(f"page: expected nbconvert's MathJax block once, found it {len(blocks)} times")
    if len(_HEAD.findall(page)) != 1:
        raise ValueError(f"page: expected one <head>, found {len(_HEAD.findall(page))}")
    code = re.sub(r"</(script)", r"<\\/\1", script.decode(), flags=re.I)  # nothing in it may end the element
    code = code.replace("\r\n", "\n").replace("\r", "\n")  # as the browser reads it, and hashes it
    meta = f'<meta http-equiv="Content-Security-Policy" content="{csp([_MATHJAX_CONFIG, code])}">'
    page = _HEAD.sub(lambda m: m[0] + "\n" + meta, page)  # first: a meta CSP covers what comes after it
    page = _HTML.sub('<html lang="en"', page, count=1)
    page = _HEAD_END.sub(lambda m: f"<style>\n{A11Y_STYLE}\n</style>\n" + m[0], page, count=1)  # after nbgrader's
    return page.replace(blocks[0], f"<script>{_MATHJAX_CONFIG}</script>\n<script>{code}</script>")
