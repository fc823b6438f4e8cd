"""A feedback preprocessor: hide the hidden tests from the HTML returned to students.

In an autograded notebook, the test cells hold their hidden part again (nbgrader
restores it before running), and a traceback quotes the source line that
failed. This preprocessor removes the hidden region from every test cell and
cuts each error output down to its last line, the check's own message.
"""

import re

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S)


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
