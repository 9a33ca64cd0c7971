"""How a case and an architecture count in the report.

A cell's *status* (:data:`~hf_neuron.vocabulary.outcomes.STATUSES`) is the record's outcome, except that a failure the
CPU shares is ``fails-on-cpu-too``, a failure at a documented limitation of the device (flex attention) is
``neuron-limitation`` (:func:`~hf_neuron.vocabulary.records.case_verdict`), and a case without a record is
``not-run``. An architecture's *verdict* sums up its cases (:func:`arch_verdict`), and it *runs unmodified* when
``forward`` passed and every core scenario its group runs passed or does not apply (:func:`runs_unmodified`): one
rule for every group. Which scenarios are core and which are variants the records say (their ``scenario_facts``).

Nothing passes on what did not run: a roll-up counts a case as passing only when its record says ``passed`` (or
``skipped``: it does not apply). A core case the run meant to run (:class:`Plan`) and has no record of is
``missing``: its architecture is never ``fully-passes`` nor runs unmodified.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hf_neuron.vocabulary.outcomes import (
    DID_NOT_WORK,
    FAILS_ON_CPU_TOO,
    MISSING,
    NEURON_LIMITATION,
    NOT_RUN,
    ArchVerdict,
    Status,
)
from hf_neuron.vocabulary.records import NamedScenario, case_verdict
from hf_neuron.vocabulary.scenarios import SCENARIO_KINDS, SCHEMA_2_SCENARIOS, ScenarioFacts

__all__ = ["FAILING", "STATUS_ALIASES", "Plan", "arch_verdict", "cell_status", "runs_unmodified", "scenario_order"]

#: Statuses held against neuron: every failure the CPU does not share, and a known failure (still a failure; it is
#: only expected).
FAILING: frozenset[str] = frozenset({*DID_NOT_WORK, "known-failure"})
#: Statuses older history summaries wrote under another name -> the name now.
STATUS_ALIASES: dict[str, Status] = {"cpu-fails": FAILS_ON_CPU_TOO}


@dataclass(frozen=True)
class Plan:
    """Which core cases a run meant to run on each architecture it has records of: the scenarios its selection chose
    (``selected``; None where its records do not say, before they did: then every scenario the run has a record of
    in the architecture's group), each on the groups that have a case of it (``groups``; a scenario it does not name:
    every group)."""

    selected: frozenset[str] | None = None
    groups: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, declared: Sequence[NamedScenario]) -> Plan:
        """The plan a run's scenario set (its ``env.scenarios``) declares."""
        said = [scenario for scenario in declared if "selected" in scenario]
        return cls(frozenset(s["name"] for s in said if s["selected"]) if said else None,
                   {s["name"]: frozenset(s["groups"]) for s in declared if "groups" in s})

    def core(self, core: Sequence[str], group: str, recorded: Collection[str]) -> list[str]:
        """The scenarios of ``core`` the run meant to run on an architecture of ``group``; ``recorded``: the
        scenarios the run has a record of in that group (what it meant where its records do not say)."""
        chosen = recorded if self.selected is None else self.selected
        return [s for s in core if s in chosen and (s not in self.groups or group in self.groups[s])]


def cell_status(record: Mapping[str, Any]) -> Status:
    """The status of a case from its record: its outcome, or ``fails-on-cpu-too`` when the CPU fails the same
    way, or ``neuron-limitation`` for a documented limitation of the device."""
    verdict = case_verdict(record)
    return verdict if verdict in (FAILS_ON_CPU_TOO, NEURON_LIMITATION) else record["outcome"]


def runs_unmodified(statuses: Mapping[str, str], core: Collection[str]) -> bool:
    """True when ``forward`` passed and every other scenario of ``core`` (the core scenarios the architecture's group
    runs) passed or does not apply to the model."""
    return statuses.get("forward") == "passed" and all(
        statuses.get(scenario, NOT_RUN) in ("passed", "skipped") for scenario in core
    )


def arch_verdict(statuses: Mapping[str, str], variants: Collection[str]) -> ArchVerdict:
    """The verdict of an architecture from the statuses of its cases (the ``variants`` aside): a ``missing`` case
    is no pass, so an architecture with one is at best ``passes-where-tested``."""
    mine = {scenario: status for scenario, status in statuses.items() if scenario not in variants}
    if FAILING & set(mine.values()):
        return "fails-on-neuron"
    forward = mine.get("forward", NOT_RUN)
    if forward in ("untested", MISSING, NOT_RUN):
        return "untested"
    if forward == FAILS_ON_CPU_TOO:
        return FAILS_ON_CPU_TOO
    if NEURON_LIMITATION in mine.values():
        return NEURON_LIMITATION
    if all(status in ("passed", "skipped", NOT_RUN) for status in mine.values()):
        return "fully-passes"
    return "passes-where-tested"


def scenario_order(facts: Mapping[str, ScenarioFacts]) -> list[str]:
    """The table's scenario columns: core scenarios first, then the others, then variants; within a kind, the built-in
    scenarios in the order reports always showed them, then any other by name."""
    known = list(SCHEMA_2_SCENARIOS)
    return sorted(facts, key=lambda name: (SCENARIO_KINDS.index(facts[name]["kind"]),
                                           known.index(name) if name in known else len(known), name))
