"""The Pages workflow cannot run offline; check its shape instead (it is YAML that GitHub accepts)."""

from pathlib import Path

import yaml

WORKFLOW = Path(__file__).parents[1] / ".github" / "workflows" / "book.yml"


def load() -> dict:
    spec = yaml.safe_load(WORKFLOW.read_text())
    spec["on"] = spec.pop(True, spec.get("on"))  # YAML 1.1 reads the key `on` as True
    return spec


def steps(job: dict) -> list[dict]:
    assert isinstance(job["steps"], list) and job["steps"], "a job needs steps"
    for step in job["steps"]:
        assert isinstance(step, dict) and ("uses" in step) != ("run" in step), step
    return job["steps"]


def test_it_builds_on_push_to_main_and_deploys_with_the_official_actions():
    spec = load()
    assert spec["on"]["push"]["branches"] == ["main"]
    assert spec["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build, deploy = spec["jobs"]["build"], spec["jobs"]["deploy"]
    runs = [s["run"] for s in steps(build) if "run" in s]
    assert runs == ["make book"]  # the README's command, which also checks the pages
    uses = [s["uses"].split("@")[0] for s in steps(build) if "uses" in s]
    assert uses[0] == "actions/checkout" and uses[-1] == "actions/upload-pages-artifact"
    upload = next(s for s in steps(build) if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in steps(deploy)] == ["actions/deploy-pages"]


def test_every_action_is_pinned_to_a_major_version():
    for job in load()["jobs"].values():
        for step in steps(job):
            if "uses" in step:
                name, _, version = step["uses"].partition("@")
                assert version.startswith("v") and version[1:].isdigit(), step["uses"]


def test_the_instructor_edition_is_never_deployed():
    for job in load()["jobs"].values():
        for step in steps(job):
            assert "instructor" not in str(step.get("run", "")) + str(step.get("with", {})), step
