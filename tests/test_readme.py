"""The README stays true: the generated reference matches the code, and the commands it gives exist."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from _helpers import run

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_generated_reference_is_up_to_date() -> None:
    result = run([sys.executable, str(ROOT / "scripts" / "update_docs.py"), "--check"])
    assert result.returncode == 0, result.stderr


def test_a_stale_page_is_found(tmp_path: Path) -> None:
    for page in ("reference.md", "price-performance.md", "trainium-profile.md", "sample-run.md"):
        (tmp_path / page).write_text((ROOT / "docs" / page).read_text())
    script = [sys.executable, str(ROOT / "scripts" / "update_docs.py"), "--check", "--docs", str(tmp_path)]
    assert run(script).returncode == 0
    sample = tmp_path / "sample-run.md"
    sample.write_text(sample.read_text().replace("architectures run unmodified**", "architectures run**", 1))
    result = run(script)
    assert result.returncode == 1 and "docs/sample-run.md is out of date" in result.stderr


#: The README is a newcomer's page, read top to bottom: the guides and the reference are in docs/.
README_LINES = 250


def test_the_readme_is_short_and_the_guides_are_in_docs() -> None:
    assert len(README.splitlines()) <= README_LINES
    linked = set(re.findall(r"\]\((docs/[^)#]+)", README))
    assert {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")} <= linked, "every guide is linked"


def test_readme_and_docs_links_resolve() -> None:
    for target in re.findall(r"\]\(((?:docs|reports)/[^)#]+)", README):
        assert (ROOT / target).exists(), f"README links {target}, which is missing"
    for page in (ROOT / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links {target}, which is missing"


#: Files that hold a path of a machine on purpose: the scrubber's tests feed it such paths.
_PATH_TEST_INPUTS = {"tests/test_failure_fingerprint.py", "tests/test_report_sample.py", "tests/test_readme.py"}


def _absolute_paths(text: str) -> list[str]:
    return re.findall(r"(?<![\w.~$}])/(?:work|home|root|tmp/pytest-of-\w+|Users)/[\w./-]+", text)


def test_no_file_names_an_absolute_path_of_a_machine() -> None:
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = {}
    for name in tracked:
        path = ROOT / name
        if name in _PATH_TEST_INPUTS or name.startswith("reports/") or not path.is_file():
            continue
        if paths := _absolute_paths(path.read_text(errors="replace")):
            found[name] = paths[:3]
    assert found == {}, "write ../shared/... (relative to the checkout) or a path the code computes"
    assert _absolute_paths("data in /home/ci/shared/upstream/x.py") == ["/home/ci/shared/upstream/x.py"]


def test_quick_start_scripts_exist_and_are_executable() -> None:
    for script in re.findall(r"^\./(scripts/\S+)", README, flags=re.M):
        path = ROOT / script
        assert path.is_file() and path.stat().st_mode & 0o111, f"README runs {script}, which is missing"


def _quick_start_commands(readme: str) -> list[str]:
    """The commands of the quick start's first shell block, comments dropped."""
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def test_the_quick_start_is_two_commands_the_main_job_and_the_tests() -> None:
    assert _quick_start_commands(README) == ["./scripts/run_matrix.sh", "./scripts/test.sh"]
    three = README.replace("./scripts/run_matrix.sh ", "./scripts/setup.sh\n./scripts/run_matrix.sh ", 1)
    assert len(_quick_start_commands(three)) == 3  # what the check above would refuse


def test_each_quick_start_command_sets_up_what_is_missing_first() -> None:
    for command in _quick_start_commands(README):
        lines = [line.strip() for line in (ROOT / command).read_text().splitlines()]
        work = [line for line in lines if line and not line.startswith(("#", "set ", "cd ", "selection", "[ "))]
        assert work[0].startswith("./scripts/setup.sh"), f"{command} does not set up first: {work[:2]}"


def test_ci_runs_the_readme_test_command_and_it_runs_lint_types_and_workflow_checks() -> None:
    test_command = _quick_start_commands(README)[-1]
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines()
    script = (ROOT / test_command).read_text()
    for check in (".venv/bin/ruff check .", ".venv/bin/mypy", ".venv/bin/zizmor --offline --min-severity high",
                  ".venv/bin/python -m pytest -n 2"):
        assert check in script, f"{test_command} does not run {check}"
