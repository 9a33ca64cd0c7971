"""Helpers shared by the tests: running code in a fresh Python process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

__all__ = ["run"]


def run(
    args: list[str] | str, env: Mapping[str, str | None] | None = None, *, cwd: Path | None = None,
    timeout: float = 900,
) -> subprocess.CompletedProcess[str]:
    """Run a command, or Python code given as a string, in a fresh process.

    The environment is this one (reference device on, hub off) updated by ``env``, where None removes a key.
    """
    command = [sys.executable, "-c", textwrap.dedent(args)] if isinstance(args, str) else args
    environ = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = value
    return subprocess.run(command, env=environ, cwd=cwd, capture_output=True, text=True, timeout=timeout)
