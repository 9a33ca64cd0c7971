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


def test_a_stale_reference_is_found(tmp_path: Path) -> None:
    script = (ROOT / "scripts" / "update_docs.py").read_text()
    stale = tmp_path / "update_docs.py"
    stale.write_text(script.replace('Path(__file__).resolve().parent.parent / "docs"', f'Path({str(tmp_path)!r})'))
    (tmp_path / "reference.md").write_text("# an old reference\n")
    result = run([sys.executable, str(stale), "--check"])
    assert result.returncode == 1 and "docs/reference.md is out of date" in result.stderr


def test_readme_links_resolve() -> None:
    for target in re.findall(r"\]\(((?:docs|reports)/[^)#]+)", README):
        assert (ROOT / target).exists(), f"README links {target}, which is missing"


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
