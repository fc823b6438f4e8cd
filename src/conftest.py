"""Doctests of the package run on the modules the package itself imported.

Collecting ``attnbook/imagegpt/probe.py`` as a doctest module before anything
has imported ``attnbook.imagegpt``, pytest's importlib mode imports the parent
package (which imports ``.probe``) and then executes ``probe.py`` a second time
under the same name: the package keeps the first copy's functions, and
``sys.modules`` the second. A grading test that traps a reference by its module
name then misses the function it was handed. Importing every subpackage here,
before collection, puts each module in ``sys.modules`` once, and pytest reuses it.
"""

import pkgutil

import attnbook

for _ in pkgutil.walk_packages(attnbook.__path__, "attnbook."):  # imports each subpackage to walk it
    pass
