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


def test_ci_runs_the_readme_test_command() -> None:
    command = re.search(r"^(\.venv/bin/python -m pytest[^\n#]*?)\s+# 3\.", README, flags=re.M)
    assert command, "the README's quick start names the test command"
    assert command.group(1).strip() in (ROOT / ".ci" / "run").read_text()
