"""The book's configuration: one repository URL behind the source link, the launch buttons and the
set-up page; launch buttons that can open the pages they are shown on."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
URL = CONFIG["repository"]["url"]


def test_the_repository_url_is_a_real_github_address():
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", URL), URL
    assert CONFIG["html"]["use_repository_button"]


def test_every_page_and_file_that_names_the_repository_names_this_one():
    named = 0
    for path in [ROOT / "README.md", *ROOT.glob("*.md"), *ROOT.glob("chapters/*/*.md")]:
        text = path.read_text()
        assert "<this repository>" not in text, path.name
        for found in re.findall(r"https://github\.com/attnbook/[\w.-]+", text):
            assert found == URL, (path.name, found)
            named += 1
    assert named >= 2  # the clone command and the Colab route on the set-up page


def test_launch_buttons_only_where_they_can_open_a_markdown_notebook():
    buttons = CONFIG["launch_buttons"]
    assert buttons["binderhub_url"].startswith("https://")
    assert "colab_url" not in buttons  # Colab cannot read MyST .md pages; setup.md gives its route
    assert "jupytext" in (ROOT / "requirements.txt").read_text()  # Binder and hubs open .md with it


def test_binder_installs_the_course_like_a_fresh_machine():
    requirements = (ROOT / ".binder" / "requirements.txt").read_text()
    assert "-r ../requirements.txt" in requirements
    post_build = ROOT / ".binder" / "postBuild"
    assert post_build.stat().st_mode & 0o111  # executable, or Binder skips it
    steps = post_build.read_text()
    for step in ("requirements-nodeps.txt", "pip install --no-deps -e .", "attnbook.data fetch"):
        assert step in steps, step
