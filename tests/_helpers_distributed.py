"""Shared helpers of the distributed tests: launch workers on 2 reference devices, read what each rank wrote."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_neuron.device.distributed.launch import run, torchrun

__all__ = ["WORLD", "launch", "rank_results", "run_launcher", "succeeded"]

#: The number of processes (and reference devices) of every distributed test.
WORLD = 2

_ENV = {"HF_NEURON_EMULATOR": "1", "HF_NEURON_EMULATOR_DEVICES": str(WORLD), "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_DISABLE_TELEMETRY": "1",
        "OMP_NUM_THREADS": "1"}


def run_launcher(
    directory: Path, command: Sequence[str], *, timeout: float = 120, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a launcher command (torchrun, ``accelerate launch``, ``trl``) in ``directory`` with ``WORLD`` devices."""
    return run(command, timeout=timeout, env={**os.environ, **_ENV, **(env or {})}, cwd=directory)


def launch(
    directory: Path, script: str, *args: str, timeout: float = 120, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Write ``script`` to ``directory/worker.py`` and run it under torchrun, ``WORLD`` processes, in ``directory``."""
    worker = directory / "worker.py"
    worker.write_text(textwrap.dedent(script))
    return run_launcher(directory, torchrun(str(worker), *args, nproc=WORLD), timeout=timeout, env=env)


def succeeded(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """``result``, after checking that the launch exited 0 (else fail with its output)."""
    assert result.returncode == 0, f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    return result


def rank_results(directory: Path) -> list[dict[str, Any]]:
    """What each rank wrote to ``directory/rank<N>.json``, in rank order."""
    return [json.loads((directory / f"rank{rank}.json").read_text()) for rank in range(WORLD)]
