"""The GitHub workflows: every build runs the tests and the CI slice, the nightly the whole catalog and publishes; each
is safe to run (actions pinned to commits, least privilege, no expression spliced into a script), as zizmor agrees."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
#: The only job that may write, and what: the nightly's report job pushes the site to the gh-pages branch.
WRITERS = {("matrix.yml", "report"): {"contents": "write"}}
_PINNED = re.compile(r"^\s*-?\s*uses:\s*[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*\s*$")


def _load(name: str) -> dict[str, Any]:
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as True
    return document


def _steps(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(job, step) for job, body in document["jobs"].items() for step in body.get("steps", [])]


def _unpinned(text: str) -> list[str]:
    """The `uses:` lines of a workflow that are not `owner/repo@<full commit sha> # vX.Y.Z`."""
    return [line.strip() for line in text.splitlines() if re.match(r"^\s*-?\s*uses:", line) and not _PINNED.match(line)]


def _spliced(document: dict[str, Any]) -> list[str]:
    """The `run:` scripts that contain a `${{ }}` expression (values must reach scripts as environment variables)."""
    return [step["run"] for _, step in _steps(document) if "run" in step and "${{" in step["run"]]


def test_there_are_the_ci_and_the_nightly_workflows() -> None:
    assert sorted(path.name for path in WORKFLOWS.glob("*.y*ml")) == ["ci.yml", "matrix.yml"]


@pytest.mark.parametrize("name", ["ci.yml", "matrix.yml"])
def test_every_action_is_pinned_to_a_commit_with_its_version(name: str) -> None:
    assert _unpinned((WORKFLOWS / name).read_text()) == []


def test_an_unpinned_or_unversioned_action_is_caught() -> None:
    assert _unpinned("    - uses: actions/checkout@v4\n      uses: a/b@" + "0" * 40 + "\n") == [
        "- uses: actions/checkout@v4", "uses: a/b@" + "0" * 40]


@pytest.mark.parametrize("name", ["ci.yml", "matrix.yml"])
def test_permissions_are_read_only_but_for_the_publishing_job(name: str) -> None:
    document = _load(name)
    assert document["permissions"] == {"contents": "read"}
    for job, body in document["jobs"].items():
        assert body.get("permissions", {}) == WRITERS.get((name, job), {}), job


@pytest.mark.parametrize("name", ["ci.yml", "matrix.yml"])
def test_no_expression_is_spliced_into_a_script_and_only_a_pushing_checkout_keeps_credentials(name: str) -> None:
    document = _load(name)
    assert _spliced(document) == []
    for job, step in _steps(document):
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is ((name, job) in WRITERS), job
    injected = {"jobs": {"x": {"steps": [{"run": "echo ${{ github.event.pull_request.title }}"}]}}}
    assert _spliced(injected) == ["echo ${{ github.event.pull_request.title }}"]


def test_every_push_and_pull_request_runs_the_tests_and_the_sharded_ci_slice_with_its_table() -> None:
    ci = _load("ci.yml")
    assert set(ci["on"]) == {"push", "pull_request"}
    runs = {job: [step.get("run", "") for step in body["steps"]] for job, body in ci["jobs"].items()}
    assert "./scripts/test.sh" in runs["tests"]
    assert ci["jobs"]["slice"]["strategy"]["matrix"]["shard"] == [1, 2]
    assert './scripts/ci_matrix_shard.sh "$SHARD/2" "results/shard-$SHARD"' in runs["slice"]
    summary = "\n".join(runs["slice-summary"])
    assert "hf-neuron matrix merge results/ci-slice-shard-*" in summary
    assert 'hf-neuron report summary --results merged --title "Matrix: the CI slice" >> "$GITHUB_STEP_SUMMARY"' \
        in summary
    assert ci["jobs"]["slice-summary"]["if"] == "always()"


def test_the_nightly_runs_the_whole_catalog_and_publishes_the_site() -> None:
    nightly = _load("matrix.yml")
    assert "schedule" in nightly["on"] and "workflow_dispatch" in nightly["on"]
    scripts = "\n".join(step.get("run", "") for _, step in _steps(nightly))
    assert "--slice" not in scripts  # no narrowing by default: every architecture of the catalog
    assert "hf-neuron report build --results merged" in scripts and "git push origin gh-pages" in scripts


def _zizmor(path: Path) -> subprocess.CompletedProcess[str]:
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    if zizmor is None:
        pytest.fail("zizmor is not installed: it is in the dev extra (pip install -e '.[dev]')")
    return subprocess.run([zizmor, "--offline", "--min-severity", "high", str(path)], capture_output=True, text=True,
                          timeout=120)


def test_zizmor_finds_nothing_of_high_severity_and_would_find_an_unsafe_workflow(tmp_path: Path) -> None:
    clean = _zizmor(WORKFLOWS)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    unsafe = tmp_path / ".github" / "workflows" / "unsafe.yml"
    unsafe.parent.mkdir(parents=True)
    unsafe.write_text("on: pull_request_target\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - uses: actions/checkout@v4\n      - run: echo ${{ github.event.pull_request.title }}\n")
    found = _zizmor(unsafe.parent)
    assert found.returncode != 0
    assert "unpinned-uses" in found.stdout and "template-injection" in found.stdout
