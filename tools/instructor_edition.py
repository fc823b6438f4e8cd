"""Write the table of contents and configuration of the instructor edition of the book.

    python tools/instructor_edition.py OUT      # writes OUT/_toc.yml and OUT/_config.yml

The instructor edition is the student book plus, after each chapter's exercises, its solution notebook
executed with its outputs: the answers, the visible checks and the hidden ones passing. The solution
``solutions/<chapter>/exercises.ipynb`` is copied to ``chapters/<chapter>/solutions.ipynb`` (ignored by
git, left out of the student book), so that its links to the chapter's pages resolve. ``make
book-instructor`` builds it into ``_build/instructor``; it is for instructors and self-learners and is
never published with the book.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def instructor_toc(toc: dict) -> dict:
    """``toc`` with ``chapters/<chapter>/solutions`` after every ``chapters/<chapter>/exercises``.

    >>> toc = {"parts": [{"chapters": [{"file": "chapters/04-gpt-bpe/index",
    ...        "sections": [{"file": "chapters/04-gpt-bpe/exercises"}]}]}]}
    >>> instructor_toc(toc)["parts"][0]["chapters"][0]["sections"][-1]
    {'file': 'chapters/04-gpt-bpe/solutions', 'title': 'Solutions'}
    """
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            sections = chapter.get("sections", [])
            for i, section in enumerate(list(sections)):
                name = section["file"]
                if name.startswith("chapters/") and name.endswith("/exercises"):
                    if (ROOT / "solutions" / name.split("/")[1] / "exercises.ipynb").exists():
                        sections.insert(i + 1, {"file": name.removesuffix("exercises") + "solutions",
                                                "title": "Solutions"})
    return toc


def copy_solutions() -> list[Path]:
    """Each ``solutions/<chapter>/exercises.ipynb`` beside its chapter, as ``chapters/<chapter>/solutions.ipynb``."""
    copies = []
    for source in sorted((ROOT / "solutions").glob("*/exercises.ipynb")):
        target = ROOT / "chapters" / source.parent.name / "solutions.ipynb"
        if target.parent.is_dir():
            shutil.copyfile(source, target)
            copies.append(target)
    return copies


def instructor_config(config: dict) -> dict:
    """``config`` with the solutions included and executed (the student exercises still are not)."""
    config["title"] = f"{config['title']} (instructor edition)"
    config["execute"]["exclude_patterns"] = ["*chapters/*/exercises.ipynb"]  # solutions.ipynb runs
    config["execute"]["cache"] = str(ROOT / "_build" / ".jupyter_cache")  # the student book's executions
    # jupyter-book finds a local extension beside the _config.yml that names it: this one is written elsewhere.
    extensions = config.get("sphinx", {}).get("local_extensions") or {}
    for name, folder in extensions.items():
        extensions[name] = str(ROOT / folder)
    return config


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "_build" / "instructor-config"
    out.mkdir(parents=True, exist_ok=True)
    toc = instructor_toc(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    config = instructor_config(yaml.safe_load((ROOT / "_config.yml").read_text()))
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    copies = copy_solutions()
    print(f"wrote {out / '_toc.yml'}, {out / '_config.yml'} and {len(copies)} chapters/*/solutions.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
