"""What a run of upstream tests says, per unit (an architecture, or a test module): counts on each device, and
neuron's own failures.

A **neuron-only failure** is a test that did not work on neuron (failed, error, timeout, crashed) and that the CPU
does not fail the same way: the matrix's one rule (:func:`hf_neuron.vocabulary.failures.cpu_verdict`; a timeout or
a crash on either side never excuses). A test that passed on the CPU, was skipped there (tests that need an
accelerator run on neuron only), has no CPU record, or failed there in another way counts. Tests not applicable on
neuron (``known-failure``) are counted apart, with their reason; a listed test that passes on neuron is *removable*
from the list. Neuron-only failures are grouped by failure fingerprint, so one cause shows once with the tests it
breaks.

The two sides are compared test by test: a test that passed on the CPU and has no neuron record (a crash cut the
neuron run short before it) or was skipped on neuron only is a **neuron-side gap**: neuron ran nothing of it, so it
is never a pass, unless its skip is the one its suite gives a test that runs only where no accelerator is
(:attr:`~hf_neuron.upstream.suites.base.Suite.cpu_only_skip`, accelerate's ``require_cpu``: skipped on any
accelerator). A unit passes when it has no neuron-only failure and no neuron-side gap, and ran something: a test
passed on the CPU, or, where the CPU skipped every test (they need an accelerator), on neuron. Pure: records in,
summaries out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from hf_neuron.upstream.records import DEVICES, Device, UpstreamRecord, short_name
from hf_neuron.vocabulary.failures import Failure, cpu_verdict
from hf_neuron.vocabulary.outcomes import DID_NOT_WORK, FAILS_ON_CPU_TOO
from hf_neuron.vocabulary.records import latest

__all__ = ["ArchSummary", "Counts", "FailureGroup", "neuron_only", "summarize"]


@dataclasses.dataclass(frozen=True)
class Counts:
    """One device's tests of one unit by result: ``failed`` is every outcome that did not work,
    ``not_applicable`` the known failures (neuron only)."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    not_applicable: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped + self.not_applicable


@dataclasses.dataclass(frozen=True)
class FailureGroup:
    """Tests failing on neuron only, the same way (one fingerprint)."""

    fingerprint: str
    type: str
    message: str
    frame: str
    tests: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class ArchSummary:
    """One unit's upstream tests (of ``suite``) on both devices: ``model_type`` names the unit."""

    model_type: str
    suite: str
    counts: Mapping[Device, Counts]
    neuron_only: tuple[FailureGroup, ...]
    not_applicable: tuple[tuple[str, str], ...]  # (test name, reason)
    removable: tuple[str, ...]  # test names listed as not applicable that pass on neuron
    same_failure: int = 0  # neuron failures the CPU fails the same way
    on_stand_ins: int = 0  # neuron tests that read a stand-in of a Hub model or dataset
    #: test names that passed on the CPU and that neuron did not run: no neuron record, or skipped on neuron only
    neuron_gaps: tuple[str, ...] = ()

    @property
    def neuron_only_tests(self) -> int:
        return sum(len(group.tests) for group in self.neuron_only)

    @property
    def ran(self) -> bool:
        """True when a test passed on the CPU, or on neuron where the CPU skipped every test."""
        cpu, neuron = self.counts["cpu"], self.counts["neuron"]
        return cpu.passed > 0 or (cpu.total == cpu.skipped and neuron.passed > 0)

    @property
    def ok(self) -> bool:
        """True when it ran something, and neuron fails no test the CPU does not and ran every test the CPU passed."""
        return self.ran and not self.neuron_only and not self.neuron_gaps


def _counts(records: Iterable[UpstreamRecord]) -> Counts:
    outcomes = [record["outcome"] for record in records]
    return Counts(
        passed=outcomes.count("passed"),
        failed=sum(outcome in DID_NOT_WORK for outcome in outcomes),
        skipped=outcomes.count("skipped"),
        not_applicable=outcomes.count("known-failure"),
    )


def _groups(failures: list[tuple[str, Failure]]) -> tuple[FailureGroup, ...]:
    by_fingerprint: dict[str, list[tuple[str, Failure]]] = {}
    for test, failure in failures:
        by_fingerprint.setdefault(failure["fingerprint"], []).append((test, failure))
    groups = [
        FailureGroup(fingerprint, members[0][1]["type"], members[0][1]["message"], members[0][1]["frame"],
                     tuple(sorted(short_name(test) for test, _ in members)))
        for fingerprint, members in by_fingerprint.items()
    ]
    return tuple(sorted(groups, key=lambda group: (-len(group.tests), group.fingerprint)))


def neuron_only(neuron: UpstreamRecord, cpu: UpstreamRecord | None) -> bool:
    """Whether the neuron record of a test is a failure the CPU's record of it does not excuse (the one rule)."""
    return cpu_verdict(neuron["outcome"], neuron["failure"], None if cpu is None else cpu["outcome"],
                       None if cpu is None else cpu["failure"]) not in (None, FAILS_ON_CPU_TOO)


def _cpu_only(record: UpstreamRecord) -> bool:
    """Whether ``record`` is a skip its suite gives a test that runs only where no accelerator is."""
    from hf_neuron.upstream.suites import SUITES

    suite = SUITES.get(record["suite"])
    return (record["outcome"] == "skipped" and suite is not None and suite.cpu_only_skip is not None
            and record["reason"] == suite.cpu_only_skip)


def _summary(model_type: str, records: list[UpstreamRecord]) -> ArchSummary:
    kept = latest(records, key=lambda record: (record["device"], record["test"]))  # a test recorded twice
    by_device = {device: [r for r in kept.values() if r["device"] == device] for device in DEVICES}
    neuron = by_device["neuron"]
    failed = [record for record in neuron if record["outcome"] in DID_NOT_WORK]
    only = {record["test"] for record in failed if neuron_only(record, kept.get(("cpu", record["test"])))}
    failing = [(record["test"], record["failure"] or _NO_DETAILS) for record in failed if record["test"] in only]
    ran_on_neuron = {record["test"]: record["outcome"] for record in neuron}
    cpu_only = {record["test"] for record in neuron if _cpu_only(record)}
    return ArchSummary(
        model_type=model_type,
        suite=", ".join(sorted({record["suite"] for record in records})),
        counts={device: _counts(by_device[device]) for device in DEVICES},
        neuron_only=_groups(failing),
        not_applicable=tuple(sorted((short_name(r["test"]), r["reason"] or "") for r in neuron
                                    if r["outcome"] == "known-failure")),
        removable=tuple(sorted(short_name(r["test"]) for r in neuron
                               if r["outcome"] == "passed" and r["not_applicable"] is not None)),
        same_failure=len(failed) - len(only),
        on_stand_ins=sum(bool(record.get("stand_ins")) for record in neuron),
        neuron_gaps=tuple(sorted(short_name(r["test"]) for r in by_device["cpu"] if r["outcome"] == "passed"
                                 and r["test"] not in cpu_only
                                 and (r["test"] not in ran_on_neuron or ran_on_neuron[r["test"]] == "skipped"))),
    )


_NO_DETAILS: Failure = {"type": "", "message": "no failure details recorded", "frame": "", "fingerprint": "none",
                        "failure_class": "other", "traceback": ""}


def summarize(records: Iterable[UpstreamRecord]) -> dict[str, ArchSummary]:
    """One summary per unit, in the order the records name them (the units of several suites are kept apart:
    ``suite:unit`` when records of more than one suite are given)."""
    records = list(records)
    several = len({record["suite"] for record in records}) > 1
    by_unit: dict[str, list[UpstreamRecord]] = {}
    for record in records:
        key = f"{record['suite']}:{record['model_type']}" if several else record["model_type"]
        by_unit.setdefault(key, []).append(record)
    return {key: _summary(unit_records[0]["model_type"], unit_records) for key, unit_records in by_unit.items()}
