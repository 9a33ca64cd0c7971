"""``hf-neuron matrix run``: check the selection, run ``pytest matrix`` with xdist workers, judge the run's records.

pytest runs in this process (so killing the runner kills the run, and its workers die with it); the exit status
comes from the records, not from pytest:

====  ====================================================================================
0     every selected case has a record; none fails on the device (known failures and failures the CPU shares
      do not count)
1     every selected case has a record; some fail on the device
2     bad input (unknown names, malformed files, a results directory holding another run)
3     the run did not finish: some selected cases have no record (``--resume`` continues it)
====  ====================================================================================
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import IO, Any

import pytest

from hf_neuron import cpus, settings
from hf_neuron.checkpoint.instances import GIB
from hf_neuron.checkpoint.slice import default_budget
from hf_neuron.compat.files import REPO_ROOT
from hf_neuron.errors import InputError
from hf_neuron.matrix.options import MatrixConfig, pytest_args
from hf_neuron.matrix.results import environment
from hf_neuron.matrix.results.store import read_manifest, read_records
from hf_neuron.matrix.results.summary import summarize
from hf_neuron.vocabulary.exits import EXIT_FAILURES, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE

__all__ = ["SUITE_DIR", "pytest_command", "run"]

#: The matrix as a pytest suite (it ships with the source tree, beside ``compat/``).
SUITE_DIR = REPO_ROOT / "matrix"


def pytest_command(values: Mapping[str, Any], workers: int, cases: int) -> list[str]:
    """The ``pytest`` arguments of a run: the suite, ``workers`` xdist workers, one restart allowed per case."""
    return [
        str(SUITE_DIR),
        f"--rootdir={REPO_ROOT}",
        "-p", "no:cacheprovider",
        "-n", str(min(workers, cases)),
        "--dist=load",
        f"--max-worker-restart={cases}",
        # The records hold the details, the plugin shows progress and prints the summary: keep pytest quiet.
        "-q", "--tb=no", "-rN", "-o", "console_output_style=classic",
        *pytest_args(values),
    ]


def _share_cores(workers: int) -> None:
    """Give each worker its share of the cores (unless the user chose), and keep the run off the Hub."""
    os.environ.setdefault("OMP_NUM_THREADS", str(cpus.per_worker(workers)))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run(values: Mapping[str, Any], workers: int, out: IO[str] | None = None) -> int:
    """Run the matrix for the parsed CLI ``values``; return the exit status (see the module docstring)."""
    out = sys.stderr if out is None else out
    if workers < 1:
        raise InputError(f"-n {workers}: the matrix isolates cases in worker processes; use -n 1 or more")
    if not (SUITE_DIR / "conftest.py").is_file():
        raise InputError(
            f"the matrix suite is not at {SUITE_DIR}: it ships with the hf-neuron source tree; run from a checkout"
        )
    if values.get("matrix_max_gb") is None:  # one budget for every process of the run, so every slice is the same
        given = settings.read("HF_NEURON_MATRIX_MAX_GB")
        values = {**values, "matrix_max_gb": given if given is not None else round(default_budget(workers) / GIB, 2)}
    config = MatrixConfig.from_values(values)
    cases = config.cases()
    environment.require_backend(config.device, environment.collect())
    _share_cores(workers)
    code = pytest.main(pytest_command(values, workers, len(cases)))
    if code == pytest.ExitCode.USAGE_ERROR:
        return EXIT_USAGE
    manifest = read_manifest(config.results)
    records = [] if manifest is None else [r for r in read_records(config.results) if r["run_id"] == manifest.run_id]
    summary = summarize(records, [case.case_id for case in cases])
    if not summary.complete:
        out.write(
            f"hf-neuron matrix: the run is incomplete ({len(summary.missing)} of {len(cases)} cases have no record, "
            f"pytest exit status {int(code)}); continue it with --resume --results {config.results}\n"
        )
        return EXIT_INCOMPLETE
    return EXIT_FAILURES if summary.device_failures else EXIT_OK
