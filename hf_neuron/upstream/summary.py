"""What a run of upstream tests says, per architecture: counts on each device, and neuron's own failures.

A **neuron-only failure** is a test that did not work on neuron (failed, error, timeout, crashed) and that the CPU
does not fail the same way: the matrix's one rule (:func:`hf_neuron.vocabulary.failures.cpu_verdict`). It passed
there, or was skipped there (tests that need an accelerator run on neuron only), or has no CPU record, or failed
there differently; a timeout or a crash on either side never excuses. Tests not applicable on neuron
(``known-failure``) are counted apart, with their reason; a listed test that passes on neuron is *removable* from the
list.
Neuron-only failures are grouped by failure fingerprint, so one cause shows once with the tests it breaks. An
architecture passes when it has no neuron-only failure and at least one test passed on the CPU (a file that ran
nothing proves nothing). Pure: records in, summaries out.
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
    """One device's tests of one architecture by result: ``failed`` is every outcome that did not work,
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
    """One architecture's upstream tests (of ``suite``) on both devices."""

    model_type: str
    suite: str
    counts: Mapping[Device, Counts]
    neuron_only: tuple[FailureGroup, ...]
    not_applicable: tuple[tuple[str, str], ...]  # (test name, reason)
    removable: tuple[str, ...]  # test names listed as not applicable that pass on neuron

    @property
    def neuron_only_tests(self) -> int:
        return sum(len(group.tests) for group in self.neuron_only)

    @property
    def ran(self) -> bool:
        """True when at least one test passed on the CPU."""
        return self.counts["cpu"].passed > 0

    @property
    def ok(self) -> bool:
        return self.ran and not self.neuron_only


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


def _summary(model_type: str, records: list[UpstreamRecord]) -> ArchSummary:
    kept = latest(records, key=lambda record: (record["device"], record["test"]))  # a test recorded twice
    by_device = {device: [r for r in kept.values() if r["device"] == device] for device in DEVICES}
    neuron = by_device["neuron"]
    failing = [
        (record["test"], record["failure"] or _NO_DETAILS)
        for record in neuron
        if neuron_only(record, kept.get(("cpu", record["test"])))
    ]
    return ArchSummary(
        model_type=model_type,
        suite=", ".join(sorted({record["suite"] for record in records})),
        counts={device: _counts(by_device[device]) for device in DEVICES},
        neuron_only=_groups(failing),
        not_applicable=tuple(sorted((short_name(r["test"]), r["reason"] or "") for r in neuron
                                    if r["outcome"] == "known-failure")),
        removable=tuple(sorted(short_name(r["test"]) for r in neuron
                               if r["outcome"] == "passed" and r["not_applicable"] is not None)),
    )


_NO_DETAILS: Failure = {"type": "", "message": "no failure details recorded", "frame": "", "fingerprint": "none",
                        "failure_class": "other", "traceback": ""}


def summarize(records: Iterable[UpstreamRecord]) -> dict[str, ArchSummary]:
    """One summary per architecture, in the order the records name them."""
    by_arch: dict[str, list[UpstreamRecord]] = {}
    for record in records:
        by_arch.setdefault(record["model_type"], []).append(record)
    return {model_type: _summary(model_type, arch_records) for model_type, arch_records in by_arch.items()}
