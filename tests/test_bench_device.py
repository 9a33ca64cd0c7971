"""scripts/bench_device.py: the one-core row runs every thread of the process on one core, autograd's device thread
and threads started during the row included, and gives the process back every core it had afterwards."""

from __future__ import annotations

import os
import sys
import threading

import pytest
from _helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import bench_device

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two cores to pin to one")


def _affinities() -> set[frozenset[int]]:
    return {frozenset(os.sched_getaffinity(int(tid))) for tid in os.listdir("/proc/self/task")}


def test_every_thread_runs_on_one_core_during_the_row_and_on_all_after_it() -> None:
    allowed = os.sched_getaffinity(0)
    idle = threading.Event()
    waiting = threading.Thread(target=idle.wait)  # a thread that exists before the row, as autograd's does
    waiting.start()
    seen: dict[str, object] = {}

    def run() -> None:
        seen["during"] = _affinities()
        started = threading.Thread(target=lambda: seen.setdefault("started", os.sched_getaffinity(0)))
        started.start()
        started.join()

    try:
        bench_device._on_one_core(run)  # type: ignore[arg-type]
        assert seen["during"] == {frozenset({min(allowed)})}
        assert seen["started"] == {min(allowed)}
        assert _affinities() == {frozenset(allowed)}
    finally:
        idle.set()
        waiting.join()


def test_the_process_gets_its_cores_back_when_the_row_fails() -> None:
    allowed = os.sched_getaffinity(0)

    def fail() -> None:
        raise RuntimeError("a step failed")

    with pytest.raises(RuntimeError, match="a step failed"):
        bench_device._on_one_core(fail)  # type: ignore[arg-type]
    assert _affinities() == {frozenset(allowed)}
