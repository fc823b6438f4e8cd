"""attnbook: the reference implementations behind *Attention to Transformers*.

One concept per module, ordered small to large (see the book's API reference):
``runtime`` -> ``data`` -> ``attention`` -> ... -> ``train`` / ``plots`` / ``grading``.
Chapters, exercises and tests import these modules; nothing copies them.
"""

__version__ = "0.1.0"
