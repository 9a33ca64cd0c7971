"""From what happened to the record: the CPU's verdict, harness gaps, known failures.

The worker (after running a case) and the controller (after a worker died running one) both end here, so a
``crashed`` record is built by the same rules as every other.

A failure on the device is excused only by the *same* failure on the CPU: the vocabulary's one rule
(:func:`hf_neuron.vocabulary.failures.cpu_verdict`). When the CPU fails the same way and the reviewed data says the
architecture has a harness gap (its tiny model needs an input the harness cannot build), the case is ``untested``, not
a failure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from hf_neuron.compat.known_failures import KnownFailures
from hf_neuron.matrix.selection import Case
from hf_neuron.vocabulary.failures import Failure, cpu_verdict, failure_text
from hf_neuron.vocabulary.gaps import Gap
from hf_neuron.vocabulary.outcomes import DID_NOT_WORK, FAILS_ON_CPU_TOO, AttemptOutcome, CpuVerdict, Outcome
from hf_neuron.vocabulary.records import (
    SCHEMA_VERSION,
    CheckpointFacts,
    CompileFacts,
    Env,
    Leg,
    Parity,
    Record,
    finite_facts,
)

__all__ = ["Attempt", "Observations", "compare_with_cpu", "to_record"]


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One run of a scenario on one device; ``failure`` is set for failed/error/timeout/crashed, ``gap`` for
    untested."""

    outcome: AttemptOutcome
    reason: str | None = None
    parity: Parity | None = None
    failure: Failure | None = None
    gap: Gap | None = None
    details: Mapping[str, Any] | None = None
    legs: tuple[Leg, ...] = ()


@dataclasses.dataclass(frozen=True)
class Observations:
    """What the case did on the device besides its result (each None when the backend cannot tell)."""

    peak_memory_bytes: int | None = None
    compile: CompileFacts | None = None
    fallback_ops: dict[str, int] | None = None


def compare_with_cpu(device: Attempt, cpu: Attempt | None) -> CpuVerdict | None:
    """How the CPU re-run ``cpu`` of a case compares with the device's attempt (None when that did not fail)."""
    return cpu_verdict(device.outcome, device.failure, None if cpu is None else cpu.outcome,
                       None if cpu is None else cpu.failure)


def to_record(
    case: Case,
    attempt: Attempt,
    *,
    cpu: Attempt | None,
    known: KnownFailures,
    run_id: str,
    env: Env,
    started_at: str,
    finished_at: str,
    duration_s: float,
    observed: Observations | None = None,
    checkpoint: CheckpointFacts | None = None,
) -> Record:
    """The record of ``case``: compares its failure with the CPU's, applies reviewed harness gaps and the
    known-failures list.

    ``cpu`` is the same scenario's re-run on the CPU, made when the device's run failed (else None). ``checkpoint``
    is what the case's checkpoint is at full size (a checkpoint's case whose facts were not had: its id only).
    """
    if checkpoint is None and case.checkpoint is not None:
        checkpoint = CheckpointFacts(id=case.checkpoint.id)
    observed = observed or Observations()
    outcome: Outcome = attempt.outcome
    reason = attempt.reason if outcome in ("skipped", "untested") else None
    gap = attempt.gap if outcome == "untested" else None
    verdict = compare_with_cpu(attempt, cpu)
    if verdict == FAILS_ON_CPU_TOO and case.reviewed_gap is not None:
        outcome, (gap, reason) = "untested", case.reviewed_gap
    entry = None
    if attempt.failure is not None and outcome in DID_NOT_WORK:
        entry = known.match(failure_text(attempt.failure), model_type=case.model_type, scenario=case.scenario)
        if entry is not None:
            outcome, reason = "known-failure", entry.reason
    elif outcome == "passed":  # a listed case that passes keeps its entry, so it can be taken off the list
        entry = known.match(None, model_type=case.model_type, scenario=case.scenario)
    return Record(
        schema=SCHEMA_VERSION,
        run_id=run_id,
        case_id=case.case_id,
        model_type=case.model_type,
        checkpoint=checkpoint,
        group=case.group,
        scenario=case.scenario,
        scenario_facts=case.facts,
        outcome=outcome,
        reason=reason,
        gap=gap,
        duration_s=round(duration_s, 3),
        peak_memory_bytes=observed.peak_memory_bytes,
        parity=attempt.parity,
        cpu_outcome=None if cpu is None else cpu.outcome,
        cpu_failure=None if cpu is None else cpu.failure,
        cpu_verdict=verdict,
        failure=attempt.failure,
        known_failure=None if entry is None else entry.as_dict(),
        compile=observed.compile,
        fallback_ops=observed.fallback_ops,
        details=None if attempt.details is None else finite_facts(dict(attempt.details)),
        legs=[Leg(**{**leg, "details": finite_facts(leg["details"])}) for leg in attempt.legs] or None,
        env=env,
        started_at=started_at,
        finished_at=finished_at,
    )
