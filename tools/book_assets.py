"""Put the book's offline assets in place: MathJax 3 (``_static/mathjax/tex-svg.js``).

The grader's feedback pages carry the same file inline (``autograder/attnbook_course/course.py``
calls :func:`mathjax`).

Sphinx loads MathJax from a CDN by default, which a reader offline (or the
headless browser of our checks) cannot reach. The pinned PyPI wheel
``django-static-mathjax`` ships MathJax 3.2.2; this script fetches it with the
same checksummed, cached fetcher as the course data and copies out the one
self-contained file the book needs.

    python tools/book_assets.py
"""

from pathlib import Path

from attnbook.data._fetch import Source, fetch, read_member

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "_static" / "mathjax" / "tex-svg.js"

MATHJAX = Source(
    name="mathjax",
    requirement="django-static-mathjax==3.2.2.1",
    filename="django_static_mathjax-3.2.2.1-py3-none-any.whl",
    cache_file="mathjax-3.2.2-tex-svg.js",
    build=lambda archive: read_member(archive, "mathjax/static/mathjax/es5/tex-svg.js"),
    license="Apache-2.0",
)


def mathjax() -> bytes:
    """MathJax 3's self-contained ``tex-svg.js``, from the cache (fetched with pip the first time)."""
    return fetch(MATHJAX).read_bytes()


def main() -> None:
    data = mathjax()
    if not TARGET.exists() or TARGET.read_bytes() != data:
        TARGET.parent.mkdir(parents=True, exist_ok=True)
        TARGET.write_bytes(data)
    print(f"MathJax ready: {TARGET.relative_to(ROOT)} ({len(data) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
