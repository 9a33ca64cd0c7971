"""One `hf-neuron matrix run` of a selection as a benchmark runs it: in a child process, timed from start to exit (the
controller and its workers included, as a user sees it), its exit status checked.

Used by ``bench_cost.py`` and ``bench_matrix.py`` (beside it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["timed_run"]


def timed_run(selection: list[str], workers: int, results: Path, *, device: str | None = None,
              checkout: Path | None = None, who: str = "bench") -> float:
    """Run ``selection`` with ``workers`` into ``results``; its wall time in seconds. ``device``: the device under test
    (``cpu``: the CPU in the device's place; another, e.g. ``neuron``: the reference device under the ``trainium``
    profile; None: the run's defaults and this environment as it is). ``checkout``: run that checkout's code and data
    instead of this one's. Exits with the run's output when it did not finish (exit status other than 0 or 1)."""
    command = [sys.executable, "-m", "hf_neuron.cli", "matrix", "run", *selection, "-n", str(workers),
               "--results", str(results)]
    environ = dict(os.environ)
    if device is not None:
        command += ["--device", device] + (["--profile", "trainium"] if device != "cpu" else [])
        environ["HF_HUB_OFFLINE"] = "1"
        if device != "cpu":
            environ["HF_NEURON_EMULATOR"] = "1"
    if checkout is not None:
        environ["PYTHONPATH"] = str(checkout)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environ, cwd=checkout)
    if done.returncode not in (0, 1):
        sys.exit(f"{who}: `{' '.join(command)}` exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr}")
    return time.perf_counter() - start
