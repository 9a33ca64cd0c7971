"""From what happened to the record: failure class, the CPU's verdict, harness gaps, known failures.

The worker (after running a case) and the controller (after a worker died running one) both end here, so a
``crashed`` record is built by the same rules as every other.

A failure on the device is excused only by the *same* failure on the CPU (:func:`compare_with_cpu`): the same
fingerprint (device names normalised), or the same failure class when that class is specific
(:data:`~hf_neuron.matrix.records.EXCUSING_CLASSES`). A timeout or a crash never excuses anything. When the CPU fails
the same way and the reviewed data says the architecture has a harness gap (its tiny model needs an input the
harness cannot build), the case is ``untested``, not a failure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from hf_neuron.compat.known_failures import KnownFailures
from hf_neuron.matrix.case.classify import FailureClass, classify
from hf_neuron.matrix.case.fingerprint import FailureInfo
from hf_neuron.matrix.records import (
    DID_NOT_WORK,
    EXCUSING_CLASSES,
    SCHEMA_VERSION,
    CompileFacts,
    CpuFailure,
    CpuVerdict,
    Failure,
    Gap,
    Parity,
    Record,
)
from hf_neuron.matrix.selection import Case

__all__ = ["Attempt", "AttemptOutcome", "Observations", "compare_with_cpu", "failure_class", "to_record"]

#: What one run of a scenario on one device can come to, before known failures are applied.
AttemptOutcome = Literal["passed", "failed", "skipped", "untested", "error", "timeout", "crashed"]


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One run of a scenario on one device; ``failure`` is set for failed/error/timeout/crashed, ``gap`` for
    untested."""

    outcome: AttemptOutcome
    reason: str | None = None
    parity: Parity | None = None
    parity_missed: bool = False
    failure: FailureInfo | None = None
    gap: Gap | None = None
    details: Mapping[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class Observations:
    """What the case did on the device besides its result (each None when the backend cannot tell)."""

    peak_memory_bytes: int | None = None
    compile: CompileFacts | None = None
    fallback_ops: dict[str, int] | None = None


def failure_class(attempt: Attempt) -> FailureClass | None:
    """The class of ``attempt``'s failure (None when it did not fail)."""
    if attempt.failure is None:
        return None
    return classify(attempt.outcome, attempt.failure.text, parity_missed=attempt.parity_missed)


def compare_with_cpu(device: Attempt, cpu: Attempt | None) -> CpuVerdict:
    """How the CPU re-run ``cpu`` of a case that failed on the device as ``device`` came out."""
    if cpu is None:
        return "not-rerun"
    if cpu.outcome not in DID_NOT_WORK or cpu.failure is None or device.failure is None:
        return "passes"
    if {"timeout", "crashed"} & {device.outcome, cpu.outcome}:
        return "different-failure"
    if device.failure.fingerprint == cpu.failure.fingerprint:
        return "same-failure"
    same_class = failure_class(device) == failure_class(cpu)
    return "same-failure" if same_class and failure_class(device) in EXCUSING_CLASSES else "different-failure"


def _cpu_failure(cpu: Attempt | None) -> CpuFailure | None:
    if cpu is None or cpu.failure is None:
        return None
    info = cpu.failure
    return CpuFailure(type=info.type, message=info.message, frame=info.frame, fingerprint=info.fingerprint,
                      failure_class=str(failure_class(cpu)))


def to_record(
    case: Case,
    attempt: Attempt,
    *,
    cpu: Attempt | None,
    known: KnownFailures,
    run_id: str,
    env: dict[str, Any],
    started_at: str,
    finished_at: str,
    duration_s: float,
    observed: Observations | None = None,
) -> Record:
    """The record of ``case``: classifies the failure, compares it with the CPU's, applies reviewed harness gaps and
    the known-failures list.

    ``cpu`` is the same scenario's re-run on the CPU, made when the device's run failed (else None).
    """
    observed = observed or Observations()
    outcome: Any = attempt.outcome
    reason = attempt.reason if outcome in ("skipped", "untested") else None
    gap = attempt.gap if outcome == "untested" else None
    verdict = compare_with_cpu(attempt, cpu) if outcome in DID_NOT_WORK else None
    if verdict == "same-failure" and case.reviewed_gap is not None:
        outcome, (gap, reason) = "untested", case.reviewed_gap
    failure: Failure | None = None
    entry = None
    if attempt.failure is not None:
        info = attempt.failure
        failure = Failure(type=info.type, message=info.message, frame=info.frame, fingerprint=info.fingerprint,
                          failure_class=str(failure_class(attempt)), traceback=info.traceback)
        entry = known.match(case.model_type, case.scenario, info.text) if outcome in DID_NOT_WORK else None
        if entry is not None:
            outcome, reason = "known-failure", entry.reason
    elif outcome == "passed":  # a listed case that passes keeps its entry, so it can be taken off the list
        entry = known.match(case.model_type, case.scenario, None)
    return Record(
        schema=SCHEMA_VERSION,
        run_id=run_id,
        case_id=case.case_id,
        model_type=case.model_type,
        group=case.group,
        scenario=case.scenario,
        outcome=outcome,
        reason=reason,
        gap=gap,
        duration_s=round(duration_s, 3),
        peak_memory_bytes=observed.peak_memory_bytes,
        parity=attempt.parity,
        cpu_outcome=None if cpu is None else cpu.outcome,
        cpu_failure=_cpu_failure(cpu),
        cpu_verdict=verdict,
        failure=failure,
        known_failure=None if entry is None else entry.as_dict(),
        compile=observed.compile,
        fallback_ops=observed.fallback_ops,
        details=None if attempt.details is None else dict(attempt.details),
        env=env,
        started_at=started_at,
        finished_at=finished_at,
    )
