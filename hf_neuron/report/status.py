"""How a case counts in the report: the scenarios, the core set, and the status shown in each cell.

A cell's *status* is the record's outcome, with two additions: ``cpu-fails`` (the case failed on neuron and the
same scenario also fails on the CPU alone, so it is not held against neuron) and ``not-run`` (no record).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "CORE_SCENARIOS",
    "CPU_FAILS",
    "FAILING",
    "NEUTRAL",
    "NOT_RUN",
    "SCENARIOS",
    "STATUSES",
    "STATUS_LABELS",
    "cell_status",
    "runs_unmodified",
    "scenario_order",
]

#: Every scenario of the matrix, in column order.
SCENARIOS: tuple[str, ...] = ("load", "forward", "generate", "train", "lora", "bf16", "compile", "save", "ddp")

#: The scenarios an architecture must pass (or be excused from) to count as running unmodified on neuron.
CORE_SCENARIOS: tuple[str, ...] = ("load", "forward", "generate", "train")

CPU_FAILS = "cpu-fails"
NOT_RUN = "not-run"

#: Outcomes held against neuron (a known failure is still a failure; it is only expected).
FAILING: frozenset[str] = frozenset({"failed", "error", "timeout", "crashed", "known-failure"})

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
    """The table's scenario columns: all of :data:`SCENARIOS` in order, then any other scenario found, by name."""
    return list(SCENARIOS) + sorted(set(found) - set(SCENARIOS))
