"""The README stays true: generated sections match the code, and the commands it gives exist."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from _helpers import run

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_generated_sections_are_up_to_date() -> None:
    result = run([sys.executable, str(ROOT / "scripts" / "update_readme.py"), "--check"])
    assert result.returncode == 0, result.stderr


def test_quick_start_scripts_exist_and_are_executable() -> None:
    for script in re.findall(r"^\./(scripts/\S+)", README, flags=re.M):
        path = ROOT / script
        assert path.is_file() and path.stat().st_mode & 0o111, f"README runs {script}, which is missing"


def test_ci_runs_the_readme_test_command() -> None:
    command = re.search(r"^(\.venv/bin/python -m pytest[^\n#]*?)\s+# 3\.", README, flags=re.M)
    assert command, "the README's quick start names the test command"
    assert command.group(1).strip() in (ROOT / ".ci" / "run").read_text()
