"""A small Sphinx extension: what the book's theme and Sphinx write that fails WCAG 2.1 AA (``make a11y``).

_config.yml loads it (``sphinx.local_extensions``). Each fix belongs upstream; until it is there, it is here:

* the sidebar's disclosure triangles (``<summary>``, pydata-sphinx-theme's ``add_collapse_checkboxes``) hold
  a bare icon, so a screen reader announces an unnamed control (axe's ``summary-name``): each gets a
  visually hidden name, "Pages under" the title of the page whose children it shows;
* the References page (docutils' HTML5 writer, for sphinxcontrib-bibtex): each entry of a
  ``role="list"`` has the deprecated DPUB-ARIA role ``doc-biblioentry``, which is no list item, so the list
  has no items (``aria-deprecated-role``, ``aria-required-children``): each entry becomes a ``listitem``;
* the index of the source listings (``sphinx.ext.viewcode``) nests a ``<ul>`` directly in a ``<ul>``
  (``list``): each nested list moves into the item before it.

The theme's search button and colour-mode button are overridden in ``_templates/`` and a colour in
``_static/a11y.css``.

>>> name_summaries(BeautifulSoup('<li><a href="a.html">Ch 1</a><details><summary><span></span></summary>'
...                              '</details></li>', "html.parser"))
1
>>> nest_lists('<ul><li><a href="a">a</a></li>\\n<ul><li><a href="a.b">a.b</a></li>\\n</ul></ul>')
'<ul><li><a href="a">a</a><ul><li><a href="a.b">a.b</a></li>\\n</ul></li>\\n</ul>'
"""

from __future__ import annotations

import functools

from bs4 import BeautifulSoup

HIDDEN = "visually-hidden"  # Bootstrap's class: read by a screen reader, not shown


def name_summaries(soup: BeautifulSoup) -> int:
    """Give each ``<summary>`` of ``soup`` without text a hidden name; return how many were named."""
    named = 0
    for summary in soup.find_all("summary"):
        if summary.get_text(strip=True):
            continue  # a caption already names it (or it was named before: the theme caches its toctree)
        item = summary.find_parent("li")
        link = item.find("a", recursive=False) if item else None
        title = " ".join(link.get_text().split()) if link else ""
        label = soup.new_tag("span", attrs={"class": HIDDEN})
        label.string = f"Pages under {title}" if title else "Pages in this part"
        summary.append(label)
        named += 1
    return named


def nest_lists(body: str) -> str:
    """``body`` with each ``<ul>`` that sits directly in a ``<ul>`` moved into the ``<li>`` before it."""
    soup = BeautifulSoup(body, "html.parser")
    for ul in soup.find_all("ul"):
        if ul.parent is not None and ul.parent.name == "ul":
            item = ul.find_previous_sibling("li")
            if item is not None:
                item.append(ul.extract())
    return str(soup)


def _named_toctree(generate):
    """The theme's ``generate_toctree_html``, its summaries named."""
    @functools.wraps(generate)
    def wrapper(*args, **kwargs):
        result = generate(*args, **kwargs)
        if isinstance(result, BeautifulSoup):
            name_summaries(result)
        return result
    return wrapper


def page_context(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    if callable(context.get("generate_toctree_html")):
        context["generate_toctree_html"] = _named_toctree(context["generate_toctree_html"])
    body = context.get("body")
    if isinstance(body, str):
        body = body.replace('role="doc-biblioentry"', 'role="listitem"')
        if pagename == "_modules/index":
            body = nest_lists(body)
        context["body"] = body


def setup(app):
    # After pydata-sphinx-theme's own handler (priority 500), which puts generate_toctree_html in the context.
    app.connect("html-page-context", page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
