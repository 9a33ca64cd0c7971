"""How a case counts in the report: the status shown in each cell, and whether an architecture runs unmodified.

A cell's *status* is the record's outcome, with two additions: ``cpu-fails`` (the case failed on neuron and the
same scenario also fails on the CPU alone, so it is not held against neuron) and ``not-run`` (no record).
"""

from __future__ import annotations

from collections.abc import Iterable

from hf_neuron.matrix.records import DID_NOT_WORK, SCENARIO_NAMES

__all__ = [
    "CPU_FAILS",
    "FAILING",
    "NEUTRAL",
    "NOT_RUN",
    "STATUSES",
    "STATUS_LABELS",
    "cell_status",
    "runs_unmodified",
    "scenario_order",
]

CPU_FAILS = "cpu-fails"
NOT_RUN = "not-run"

#: Outcomes held against neuron: every run that did not work, and a known failure (it is still a failure; it is
#: only expected).
FAILING: frozenset[str] = DID_NOT_WORK | {"known-failure"}

#: Statuses that count neither for nor against neuron.
NEUTRAL: frozenset[str] = frozenset({"skipped", CPU_FAILS})

#: Every status, best first: the sort order of the table.
STATUSES: tuple[str, ...] = (
    "passed",
    "skipped",
    CPU_FAILS,
    "known-failure",
    "failed",
    "error",
    "timeout",
    "crashed",
    NOT_RUN,
)

#: The short text of each status in a table cell (colour is never the only signal).
STATUS_LABELS: dict[str, str] = {
    "passed": "pass",
    "skipped": "skip",
    CPU_FAILS: "cpu fails too",
    "known-failure": "known",
    "failed": "fail",
    "error": "error",
    "timeout": "timeout",
    "crashed": "crash",
    NOT_RUN: "—",
}


def cell_status(outcome: str, cpu_outcome: str | None) -> str:
    """The status of a case: its outcome, or ``cpu-fails`` when it failed on neuron and on the CPU alike."""
    if outcome in FAILING and cpu_outcome in FAILING:
        return CPU_FAILS
    return outcome


def runs_unmodified(core_statuses: Iterable[str]) -> bool:
    """True when every core scenario passed or is excused (neutral), and at least one passed."""
    statuses = list(core_statuses)
    return "passed" in statuses and all(s == "passed" or s in NEUTRAL for s in statuses)


def scenario_order(found: Iterable[str]) -> list[str]:
    """The table's scenario columns: every scenario of the matrix in order, then any other scenario found, by name."""
    return list(SCENARIO_NAMES) + sorted(set(found) - set(SCENARIO_NAMES))
