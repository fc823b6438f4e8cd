"""Write the table of contents and configuration of the instructor edition of the book.

    python tools/instructor_edition.py OUT      # writes OUT/_toc.yml and OUT/_config.yml

The instructor edition is the student book plus, after each chapter's exercises, its solution notebook
(``solutions/<chapter>/exercises.ipynb``) executed with its outputs: the answers, the visible checks and
the hidden ones passing. ``make book-instructor`` builds it into ``_build/instructor``; it is for
instructors and self-learners and is never published with the book.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def instructor_toc(toc: dict) -> dict:
    """``toc`` with ``solutions/<chapter>/exercises`` after every ``chapters/<chapter>/exercises``.

    >>> toc = {"parts": [{"chapters": [{"file": "chapters/04-gpt-bpe/index",
    ...        "sections": [{"file": "chapters/04-gpt-bpe/exercises"}]}]}]}
    >>> instructor_toc(toc)["parts"][0]["chapters"][0]["sections"][-1]
    {'file': 'solutions/04-gpt-bpe/exercises', 'title': 'Solutions'}
    """
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            sections = chapter.get("sections", [])
            for i, section in enumerate(list(sections)):
                name = section["file"]
                if name.startswith("chapters/") and name.endswith("/exercises"):
                    solution = "solutions/" + name.removeprefix("chapters/")
                    if (ROOT / f"{solution}.ipynb").exists():
                        sections.insert(i + 1, {"file": solution, "title": "Solutions"})
    return toc


def instructor_config(config: dict) -> dict:
    """``config`` with the solutions included and executed (the student exercises still are not)."""
    config["title"] = f"{config['title']} (instructor edition)"
    config["exclude_patterns"] = [p for p in config["exclude_patterns"] if p != "solutions"]
    config["execute"]["exclude_patterns"] = ["*chapters/*/exercises.ipynb"]
    config["execute"]["cache"] = str(ROOT / "_build" / ".jupyter_cache")  # the student book's executions
    return config


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "_build" / "instructor-config"
    out.mkdir(parents=True, exist_ok=True)
    toc = instructor_toc(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    config = instructor_config(yaml.safe_load((ROOT / "_config.yml").read_text()))
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    print(f"wrote {out / '_toc.yml'} and {out / '_config.yml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
