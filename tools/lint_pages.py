"""Check the built HTML book for what a reader trips over; run by ``make book`` after the build.

    python tools/lint_pages.py [_build/html]

A page fails when it has

* an ``<img>`` without alt text that says what it shows (missing, a few characters, or a file name);
* a script loaded from outside the book (the HTML book must work offline);
* an executed output with a traceback, a warning or anything on stderr, or the stray
  repr of a matplotlib object that a cell's last line returned;
* a printed output line, or a line of code, wider than 80 characters (it would scroll);
* a display equation too wide for the column (estimated from its TeX: about
  :data:`MAX_EQUATION_GLYPHS` rendered symbols on one line).

Exit status 1 and one line per problem when any page fails.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parent.parent
MAX_OUTPUT_COLUMNS = 80
MAX_EQUATION_GLYPHS = 68
WIDE_CODE_PAGES = {"api.html"}
_FILE_NAME = re.compile(r"^[\w./-]+\.(png|jpe?g|svg|gif)$", re.I)
_WARNING = re.compile(r"Traceback \(most recent call last\)|\b\w*Warning: ")
_STRAY = re.compile(r"^\(?(Text|Line2D)\(|^\[?<matplotlib\.", re.M)  # the repr of a cell's last value


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
    for output in soup.select("div.cell_output"):
        if output.select(".stderr, .traceback, .output.error"):
            problems.append("an executed output has an error or stderr: " + output.get_text()[:80].strip())
            continue
        for pre in output.find_all("pre"):
            text = pre.get_text()
            if _WARNING.search(text):
                problems.append("an executed output has a warning: " + _WARNING.search(text).group(0))
            if _STRAY.search(text):
                problems.append("an output shows a stray value: " + _STRAY.search(text).group(0))
            wide = [line for line in text.splitlines() if len(line) > MAX_OUTPUT_COLUMNS]
            if wide:
                problems.append(f"printed line of {len(wide[0])} characters: {wide[0][:50]}…")
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
