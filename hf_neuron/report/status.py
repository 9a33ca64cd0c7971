"""How a case and an architecture count in the report.

A cell's *status* is the record's outcome, except that a failure the CPU shares (the same failure: its
``cpu_verdict``, :func:`~hf_neuron.matrix.records.case_verdict`) is ``cpu-fails``, and a case without a record is
``not-run``. An architecture's *verdict* sums up its cases (:func:`arch_verdict`), and it *runs unmodified* when
``forward`` passed and every other core scenario its group runs passed or does not apply (:func:`runs_unmodified`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Literal, get_args

from hf_neuron.matrix.records import SCENARIO_NAMES, VARIANT_SCENARIOS, case_verdict

__all__ = [
    "ARCH_VERDICTS",
    "ARCH_VERDICT_LABELS",
    "CPU_FAILS",
    "FAILING",
    "GAP_LABELS",
    "NOT_RUN",
    "STATUSES",
    "STATUS_LABELS",
    "ArchVerdict",
    "arch_verdict",
    "cell_status",
    "runs_unmodified",
    "scenario_order",
]

CPU_FAILS = "cpu-fails"
NOT_RUN = "not-run"

#: Statuses held against neuron: every failure the CPU does not share, and a known failure (still a failure; it is
#: only expected).
FAILING: frozenset[str] = frozenset({"failed", "error", "timeout", "crashed", "known-failure"})

#: Every status, best first: the sort order of the table.
STATUSES: tuple[str, ...] = (
    "passed",
    "skipped",
    "untested",
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
    "skipped": "n/a",
    "untested": "untested",
    CPU_FAILS: "cpu fails too",
    "known-failure": "known",
    "failed": "fail",
    "error": "error",
    "timeout": "timeout",
    "crashed": "crash",
    NOT_RUN: "—",
}

ArchVerdict = Literal["fully-passes", "passes-where-tested", "untested", "fails-on-cpu-too", "fails-on-neuron"]
#: An architecture's verdict over the scenarios of its group (variants aside), in this order of precedence:
#: ``fails-on-neuron`` (a case fails on neuron), ``untested`` (forward was not tested: a harness gap),
#: ``fails-on-cpu-too`` (forward fails on the CPU the same way), ``fully-passes`` (every case passed or does not
#: apply), ``passes-where-tested`` (forward passed, nothing fails on neuron, some cases untested or failing on the CPU
#: too).
ARCH_VERDICTS: tuple[ArchVerdict, ...] = get_args(ArchVerdict)
ARCH_VERDICT_LABELS: dict[str, str] = {
    "fully-passes": "fully passes",
    "passes-where-tested": "passes where tested",
    "untested": "untested",
    "fails-on-cpu-too": "fails on the CPU too",
    "fails-on-neuron": "fails on neuron",
}

#: What each harness gap (:data:`~hf_neuron.matrix.records.GAPS`) means, as the report's "harness gaps to close".
GAP_LABELS: dict[str, str] = {
    "inputs": "inputs the matrix cannot build for the model",
    "pipeline-recipe": "no pipeline recipe for the diffusion backbone",
    "lora-targets": "LoRA target modules PEFT refuses",
    "tiny-build": "the tiny model does not build",
    "devices": "fewer devices than the scenario needs",
    "checks": "scenario checks that do not fit the model",
}


def cell_status(record: Mapping[str, Any]) -> str:
    """The status of a case from its record: its outcome, or ``cpu-fails`` when the CPU fails the same way."""
    return CPU_FAILS if case_verdict(record) == "fails-on-cpu-too" else str(record["outcome"])


def runs_unmodified(statuses: Mapping[str, str], core: Collection[str]) -> bool:
    """True when ``forward`` passed and every other scenario of ``core`` (the core scenarios the architecture's group
    runs) passed or does not apply to the model."""
    return statuses.get("forward") == "passed" and all(
        statuses.get(scenario, NOT_RUN) in ("passed", "skipped") for scenario in core
    )


def arch_verdict(statuses: Mapping[str, str]) -> ArchVerdict:
    """The verdict of an architecture from the statuses of its cases (variant scenarios aside)."""
    mine = {scenario: status for scenario, status in statuses.items() if scenario not in VARIANT_SCENARIOS}
    if FAILING & set(mine.values()):
        return "fails-on-neuron"
    forward = mine.get("forward", NOT_RUN)
    if forward in ("untested", NOT_RUN):
        return "untested"
    if forward == CPU_FAILS:
        return "fails-on-cpu-too"
    if all(status in ("passed", "skipped", NOT_RUN) for status in mine.values()):
        return "fully-passes"
    return "passes-where-tested"


def scenario_order(found: Collection[str]) -> list[str]:
    """The table's scenario columns: every scenario of the matrix in order, then any other scenario found, by name."""
    return list(SCENARIO_NAMES) + sorted(set(found) - set(SCENARIO_NAMES))
