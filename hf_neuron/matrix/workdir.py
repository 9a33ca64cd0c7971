"""The run's scratch directory (tiny checkpoints, workers' crash logs), outside the results directory.

The controller creates it and removes it when the run ends. A controller killed outright cannot clean up, so
each new run first removes the scratch directories of controllers that are no longer alive (the directory name
carries the controller's process id).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["create_workdir", "remove_workdir"]

_PREFIX = "hf-neuron-matrix-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def create_workdir() -> Path:
    """A new scratch directory for this process's run, after sweeping those of dead controllers."""
    for path in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*-*"):
        pid = path.name.removeprefix(_PREFIX).split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))


def remove_workdir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
