"""tools/lint_pages.py, the check that make book runs on the built pages, on pages made up here."""

import doctest
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("lint_pages", Path(__file__).parents[1] / "tools" / "lint_pages.py")
lint = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lint)


def page(body: str) -> str:
    return f"<html><head></head><body>{body}</body></html>"


def test_its_examples():
    assert doctest.testmod(lint).failed == 0


def test_a_clean_page_passes():
    body = ('<img src="x.png" alt="A heatmap of attention weights, bright on the diagonal.">'
            '<script src="_static/mathjax/tex-svg.js"></script>'
            '<div class="cell_output"><pre>loss 2.31</pre></div>'
            '<div class="highlight"><pre>loss = F.cross_entropy(logits, targets)</pre></div>'
            '<div class="dropdown-launch-buttons"><img alt="Binder logo" src="logo.svg">Binder</div>'
            '<p>the mean of -ln P(y | x) over | M | positions</p>'
            '<table><tr><td>a</td><td>b</td></tr></table>'
            '<div class="highlight"><pre>if ok:\n\treturn "\a\b"</pre></div>'
            '<p>call <code>f(x,\ty)</code>, then</p>'
            '<div class="cell_output"><pre>col1\tcol2</pre></div>'
            + '<div class="cell_output"><pre>epoch 1 of 3: loss 0.25 (done)</pre></div>' * 3
            + r'<div class="math">\[ p(x) = \prod_t p(x_t \mid x_{<t}) \]</div>')
    assert lint.lint_page(page(body)) == []


def test_each_problem_is_found():
    cases = {
        '<img src="x.png">': "image without a description",
        '<img src="x.png" alt="plot">': "image without a description",
        '<script src="https://unpkg.com/x.js"></script>': "script from outside",
        '<script src="//cdn.example/x.js"></script>': "script from outside",
        '<div class="cell_output"><div class="output stderr"><pre>oops</pre></div></div>': "stderr",
        '<div class="cell_output"><pre>UserWarning: x is deprecated</pre></div>': "warning",
        '<div class="cell_output"><pre>Traceback (most recent call last):</pre></div>': "warning",
        f'<div class="cell_output"><pre>{"x" * 81}</pre></div>': "printed line of 81",
        f'<div class="cell_input"><div class="highlight"><pre>{"y" * 81}</pre></div></div>': "code line of 81",
        f'<div class="highlight-bash"><div class="highlight"><pre>{"z" * 82}</pre></div></div>': "code line of 82",
        '<div class="cell_output"><pre>&lt;matplotlib.legend.Legend at 0x7f&gt;</pre></div>': "stray value",
        "<div class=\"cell_output\"><pre>(Text(0.5, 0.01, 'x'), Text(0.02, 0.5, 'y'))</pre></div>": "stray value",
        '<div class="math">\\[' + " + ".join(f"a_{i}" for i in range(30)) + "\\]</div>": "display equation",
        '<p>| chapter | check |\n| 01 | x |</p>': "Markdown table shown as text",
        '<div class="cell_output"><p>| chapter | check | | --- | --- | | 01 | x |</p></div>': "Markdown table",
        '<p>| chapter | check | | \u2014 | \u2014 | | 01 | x |</p>': "Markdown table",
        '<div class="cell_output"><pre>run: bench.py on 2 cores, torch 2.3</pre></div>' * 4: "printed 4 times",
        '<span class="math">\\(z = (f - \text{mean})\\)</span>': "control character",
        '<div class="math">\\[X^\top X\\]</div>': "control character",
        "<p>ring the bell\x07 or step back\x08 a page</p>": "control character",
        "<li>a vertical tab\x0b and a form feed\x0c</li>": "control character",
    }
    for body, phrase in cases.items():
        problems = lint.lint_page(page(body))
        assert len(problems) == 1 and phrase in problems[0], (body, problems)


def test_broken_lines_of_an_aligned_equation_are_measured_one_by_one():
    long = " + ".join(f"a_{i}" for i in range(30))
    half = " + ".join(f"a_{i}" for i in range(15))
    assert lint.equation_glyphs(r"\[" + long + r"\]") > lint.MAX_EQUATION_GLYPHS
    assert lint.equation_glyphs(r"\[\begin{aligned}" + half + r" \\ &+ " + half + r"\end{aligned}\]") \
        <= lint.MAX_EQUATION_GLYPHS


def test_a_repeated_output_line_counts_across_the_cells_of_a_page():
    header = "run: python bench.py on 2 cores, torch 2.3"
    outputs = [f'<div class="cell_output"><pre>{header}\nstep {i}: 0.1 s</pre></div>' for i in range(4)]
    assert any("printed 4 times" in problem for problem in lint.lint_page(page("".join(outputs))))
    assert lint.lint_page(page("".join(outputs[:3]))) == []
    assert lint.repeated_lines(["a short line\n" * 9]) == []  # 12 characters


def test_the_layout_between_tags_is_not_prose():
    assert lint.lint_page("<html><body>\n\t<div>\n\t\t<p>text</p>\n\t</div>\n</body></html>") == []


def code_lines(markdown: str) -> list[tuple[int, str]]:
    """(line number, line) of the code of every ``{code-cell}`` in a MyST page, its metadata left out."""
    found, lines, i = [], markdown.split("\n"), 0
    while i < len(lines):
        if lines[i].startswith("```{code-cell}"):
            i += 1
            if i < len(lines) and lines[i] == "---":  # a YAML metadata block: tags, figure alt text
                i = lines.index("---", i + 1) + 1
            while i < len(lines) and not lines[i].startswith("```"):
                if not lines[i].startswith(":"):  # a one-line option such as :tags:
                    found.append((i + 1, lines[i]))
                i += 1
        i += 1
    return found


def test_code_lines_of_the_page_sources_fit_the_column():
    """The built pages' lint measures code lines too, but only after a build of up to 20 minutes: this
    finds a line that would fail it in the sources, in a second."""
    assert code_lines("```{code-cell}\n---\nalt: " + "a" * 90 + "\n---\n:tags: [x]\nx = 1\n```\n") == [(6, "x = 1")]
    root = Path(__file__).parents[1]
    wide = [f"{md.relative_to(root)}:{n}: {len(line)} columns"
            for md in sorted(root.glob("chapters/*/*.md")) for n, line in code_lines(md.read_text())
            if len(line) > lint.MAX_OUTPUT_COLUMNS]
    assert not wide, wide


def shown_code(cell) -> list[str]:
    r"""The lines of a notebook cell that the book shows as code: a code cell's, and a Markdown cell's fenced ones.

    >>> from nbformat.v4 import new_markdown_cell
    >>> shown_code(new_markdown_cell("Answer:\n```python\nx = {}\n```\nthen run it."))
    ['x = {}']
    """
    if cell.cell_type == "code":
        return cell.source.splitlines()
    lines, fenced = [], False
    for line in cell.source.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            lines.append(line)
    return lines


def test_code_lines_of_the_exercise_notebooks_fit_the_column():
    """The book shows every chapter's released exercise notebook, and the instructor edition its solution:
    their code lines, in code cells and in the statements' fenced examples, are measured in the sources too,
    before a build."""
    import nbformat

    root = Path(__file__).parents[1]
    wide = [f"{path.relative_to(root)} cell {k}: {len(line)} columns: {line[:40]}"
            for path in sorted([*root.glob("chapters/*/exercises.ipynb"), *root.glob("solutions/*/exercises.ipynb")])
            for k, cell in enumerate(nbformat.read(path, as_version=4).cells)
            for line in shown_code(cell) if len(line) > lint.MAX_OUTPUT_COLUMNS]
    assert not wide, wide
