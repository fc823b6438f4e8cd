"""The feedback pages' filters: hide the hidden tests, and show the maths offline.

In an autograded notebook, the test cells hold their hidden part again (nbgrader
restores it before running), and a traceback quotes the source line that
failed. The preprocessor :class:`HideHiddenTests` removes the hidden region from
every test cell and cuts each error output down to its last line, the check's
own message.

nbgrader's feedback template loads MathJax 2 from a CDN, so a page opened
offline shows raw LaTeX; :func:`offline_mathjax` puts the book's MathJax 3 in
its place, inline (nbgrader's ``release_feedback`` sends students the HTML file
alone, so nothing can sit beside it):

>>> page = '<!-- Load mathjax --><script src="https://cdn.example/mathjax.js"></script><!-- End of mathjax '
>>> local = offline_mathjax(page + 'configuration -->', b"/* MathJax */")
>>> "https://" in local, local.endswith("<script>/* MathJax */</script>")
(False, True)
"""

import re

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S)


# MathJax 3's settings for the notebook's maths: $...$ and \(...\) inline, $$...$$ and \[...\] displayed.
_MATHJAX_CONFIG = ("window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], "
                   "displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']], tags: 'ams'}, svg: {fontCache: 'global'}};")
_MATHJAX_BLOCK = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)


def offline_mathjax(page: str, script: bytes) -> str:
    """``page`` (a feedback page nbgrader wrote) with MathJax ``script`` inline instead of its CDN's."""
    blocks = _MATHJAX_BLOCK.findall(page)
    if len(blocks) != 1:
        raise ValueError(f"page: expected nbconvert's MathJax block once, found it {len(blocks)} times")
    code = re.sub(r"</(script)", r"<\\/\1", script.decode(), flags=re.I)  # nothing in it may end the element
    return page.replace(blocks[0], f"<script>{_MATHJAX_CONFIG}</script>\n<script>{code}</script>")


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
