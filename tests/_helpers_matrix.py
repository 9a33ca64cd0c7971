"""Shared helpers of the matrix runner tests: the fake catalog and scenarios, running the CLI, reading records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["FAKE", "FIXTURES", "SLOW", "a_record", "case_counts", "cli", "cli_process", "raw_records"]

FIXTURES = Path(__file__).parent / "fixtures" / "matrix"
#: Options selecting the fake catalog (alpha, beta, segfault, hang, stuck, ...) and its fake scenarios.
FAKE = ["--catalog", str(FIXTURES / "catalog.json"), "--scenario-module", str(FIXTURES / "fake_scenarios.py")]
#: The same scenarios over eight architectures that take 0.3 s per case.
SLOW = ["--catalog", str(FIXTURES / "slow_catalog.json"), "--scenario-module", str(FIXTURES / "fake_scenarios.py")]

_COMMAND = [sys.executable, "-m", "hf_neuron.cli", "matrix"]


def a_record(case_id: str, **fields: Any) -> dict[str, Any]:
    """A valid record of ``case_id`` (``"model::scenario"``) that passed, with ``fields`` changed."""
    model_type, _, scenario = case_id.partition("::")
    record: dict[str, Any] = {
        "schema": 1, "run_id": "r", "case_id": case_id, "model_type": model_type, "group": "decoder",
        "scenario": scenario, "outcome": "passed", "reason": None, "duration_s": 0.1, "peak_memory_bytes": None,
        "parity": None, "cpu_outcome": None, "cpu_failure": None, "failure": None, "known_failure": None,
        "env": {"backend": "reference"}, "started_at": "2025-01-01T00:00:00+00:00",
        "finished_at": "2025-01-01T00:00:01+00:00",
    }
    return {**record, **fields}


def _env(changes: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The runner's environment: no settings leaking from the test process, the reference device's switch on (the
    fake scenarios never import torch, so it only lets a neuron run start); ``changes`` (None removes)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_NEURON_", "PYTEST_"))}
    env.update(HF_HUB_OFFLINE="1", HF_NEURON_EMULATOR="1")
    for key, value in (changes or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def cli(*args: str, timeout: float = 120, env: Mapping[str, str | None] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """Run ``hf-neuron matrix ARGS`` to completion (``env``: changes to the runner's environment)."""
    return subprocess.run([*_COMMAND, *args], capture_output=True, text=True, timeout=timeout, env=_env(env))


def cli_process(*args: str) -> subprocess.Popen[str]:
    """Start ``hf-neuron matrix ARGS`` (output discarded)."""
    return subprocess.Popen(
        [*_COMMAND, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, env=_env()
    )


def raw_records(results: Path) -> list[dict[str, Any]]:
    """Every complete line of every record file, parsed (no deduplication, unlike the store)."""
    lines = [line for path in sorted(results.glob("*.jsonl")) for line in path.read_text().splitlines(keepends=True)]
    return [json.loads(line) for line in lines if line.endswith("\n")]


def case_counts(results: Path) -> Counter[str]:
    """How many records each case has."""
    return Counter(record["case_id"] for record in raw_records(results))
