"""What a case (or an upstream test) came to, and how it counts: the closed sets of outcomes and verdicts, with the
one label each shows on a page.

The sets nest, each defined once: a scenario *returns* a :data:`ResultOutcome`; running it can also end in an
``error``, ``timeout`` or ``crash`` (:data:`AttemptOutcome`); a record's :data:`Outcome` adds ``known-failure`` (a
failure the reviewed list expects). How the CPU re-run compares with a failure on the device is a :data:`CpuVerdict`;
how the case counts, a :data:`CaseVerdict`; a report cell shows a :data:`Status`; an architecture sums up as an
:data:`ArchVerdict`. "The CPU fails the same way" has one name everywhere: ``fails-on-cpu-too``.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "ARCH_VERDICTS",
    "ATTEMPT_OUTCOMES",
    "CPU_VERDICTS",
    "DID_NOT_WORK",
    "FAILS_ON_CPU_TOO",
    "LABELS",
    "MISSING",
    "NEURON_LIMITATION",
    "NOT_RUN",
    "OUTCOMES",
    "RESULT_OUTCOMES",
    "STATUSES",
    "VERDICTS",
    "ArchVerdict",
    "AttemptOutcome",
    "CaseVerdict",
    "CpuVerdict",
    "DidNotWork",
    "Outcome",
    "ResultOutcome",
    "Status",
    "label",
]

ResultOutcome = Literal["passed", "failed", "skipped", "untested"]
#: What a scenario returns. ``failed``: it ran and its check did not hold (parity, device, loss); ``skipped``: it
#: does not apply to the model, with a reason about the model; ``untested``: the harness could not test it (a gap).
RESULT_OUTCOMES: tuple[ResultOutcome, ...] = get_args(ResultOutcome)

DidNotWork = Literal["failed", "error", "timeout", "crashed"]
#: Outcomes of a run that did not work, on the device or on the CPU: ``error`` (it raised), ``timeout`` (it ran past
#: its limit), ``crashed`` (its process died).
DID_NOT_WORK: tuple[DidNotWork, ...] = get_args(DidNotWork)

AttemptOutcome = Literal["passed", "failed", "skipped", "untested", "error", "timeout", "crashed"]
#: What one run of a scenario on one device can come to.
ATTEMPT_OUTCOMES: tuple[AttemptOutcome, ...] = get_args(AttemptOutcome)

Outcome = Literal["passed", "failed", "error", "timeout", "crashed", "skipped", "untested", "known-failure"]
#: A record's outcome: its attempt's, or ``known-failure`` when it failed as ``compat/known_failures.toml`` (or, for
#: a library's own test, ``compat/upstream_not_applicable.toml``) expects.
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

#: The one name of "the CPU, re-run on the same code path, fails the same way": the CPU's verdict, the case's
#: verdict, the report's cell status and the architecture's verdict all say it so.
FAILS_ON_CPU_TOO: Literal["fails-on-cpu-too"] = "fails-on-cpu-too"

CpuVerdict = Literal["passes", "fails-on-cpu-too", "different-failure", "not-rerun"]
#: How the CPU re-run of a case that failed on the device came out: it ``passes`` (does not fail: the failure is
#: neuron's), ``fails-on-cpu-too`` (the same failure: the model's or an upstream library's), fails a
#: ``different-failure`` (which excuses nothing), or was ``not-rerun`` (neuron's by construction, or its process died).
CPU_VERDICTS: tuple[CpuVerdict, ...] = get_args(CpuVerdict)

#: The one name of "a documented limitation of the neuron device, with a fix, not the model's failure" (a failure of a
#: class in :data:`~hf_neuron.vocabulary.failures.LIMITATIONS`: flex attention): the case's verdict, the report's cell
#: status and the architecture's verdict all say it so.
NEURON_LIMITATION: Literal["neuron-limitation"] = "neuron-limitation"

CaseVerdict = Literal["passed", "not-applicable", "untested", "fails-on-cpu-too", "neuron-limitation",
                      "fails-on-neuron"]
#: How a case counts: ``passed``; ``not-applicable`` (skipped); ``untested`` (a harness gap); ``fails-on-cpu-too``;
#: ``neuron-limitation`` (a documented limitation of the device, with its fix); ``fails-on-neuron`` (every other
#: failure, known failures included: a known failure is expected, not excused).
VERDICTS: tuple[CaseVerdict, ...] = get_args(CaseVerdict)

#: The status of a case the run has no record of and did not mean to run (a scenario its selection left out, or one
#: that has no case for the architecture).
NOT_RUN: Literal["not-run"] = "not-run"
#: The status of a case the run meant to run and has no record of (a shard that never came back, a process that died
#: before writing it). A roll-up counts a case as passing only when its record says passed (or skipped: does not
#: apply); a missing case never counts as one.
MISSING: Literal["missing"] = "missing"

Status = Literal["passed", "skipped", "untested", "fails-on-cpu-too", "neuron-limitation", "known-failure", "failed",
                 "error", "timeout", "crashed", "missing", "not-run"]
#: A report cell: the record's outcome, except ``fails-on-cpu-too`` for a failure the CPU shares,
#: ``neuron-limitation`` for a documented limitation of the device, ``missing`` and ``not-run``.
#: Best first: the sort order of a table.
STATUSES: tuple[Status, ...] = get_args(Status)

ArchVerdict = Literal["fully-passes", "passes-where-tested", "untested", "fails-on-cpu-too", "neuron-limitation",
                      "fails-on-neuron"]
#: An architecture's verdict over the scenarios of its group (variants aside), in this order of precedence:
#: ``fails-on-neuron`` (a case fails on neuron), ``untested`` (forward was not tested: a harness gap, or its case is
#: missing),
#: ``fails-on-cpu-too`` (forward fails on the CPU the same way), ``neuron-limitation`` (a case stops at a documented
#: limitation of the device, with its fix, and nothing else fails on neuron), ``fully-passes`` (every case passed or
#: does not apply), ``passes-where-tested`` (forward passed, nothing fails on neuron, some cases untested, missing or
#: failing on the CPU too).
ARCH_VERDICTS: tuple[ArchVerdict, ...] = get_args(ArchVerdict)

#: The short text of each outcome, status and verdict on a page (colour is never the only signal).
LABELS: dict[str, str] = {
    "passed": "pass",
    "failed": "fail",
    "error": "error",
    "timeout": "timeout",
    "crashed": "crash",
    "skipped": "n/a",
    "not-applicable": "n/a",
    "untested": "untested",
    "known-failure": "known",
    FAILS_ON_CPU_TOO: "fails on the CPU too",
    NEURON_LIMITATION: "neuron limitation",
    "fails-on-neuron": "fails on neuron",
    "fully-passes": "fully passes",
    "passes-where-tested": "passes where tested",
    MISSING: "missing",
    NOT_RUN: "—",
}


def label(name: str) -> str:
    """The page's text for an outcome, status or verdict (the name itself for one this module does not know)."""
    return LABELS.get(name, name)
