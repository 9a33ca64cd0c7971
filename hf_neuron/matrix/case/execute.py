"""Running one case in a worker: the scenario on the device under a time limit, the CPU re-run, the record.

The device's attempt is observed (:mod:`~hf_neuron.matrix.case.observe`: peak memory, compile facts, fallback
operators); a case on a neuron device that compiled with another backend fails for it. When the scenario fails on
the device (failed, error or timeout), it runs again on the CPU (``ctx.on("cpu")``, which keeps the device's code
path) and that run becomes the record's ``cpu_outcome``, ``cpu_failure`` and ``cpu_verdict``: only the same
failure on the CPU excuses the device's (:func:`~hf_neuron.matrix.case.verdict.compare_with_cpu`). A failure that is
neuron's by construction (its class in :data:`~hf_neuron.matrix.case.classify.NEURON_ONLY_CLASSES`) is not re-run.
A scenario that cannot be tested (a :class:`~hf_neuron.tiny.UnbuildableInputError`, or its own ``untested`` result) is
recorded ``untested`` with its harness gap, as is a case whose tiny model does not build (``Case.untested``),
without running.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from hf_neuron.compat.known_failures import KnownFailures
from hf_neuron.matrix.case.capture import describe_exception, describe_stack, frame_name
from hf_neuron.matrix.case.isolation import CaseTimeout, TimeLimit, autocast_off
from hf_neuron.matrix.case.observe import Observer, wrong_backend
from hf_neuron.matrix.case.verdict import Attempt, Observations, to_record
from hf_neuron.matrix.results.store import RecordWriter, now_iso
from hf_neuron.matrix.scenarios.contract import CaseContext, Scenario, ScenarioResult
from hf_neuron.matrix.scenarios.registry import ScenarioSet
from hf_neuron.matrix.selection import Case
from hf_neuron.matrix.workdir import SliceLedger
from hf_neuron.tiny import UnbuildableInputError
from hf_neuron.vocabulary.failures import NEURON_ONLY_CLASSES, Failure, failure
from hf_neuron.vocabulary.outcomes import AttemptOutcome
from hf_neuron.vocabulary.records import CheckpointFacts, Env, Record

__all__ = ["CaseRunner"]

#: Device outcomes after which the scenario runs again on the CPU.
_RERUN_ON_CPU: frozenset[AttemptOutcome] = frozenset({"failed", "error", "timeout"})


def _scenario_frame(scenario: Scenario) -> str:
    code = getattr(scenario, "__code__", None)
    return type(scenario).__name__ if code is None else frame_name(code.co_filename, code.co_name)


@dataclasses.dataclass(frozen=True)
class CaseRunner:
    """Runs cases in this process, one at a time, and writes each one's record before returning it."""

    scenarios: ScenarioSet
    known: KnownFailures
    writer: RecordWriter
    run_id: str
    env: Env
    device: str
    timeout_s: float
    workdir: Path
    ledger: SliceLedger | None = None

    def _timed_out(self, frame: FrameType | None, *, stuck: bool) -> Failure:
        message = f"the case ran past its {self.timeout_s:g} s limit"
        if stuck:
            message += " and did not respond to the interruption (stuck in native code?): its worker was ended"
        return describe_stack("CaseTimeout", message, frame, outcome="timeout", stop_at=CaseRunner._attempt.__code__)

    def _attempt(self, scenario: Scenario, ctx: CaseContext, on_stuck: Callable[[FrameType | None], None]) -> Attempt:
        try:
            with TimeLimit(self.timeout_s, on_stuck), autocast_off(ctx.device):
                result = scenario(ctx)
        except CaseTimeout as timeout:
            return Attempt("timeout", failure=self._timed_out(timeout.frame, stuck=False))
        except UnbuildableInputError as gap:
            return Attempt("untested", reason=str(gap), gap=gap.gap)
        except Exception as exc:  # noqa: BLE001 - whatever a scenario raises is its record's failure
            return Attempt("error", failure=describe_exception(exc))
        if not isinstance(result, ScenarioResult):
            message = f"scenario {ctx.scenario!r} returned {type(result).__name__}, not a ScenarioResult"
            return Attempt("error", failure=failure("TypeError", message, _scenario_frame(scenario), outcome="error"))
        if result.outcome == "failed":
            found = failure("CheckFailed", result.message or "", _scenario_frame(scenario), outcome="failed",
                            parity_missed=result.parity_missed)
            return Attempt("failed", parity=result.parity, failure=found, details=result.details, legs=result.legs)
        return Attempt(result.outcome, reason=result.message, parity=result.parity, gap=result.gap,
                       details=result.details, legs=result.legs)

    def _checked(self, attempt: Attempt, observed: Observations, scenario: Scenario) -> Attempt:
        """``attempt``, failed when it compiled with a backend the device must not use."""
        why = wrong_backend(observed.compile, self.device)
        if why is None or attempt.failure is not None:
            return attempt
        return dataclasses.replace(
            attempt, outcome="failed", failure=failure("CheckFailed", why, _scenario_frame(scenario), outcome="failed")
        )

    @staticmethod
    def _checkpoint(case: Case) -> CheckpointFacts | None:
        """What ``case``'s checkpoint is at full size (None for a tiny model's case; its id only where it cannot be
        read or planned: then the case itself fails saying why)."""
        if case.checkpoint is None:
            return None
        from hf_neuron.checkpoint.facts import checkpoint_facts, prepare

        try:
            return checkpoint_facts(prepare(case.checkpoint))
        except Exception:  # noqa: BLE001 - the scenario meets the same error and records it
            return CheckpointFacts(id=case.checkpoint.id)

    def run(self, case: Case) -> Record:
        """Run ``case`` on the device (and on the CPU if it fails), record it, return the record (and, the last case
        of a checkpoint, remove its slice)."""
        try:
            return self._run(case)
        finally:
            if self.ledger is not None:
                self.ledger.finished(case)

    def _run(self, case: Case) -> Record:
        started_at, start = now_iso(), time.monotonic()
        scenario = self.scenarios[case.scenario].implementation(case.group)
        if scenario is None:
            raise KeyError(f"scenario {case.scenario!r} has no implementation for group {case.group!r}")
        ctx = CaseContext(case.model_type, case.group, case.scenario, self.device, self.workdir,
                          slice_request=case.checkpoint)
        checkpoint = self._checkpoint(case)

        def record(attempt: Attempt, cpu: Attempt | None, observed: Observations | None) -> Record:
            return to_record(
                case, attempt, cpu=cpu, known=self.known, run_id=self.run_id, env=self.env,
                started_at=started_at, finished_at=now_iso(), duration_s=time.monotonic() - start, observed=observed,
                checkpoint=checkpoint,
            )

        def stuck_on_device(frame: FrameType | None) -> None:
            self.writer.write(record(Attempt("timeout", failure=self._timed_out(frame, stuck=True)), None, None))

        if case.untested is not None:
            gap, reason = case.untested
            untested = record(Attempt("untested", reason=reason, gap=gap), None, None)
            self.writer.write(untested)
            return untested
        observer = Observer(self.device)
        observer.start()
        attempt = self._attempt(scenario, ctx, stuck_on_device)
        observed = observer.finish()
        attempt = self._checked(attempt, observed, scenario)
        cpu: Attempt | None = None
        rerun = (attempt.outcome in _RERUN_ON_CPU and attempt.failure is not None
                 and attempt.failure["failure_class"] not in NEURON_ONLY_CLASSES)
        if rerun and self.device != "cpu":

            def stuck_on_cpu(frame: FrameType | None) -> None:
                on_cpu = Attempt("timeout", failure=self._timed_out(frame, stuck=True))
                self.writer.write(record(attempt, on_cpu, observed))

            cpu = self._attempt(scenario, ctx.on("cpu"), stuck_on_cpu)
        result = record(attempt, cpu, observed)
        self.writer.write(result)
        return result
