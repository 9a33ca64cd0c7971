"""Helpers shared by the tests: where the checkout and the shared data are, running code in a fresh Python process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ROOT", "SHARED", "run", "run_cli"]

#: The checkout.
ROOT = Path(__file__).resolve().parent.parent
#: The data shared by every developer and CI, beside the checkout (``../shared``): used in place, never copied.
SHARED = ROOT.parent / "shared"


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


def run_cli(args: list[str], env: Mapping[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``hf-neuron ARGS`` in a fresh process (see :func:`run`)."""
    return run([sys.executable, "-m", "hf_neuron.cli", *args], env)
