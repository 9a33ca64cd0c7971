"""Run ``torchrun`` as a child process, bounded by a timeout that takes its whole process tree down.

Used by the matrix ``ddp`` scenario, the distributed benchmark and the tests: a launcher that outlives its timeout
(or its caller's own time limit) is killed with every worker it started, so nothing is left holding a port or a core.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["failed_run", "root_cause", "run", "torchrun"]

#: An exception line a rank (or a launched script) printed: not the launcher's own report that a child failed
#: (torchrun's ``ChildFailedError``, ``accelerate launch``'s ``CalledProcessError`` of a single process).
_EXCEPTION_LINE = re.compile(
    r"^(\[rank\d+\]: )?(?!\S*(?:ChildFailedError|CalledProcessError))[\w.]+(Error|Exception|Interrupt|Exit): ")


def torchrun(*args: str, nproc: int = 2) -> list[str]:
    """The command line of a single-machine torchrun of ``nproc`` processes on a free port, then ``args``."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", *args]


def run(
    command: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in a session of its own and return its exit status and output.

    On a timeout, or when the caller is interrupted (the matrix's case time limit), the whole session is killed and
    the exception goes on (:class:`subprocess.TimeoutExpired` carries the output so far).
    """
    with subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env=None if env is None else dict(env), cwd=cwd,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException as error:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            if isinstance(error, subprocess.TimeoutExpired):
                raise subprocess.TimeoutExpired(list(command), timeout, stdout, stderr) from None
            raise
    return subprocess.CompletedProcess(list(command), process.returncode, stdout, stderr)


def root_cause(stderr: str) -> str:
    """The exception line of the error a failed torchrun names as its root cause; when the failing rank left no
    error file (it failed before joining a ``neuron`` group), or a launcher ran one process, the last exception line a
    rank or the process printed. Without the
    ``[rankN]: `` prefix torchrun puts on a rank's lines: which rank failed first varies from run to run, the error
    does not."""
    for lines in (stderr.rpartition("Root Cause (first observed failure):")[2].splitlines(), stderr.splitlines()):
        found = [match.string[match.end(1):] if match.group(1) else match.string
                 for line in lines if (match := _EXCEPTION_LINE.match(line.strip()))]
        if found:
            return found[-1]
    return stderr.strip().splitlines()[-1] if stderr.strip() else "no output"


def failed_run(what: str, returncode: int, stderr: str) -> Exception:
    """The error to raise for the launched run ``what`` that exited with ``returncode``: its :func:`root_cause`, as
    an exception of the root cause's own type when that is a built-in one (a rank's ``NotImplementedError`` stays
    one, and is classified as the same error met in-process), naming the run after the message; else a
    ``RuntimeError`` saying both."""
    cause = root_cause(stderr)
    name, _, message = cause.partition(": ")
    kind = getattr(builtins, name.removeprefix("builtins."), None)
    if isinstance(kind, type) and issubclass(kind, Exception) and message:
        with contextlib.suppress(TypeError):  # a type whose constructor wants more than a message
            return kind(f"{message} (in {what}, exit {returncode})")
    return RuntimeError(f"{what} failed (exit {returncode}): {cause}")
