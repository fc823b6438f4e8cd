"""Check the built HTML book for what a reader trips over; run by ``make book`` after the build.

    python tools/lint_pages.py [_build/html]

A page fails when it has

* an ``<img>`` without alt text that says what it shows (missing, a few characters, or a file name);
* a script loaded from outside the book (the HTML book must work offline);
* an executed output with a traceback, a warning or anything on stderr, or the stray
  repr of a matplotlib object that a cell's last line returned;
* a printed output line, or a line of code, wider than 80 characters (it would scroll);
* the same output line (of more than 20 characters) printed more than 3 times on the page, like a header
  that a loop repeats;
* a Markdown table shown as a paragraph of pipes (its source was not parsed as a table);
* a control character (tab, bell, backspace, vertical tab, form feed) in the prose or the maths, the mark
  of a Python string that read ``\\text`` or ``\\top`` as ``\\t`` and lost the backslash;
* a display equation too wide for the column (estimated from its TeX: about
  :data:`MAX_EQUATION_GLYPHS` rendered symbols on one line).

Exit status 1 and one line per problem when any page fails.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString

ROOT = Path(__file__).resolve().parent.parent
MAX_OUTPUT_COLUMNS = 80
MAX_EQUATION_GLYPHS = 68
MAX_REPEATS = 3            # the same output line at most this often on a page...
MIN_REPEATED_LENGTH = 21   # ...counting only lines this long (short ones, like "done" or a rule, may repeat)
WIDE_CODE_PAGES = {"api.html"}
_FILE_NAME = re.compile(r"^[\w./-]+\.(png|jpe?g|svg|gif)$", re.I)
_WARNING = re.compile(r"Traceback \(most recent call last\)|\b\w*Warning: ")
_STRAY = re.compile(r"^\(?(Text|Line2D)\(|^\[?<matplotlib\.", re.M)  # the repr of a cell's last value
_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.M)
_TABLE_RULE = re.compile(r"\|[ \t]*:?(-{3,}|[–—]-*):?[ \t]*\|")  # Sphinx makes --- an em dash
_CONTROL = re.compile(r"[\t\x07\x08\x0b\x0c]")
_NOT_PROSE_TAGS = {"pre", "code", "kbd", "samp", "script", "style", "textarea"}
_NOT_PROSE_CLASSES = {"highlight", "cell_input", "cell_output"}


def equation_glyphs(tex: str) -> int:
    """A rough count of the symbols of the widest line of a display equation.

    >>> equation_glyphs(r"\\mathrm{softmax}(x)_i = \\frac{e^{x_i}}{\\sum_j e^{x_j}}")
    21
    """
    tex = tex.strip().removeprefix(r"\[").removesuffix(r"\]")
    widest = 0
    for line in re.split(r"\\\\|\\begin\{[a-z*]+\}|\\end\{[a-z*]+\}", tex):
        line = re.sub(r"\\(left|right|big|Big|bigg|Bigg)\b", "", line)
        line = re.sub(r"\\(mathrm|text|mathbf|operatorname|mathcal|mathbb)\{([^{}]*)\}", r"\2", line)
        line = re.sub(r"\\(quad|qquad)\b", "xx", line)
        line = re.sub(r"\\[a-zA-Z]+", "x", line)        # one symbol per command
        line = re.sub(r"[\s{}&^_]|\\[,;:! ]", "", line)  # layout only
        widest = max(widest, len(line))
    return widest


def is_table_as_text(text: str) -> bool:
    """Whether a paragraph's text is a Markdown table that was never parsed as one.

    >>> is_table_as_text("| a | b |\\n| --- | --- |\\n| 1 | 2 |")
    True
    >>> is_table_as_text("| a | b | | — | — | | 1 | 2 |")  # on one line, its --- made a dash
    True
    >>> is_table_as_text("the mean of -ln P(y | x), where | x | is the length")
    False
    """
    return len(_TABLE_ROW.findall(text)) >= 2 or bool(_TABLE_RULE.search(text))


def repeated_lines(outputs: list[str]) -> list[tuple[str, int]]:
    """The output lines of a page printed more than :data:`MAX_REPEATS` times, with how often.

    Lines of up to 20 characters are left alone, and so is the indentation of a line.

    >>> header = "benchmark: python bench.py on 2 cores"
    >>> repeated_lines([header + "\\nstep 1", header + "\\nstep 2", header, header])
    [('benchmark: python bench.py on 2 cores', 4)]
    >>> repeated_lines(["-" * 20 + "\\nok"] * 5)
    []
    """
    counts = Counter(line.strip() for text in outputs for line in text.splitlines())
    return [(line, n) for line, n in counts.items() if len(line) >= MIN_REPEATED_LENGTH and n > MAX_REPEATS]


def control_characters(soup: BeautifulSoup) -> list[str]:
    """The stretches of prose or maths that hold a control character; code and outputs are left alone.

    >>> control_characters(BeautifulSoup('<p>$X^\\top X$ <code>a\\tb</code></p>', "html.parser"))
    ['$X^\\top X$']
    """
    found = []
    for text in (soup.body or soup).find_all(string=_CONTROL):
        if type(text) is not NavigableString or re.fullmatch(r"[ \t\r\n]*", text):
            continue  # a comment, or the layout between tags
        if any(parent.name in _NOT_PROSE_TAGS or _NOT_PROSE_CLASSES & set(parent.get("class") or [])
               for parent in text.parents):
            continue
        where = _CONTROL.search(text).start()
        found.append(text[max(0, where - 30):where + 30].strip(" \n"))
    return found


def lint_page(html: str, *, code: bool = True) -> list[str]:
    """The problems of one page, each in words; ``code=False`` leaves the width of code lines alone.

    >>> lint_page('<img src="a.png" alt="a.png"><script src="https://cdn.x/y.js"></script>')
    ['image without a description (alt="a.png")', 'script from outside the book: https://cdn.x/y.js']
    """
    soup = BeautifulSoup(html, "html.parser")
    problems = []
    for img in soup.find_all("img"):
        if img.find_parent(class_="dropdown-launch-buttons"):
            continue  # the theme's launch-button icons, each beside its name
        alt = (img.get("alt") or "").strip()
        if len(alt) < 12 or _FILE_NAME.match(alt):
            problems.append(f'image without a description (alt="{alt}")')
    for script in soup.find_all("script", src=True):
        if re.match(r"^(https?:)?//", script["src"]):
            problems.append(f"script from outside the book: {script['src']}")
    printed = []
    for output in soup.select("div.cell_output"):
        if output.select(".stderr, .traceback, .output.error"):
            problems.append("an executed output has an error or stderr: " + output.get_text()[:80].strip())
            continue
        for pre in output.find_all("pre"):
            text = pre.get_text()
            printed.append(text)
            if _WARNING.search(text):
                problems.append("an executed output has a warning: " + _WARNING.search(text).group(0))
            if _STRAY.search(text):
                problems.append("an output shows a stray value: " + _STRAY.search(text).group(0))
            wide = [line for line in text.splitlines() if len(line) > MAX_OUTPUT_COLUMNS]
            if wide:
                problems.append(f"printed line of {len(wide[0])} characters: {wide[0][:50]}…")
    for line, times in repeated_lines(printed):
        problems.append(f"an output line printed {times} times: {line[:50]}")
    for block in soup.select("div.highlight pre") if code else []:
        if block.find_parent("div", class_="cell_output"):
            continue  # outputs are checked above
        wide = [line for line in block.get_text().splitlines() if len(line) > MAX_OUTPUT_COLUMNS]
        if wide:
            problems.append(f"code line of {len(wide[0])} characters: {wide[0][:50]}…")
    for math in soup.select("div.math"):
        glyphs = equation_glyphs(math.get_text())
        if glyphs > MAX_EQUATION_GLYPHS:
            problems.append(f"display equation of ~{glyphs} symbols on one line: {math.get_text()[:50].strip()}…")
    for paragraph in soup.find_all("p"):
        if is_table_as_text(paragraph.get_text()):
            problems.append("a Markdown table shown as text: " + " ".join(paragraph.get_text().split())[:50] + "…")
    for text in control_characters(soup):
        problems.append(f"a control character in the text: {text!r}")
    return problems


def main(argv: list[str]) -> int:
    site = Path(argv[0]) if argv else ROOT / "_build" / "html"
    skip = {"_static", "_sources", "_modules", "genindex.html", "py-modindex.html", "search.html"}
    pages = sorted(p for p in site.rglob("*.html") if not skip & set(p.parts))
    if not pages:
        print(f"no built pages under {site}", file=sys.stderr)
        return 2
    failed = 0
    for page in pages:
        # the API reference shows the package's docstrings, written to its 120 columns
        for problem in lint_page(page.read_text(errors="replace"), code=page.name not in WIDE_CODE_PAGES):
            print(f"{page.relative_to(site)}: {problem}")
            failed += 1
    print(f"{len(pages)} pages checked, {failed} problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
