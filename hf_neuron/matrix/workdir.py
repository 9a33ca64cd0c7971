"""The run's scratch directory (tiny checkpoints, checkpoints' slices, workers' crash logs), outside the results
directory.

The controller creates it and removes it when the run ends. A controller killed outright cannot clean up, so
each new run first removes the scratch directories of controllers that are no longer alive (the directory name
carries the controller's process id). A checkpoint's real-width slice can take gigabytes, so it does not wait for the
end of the run: :class:`SliceLedger` removes it as soon as every case of its checkpoint in the run has finished.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from hf_neuron.checkpoint.facts import SLICES, slice_directory
from hf_neuron.checkpoint.slice import release
from hf_neuron.matrix.selection import Case

__all__ = ["SliceLedger", "create_workdir", "remove_workdir"]

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


class SliceLedger:
    """Which cases of each checkpoint a run still has to finish, kept as files under the scratch directory so that
    every worker sees every other's: the worker that finishes a checkpoint's last case removes its slice."""

    def __init__(self, workdir: Path, pending: Iterable[Case]) -> None:
        self._workdir = workdir
        self._expected: dict[str, set[str]] = {}
        for case in pending:
            if case.checkpoint is not None:
                self._expected.setdefault(case.checkpoint.id, set()).add(case.scenario)

    def finished(self, case: Case) -> None:
        """Note that ``case`` finished; remove its checkpoint's slice when it was the checkpoint's last case."""
        if case.checkpoint is None:
            return
        checkpoint = case.checkpoint.id
        marks = slice_directory(self._workdir / SLICES / ".finished", checkpoint)
        marks.mkdir(parents=True, exist_ok=True)
        (marks / case.scenario).touch()
        if {path.name for path in marks.iterdir()} >= self._expected.get(checkpoint, set()):
            release(slice_directory(self._workdir / SLICES, checkpoint))
