"""scripts/bench_device.py: the one-core row runs every thread of the process on one core, autograd's device thread
and threads started during the row included, passes over a thread that ends before its turn, and gives the process
back every core it had afterwards; callgrind's totals are read by event, and a file without them is refused."""

from __future__ import annotations

import os
import sys
import threading

import pytest
from _helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import bench_device

needs_two_cores = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two cores to pin to one")


def _affinities() -> set[frozenset[int]]:
    """The cores of each live thread of this process (a thread that ends while they are read is left out)."""
    seen = set()
    for tid in bench_device._threads():
        try:
            seen.add(frozenset(os.sched_getaffinity(tid)))
        except ProcessLookupError:
            continue
    return seen


@needs_two_cores
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
        bench_device._on_one_core(run)
        assert seen["during"] == {frozenset({min(allowed)})}
        assert seen["started"] == {min(allowed)}
        assert _affinities() == {frozenset(allowed)}
    finally:
        idle.set()
        waiting.join()


@needs_two_cores
def test_the_process_gets_its_cores_back_when_the_row_fails() -> None:
    allowed = os.sched_getaffinity(0)

    def fail() -> None:
        raise RuntimeError("a step failed")

    with pytest.raises(RuntimeError, match="a step failed"):
        bench_device._on_one_core(fail)
    assert _affinities() == {frozenset(allowed)}


@needs_two_cores
def test_a_thread_that_ends_before_its_turn_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    allowed = os.sched_getaffinity(0)
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    assert ended.native_id is not None
    listed = bench_device._threads
    monkeypatch.setattr(bench_device, "_threads", lambda: [*listed(), ended.native_id])  # listed, then gone
    assert bench_device._on_one_core(lambda: _affinities()) == {frozenset({min(allowed)})}
    assert _affinities() == {frozenset(allowed)}


_CALLGRIND = """version: 1
creator: callgrind-3.19.0
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
summary: 0
totals: 61198533 18672821 9086646 2069201 857889 247509 11591 21652 6278 6872173 702788 1400883 627983
"""


def test_callgrind_totals_are_read_by_event() -> None:
    totals = bench_device.callgrind_totals(_CALLGRIND)
    assert totals["Ir"] == 61198533 and totals["I1mr"] == 2069201 and totals["Bim"] == 627983
    assert all(event in totals for events in bench_device.SIMULATED.values() for event in events)


@pytest.mark.parametrize("text", ["", _CALLGRIND.replace("totals:", "total:"), _CALLGRIND.replace(" 627983", "")])
def test_a_file_without_matching_events_and_totals_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a callgrind output file"):
        bench_device.callgrind_totals(text)
