"""scripts/bench_matrix.py: its fake suite runs through the matrix runner and every fake case is counted; a suite the
runner refuses makes the benchmark exit with the runner's message, not print a rate."""

from __future__ import annotations

import os
import subprocess
import sys

from _helpers import ROOT


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "HF_NEURON_EMULATOR": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_matrix.py"), *args], capture_output=True,
                          text=True, env=environ, timeout=300)


def test_the_fake_suite_runs_every_case() -> None:
    done = _bench("--archs", "2", "--work", "0", "--workers", "1")
    assert done.returncode == 0, done.stderr
    row = done.stdout.splitlines()[-1].split()
    assert row[:2] == ["1", "4"], done.stdout  # 2 architectures x 2 scenarios, all recorded


def test_a_selection_the_runner_refuses_is_an_error() -> None:
    done = _bench("--real", "--workers", "1", "--", "--arch", "no-such-architecture")
    assert done.returncode != 0
    assert "bench_matrix:" in done.stderr and "no-such-architecture" in done.stderr
