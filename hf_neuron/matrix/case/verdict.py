"""From what happened to the record: failure class, fingerprint, known-failure match, the record itself.

The worker (after running a case) and the controller (after a worker died running one) both end here, so a
``crashed`` record is built by the same rules as every other.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from hf_neuron.compat.known_failures import KnownFailures
from hf_neuron.matrix.case.classify import classify
from hf_neuron.matrix.case.fingerprint import FailureInfo
from hf_neuron.matrix.records import SCHEMA_VERSION, CpuFailure, Failure, Parity, Record
from hf_neuron.matrix.selection import Case

__all__ = ["Attempt", "AttemptOutcome", "to_record"]

#: What one run of a scenario on one device can come to, before known failures are applied.
AttemptOutcome = Literal["passed", "failed", "skipped", "error", "timeout", "crashed"]


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One run of a scenario on one device; ``failure`` is set for failed/error/timeout/crashed."""

    outcome: AttemptOutcome
    reason: str | None = None
    parity: Parity | None = None
    parity_missed: bool = False
    failure: FailureInfo | None = None


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
    peak_memory_bytes: int | None,
) -> Record:
    """The record of ``case``: classifies the failure and applies the known-failures list.

    ``cpu`` is the same scenario's run on the CPU alone, made when the device's run did not pass (else None).
    """
    cpu_outcome = None if cpu is None else cpu.outcome
    cpu_failure: CpuFailure | None = None
    if cpu is not None and cpu.failure is not None:
        info = cpu.failure
        cpu_failure = CpuFailure(type=info.type, message=info.message, frame=info.frame, fingerprint=info.fingerprint)
    outcome: Any = attempt.outcome
    reason = attempt.reason if outcome == "skipped" else None
    failure: Failure | None = None
    entry = None
    if attempt.failure is not None:
        info = attempt.failure
        failure = Failure(
            type=info.type,
            message=info.message,
            frame=info.frame,
            fingerprint=info.fingerprint,
            traceback=info.traceback,
            failure_class=classify(
                attempt.outcome, info.text, cpu_outcome=cpu_outcome, parity_missed=attempt.parity_missed
            ),
        )
        entry = known.match(case.model_type, case.scenario, info.text)
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
        duration_s=round(duration_s, 3),
        peak_memory_bytes=peak_memory_bytes,
        parity=attempt.parity,
        cpu_outcome=cpu_outcome,
        cpu_failure=cpu_failure,
        failure=failure,
        known_failure=None if entry is None else entry.as_dict(),
        env=env,
        started_at=started_at,
        finished_at=finished_at,
    )
