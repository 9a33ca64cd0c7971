"""The matrix's unit of output: one JSON record per (architecture, scenario) case, and what its fields mean.

A record is written as one line of a ``*.jsonl`` file the moment its case finishes, so an interrupted run loses
nothing that finished. The report reads records, never the runner. Everything a record holds is plain JSON. This
module is the one home of the format: the fields and their validation, the closed sets of outcomes, harness gaps,
CPU verdicts and scenario names, and :func:`case_verdict`, how a record counts.

Fields (``schema`` 2; records of schema 1 lack the fields marked *2* and are read as if they were null):

======================  =============================================================================
``schema``              2
``run_id``              identifies the run (shards of one run share it)
``case_id``             ``"<model_type>::<scenario>"``, unique within a run
``model_type``          transformers ``model_type`` (or a diffusers class name in the diffusion group)
``group``               catalog group, e.g. ``decoder``, ``encoder-decoder``, ``image-text``, ``diffusion``
``scenario``            one of :data:`SCENARIO_NAMES`
``outcome``             one of :data:`OUTCOMES`
``reason``              why, for ``skipped``, ``untested`` and ``known-failure``; else null
``gap``                 *2* for ``untested``: the harness gap (one of :data:`GAPS`); else null
``duration_s``          wall seconds of the case
``peak_memory_bytes``   peak device memory during the case (null when the backend cannot tell)
``parity``              ``{"metric", "value", "tolerance"}`` of the scenario's comparison with the CPU, or null
``cpu_outcome``         outcome of the same scenario re-run on the CPU after a failure on the device, or null
``cpu_failure``         null, or ``{"type", "message", "frame", "fingerprint", "failure_class"}`` of that re-run
``cpu_verdict``         *2* how the CPU re-run compares with the device's failure (one of :data:`CPU_VERDICTS`),
                        null when the device did not fail
``failure``             null, or ``{"type", "message", "frame", "fingerprint", "traceback", "failure_class"}``
``known_failure``       the matching entry of ``compat/known_failures.toml`` (dict; its ``model_type`` and
                        ``scenario`` may be lists) or null
``compile``             *2* null when nothing was compiled, else what Dynamo did during the case on the device:
                        ``{"backends", "graphs", "graph_breaks", "break_reasons", "recompiles",
                        "recompile_reasons"}``
``fallback_ops``        *2* operators that ran on the device during the case which the real backend runs on the CPU
                        (``{"aten::name": count}``), or null when the backend cannot tell
``details``             *2* scenario-specific facts (e.g. ``{"ranks": [...]}`` of ``ddp``), or null
``env``                 ``{"backend": "reference"|"real"|"none", "backend_version", "device_count", "profile",
                        "python", "torch", "transformers", "accelerate", "peft", "diffusers", "hf_neuron",
                        "hf_neuron_commit", "host", "patches"}`` (``none`` only in a ``--device cpu`` baseline run)
``started_at``          ISO-8601 UTC
``finished_at``         ISO-8601 UTC
======================  =============================================================================
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypedDict, get_args

__all__ = [
    "CONFLICT_POLICIES",
    "CORE_SCENARIOS",
    "CPU_VERDICTS",
    "DID_NOT_WORK",
    "EXCUSING_CLASSES",
    "GAPS",
    "OUTCOMES",
    "SCENARIO_NAMES",
    "SCHEMA_VERSION",
    "TRAINING_SCENARIOS",
    "VARIANT_SCENARIOS",
    "VERDICTS",
    "CaseVerdict",
    "CompileFacts",
    "ConflictPolicy",
    "CpuFailure",
    "CpuVerdict",
    "Failure",
    "Gap",
    "Outcome",
    "Parity",
    "Record",
    "ScenarioName",
    "case_verdict",
    "cpu_verdict",
    "is_name",
    "parse_time",
    "result_key",
    "validate_record",
]

SCHEMA_VERSION = 2

Outcome = Literal["passed", "failed", "error", "timeout", "crashed", "skipped", "untested", "known-failure"]

#: The closed set of outcomes. ``failed``: the scenario ran and its check did not hold (parity, device, loss);
#: ``error``: it raised; ``timeout``: it exceeded the per-case limit; ``crashed``: its process died;
#: ``skipped``: not applicable to this model, with a reason about the model; ``untested``: the harness could not
#: test it (a :data:`GAPS` entry says why); ``known-failure``: failed as ``compat/known_failures`` expects.
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

#: Outcomes of a run that did not work, on the device or on the CPU (a known failure is an outcome of the record,
#: given after the run: the run itself was one of these).
DID_NOT_WORK: frozenset[str] = frozenset({"failed", "error", "timeout", "crashed"})

Gap = Literal["inputs", "pipeline-recipe", "lora-targets", "tiny-build", "devices", "checks"]
#: Why the harness could not test a case (outcome ``untested``): an input of the model the harness cannot build,
#: no pipeline recipe for a diffusion backbone, LoRA target modules PEFT refuses, a tiny model that does not build,
#: fewer devices than the scenario needs, scenario checks that do not fit the model (e.g. a block-diffusion model's
#: logits and decoding). Each is the matrix's to close, not the model's or neuron's.
GAPS: tuple[Gap, ...] = get_args(Gap)

CpuVerdict = Literal["passes", "same-failure", "different-failure", "not-rerun"]
#: How the CPU re-run of a case that failed on the device came out: it ``passes`` (the failure is neuron's), fails
#: the ``same-failure`` (the model's), fails a ``different-failure`` (it does not excuse the device), or was
#: ``not-rerun`` (the device's failure is neuron's by construction, or its process died).
CPU_VERDICTS: tuple[CpuVerdict, ...] = get_args(CpuVerdict)
#: Failure classes specific enough that a CPU failure of the same class is the same failure (``other`` is not:
#: it is what no rule matched; ``timeout`` and ``crash`` never excuse).
EXCUSING_CLASSES: frozenset[str] = frozenset(
    {"compile", "out-of-memory", "unsupported-dtype", "op-missing", "device-hardcoded"}
)

CaseVerdict = Literal["passed", "not-applicable", "untested", "fails-on-cpu-too", "fails-on-neuron"]
#: How a case counts: ``passed``; ``not-applicable`` (skipped); ``untested`` (a harness gap); ``fails-on-cpu-too``
#: (the CPU fails the same way: the model's or an upstream failure, not neuron's); ``fails-on-neuron`` (every other
#: failure, known failures included: a known failure is expected, not excused).
VERDICTS: tuple[CaseVerdict, ...] = get_args(CaseVerdict)

ScenarioName = Literal[
    "load", "forward", "generate", "train", "lora", "bf16", "compile", "save", "ddp",
    "sdpa", "flex_attention", "generate_compiled", "train_aux_loss",
]
#: Every scenario name the matrix knows, in the order the report shows them.
SCENARIO_NAMES: tuple[ScenarioName, ...] = get_args(ScenarioName)
#: The scenarios an architecture must pass (or not need) to count as running unmodified on neuron.
CORE_SCENARIOS: tuple[ScenarioName, ...] = ("load", "forward", "generate", "train")
#: Variants of the core scenarios users hit (another attention implementation, an explicit compile config, MoE
#: training with the router's auxiliary loss): reported on their own, not part of "fully passes".
VARIANT_SCENARIOS: tuple[ScenarioName, ...] = ("sdpa", "flex_attention", "generate_compiled", "train_aux_loss")
#: Scenarios that train: compared with a baseline's training support, every other one with its inference support.
TRAINING_SCENARIOS: frozenset[ScenarioName] = frozenset({"train", "lora", "ddp", "train_aux_loss"})


class Parity(TypedDict):
    metric: str
    value: float
    tolerance: float


class CpuFailure(TypedDict):
    type: str
    message: str
    frame: str
    fingerprint: str
    failure_class: str


class Failure(CpuFailure):
    traceback: str


class CompileFacts(TypedDict):
    """What Dynamo did during a case: the backends asked for, graphs compiled, graph breaks, recompilations."""

    backends: list[str]
    graphs: int
    graph_breaks: int
    break_reasons: list[str]
    recompiles: int
    recompile_reasons: list[str]


class Record(TypedDict):
    schema: int
    run_id: str
    case_id: str
    model_type: str
    group: str
    scenario: str
    outcome: Outcome
    reason: str | None
    gap: Gap | None
    duration_s: float
    peak_memory_bytes: int | None
    parity: Parity | None
    cpu_outcome: str | None
    cpu_failure: CpuFailure | None
    cpu_verdict: CpuVerdict | None
    failure: Failure | None
    known_failure: dict[str, Any] | None
    compile: CompileFacts | None
    fallback_ops: dict[str, int] | None
    details: dict[str, Any] | None
    env: dict[str, Any]
    started_at: str
    finished_at: str


def cpu_verdict(record: Mapping[str, Any]) -> CpuVerdict | None:
    """The record's ``cpu_verdict``; for a schema-1 record, derived from its CPU outcome and failure (a CPU failure
    without a fingerprint to compare is a different failure: nothing shows it is the same)."""
    if record.get("cpu_verdict") is not None:
        return record["cpu_verdict"]
    if record["outcome"] not in DID_NOT_WORK and record["outcome"] != "known-failure":
        return None
    cpu_outcome = record.get("cpu_outcome")
    if cpu_outcome is None:
        return "not-rerun"
    if cpu_outcome not in DID_NOT_WORK:
        return "passes"
    failure, on_cpu = record.get("failure"), record.get("cpu_failure")
    same = bool(failure and on_cpu and failure["fingerprint"] == on_cpu["fingerprint"])
    return "same-failure" if same else "different-failure"


ConflictPolicy = Literal["error", "latest"]
#: What to do with records of one case that disagree: refuse them, or keep the latest.
CONFLICT_POLICIES: tuple[ConflictPolicy, ...] = get_args(ConflictPolicy)


def result_key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """What two records of one case must share to be one result seen twice (else they conflict): the outcome, the
    CPU's outcome and the failure's fingerprint."""
    failure = record.get("failure")
    return record["outcome"], record.get("cpu_outcome"), None if failure is None else failure["fingerprint"]


def case_verdict(record: Mapping[str, Any]) -> CaseVerdict:
    """How a record counts (see :data:`VERDICTS`)."""
    outcome = record["outcome"]
    if outcome == "passed":
        return "passed"
    if outcome == "skipped":
        return "not-applicable"
    if outcome == "untested":
        return "untested"
    if outcome != "known-failure" and cpu_verdict(record) == "same-failure":
        return "fails-on-cpu-too"
    return "fails-on-neuron"


# ---- validation -------------------------------------------------------------------------------------------
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")

Check = Callable[[Any], "str | None"]


def parse_time(value: str) -> datetime:
    """An ISO-8601 timestamp as an aware datetime (a timestamp without offset is taken as UTC)."""
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def is_name(value: Any) -> bool:
    """Whether ``value`` is a name safe in a file name and a URL: letters, digits, ``_ . -``, not leading ``. _ -``."""
    return isinstance(value, str) and _NAME.match(value) is not None


def _string(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "must be a non-empty string"


def _name(value: Any) -> str | None:
    ok = is_name(value)
    return None if ok else "must be a name of letters, digits, '_', '.' and '-', starting with a letter or digit"


def _number(value: Any) -> str | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return None if ok else "must be a finite number"


def _non_negative(value: Any) -> str | None:
    return _number(value) or (None if value >= 0 else "must be >= 0")


def _byte_count(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return None if ok else "must be a whole number >= 0"


def _one_of(allowed: Iterable[Any]) -> Check:
    allowed = tuple(allowed)
    return lambda value: None if value in allowed else "must be one of " + ", ".join(map(str, allowed))


def _timestamp(value: Any) -> str | None:
    try:
        parse_time(value)
    except (TypeError, ValueError):
        return "must be an ISO-8601 timestamp"
    return None


def _optional(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


@dataclass(frozen=True)
class _Object:
    """A field holding a JSON object with ``fields`` (and possibly more); None is allowed when ``optional``."""

    fields: Mapping[str, Check | _Object]
    optional: bool = False


def _field_problems(obj: Mapping[str, Any], fields: Mapping[str, Check | _Object], prefix: str = "") -> list[str]:
    problems = []
    for key, spec in fields.items():
        name = prefix + key
        if key not in obj:
            problems.append(f"missing field '{name}'")
            continue
        value = obj[key]
        if isinstance(spec, _Object):
            if isinstance(value, dict):
                problems.extend(_field_problems(value, spec.fields, prefix=f"{name}."))
                continue
            problem = None if value is None and spec.optional else "must be an object"
        else:
            problem = spec(value)
        if problem is not None:
            problems.append(f"'{name}' {problem} (got {json.dumps(value)[:60]})")
    return problems


def _counts(value: Any) -> str | None:
    ok = isinstance(value, dict) and all(isinstance(k, str) and _byte_count(v) is None for k, v in value.items())
    return None if ok else "must be an object of names to whole numbers >= 0"


def _strings(value: Any) -> str | None:
    ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
    return None if ok else "must be a list of strings"


_CPU_FAILURE_FIELDS = ("type", "message", "frame", "fingerprint")
_FAILURE_FIELDS = (*_CPU_FAILURE_FIELDS, "traceback", "failure_class")
_FIELDS: dict[str, Check | _Object] = {
    "schema": _one_of([1, SCHEMA_VERSION]),
    "run_id": _text,
    "case_id": _text,
    "model_type": _name,
    "group": _text,
    "scenario": _name,
    "outcome": _one_of(OUTCOMES),
    "reason": _optional(_string),
    "duration_s": _non_negative,
    "peak_memory_bytes": _optional(_byte_count),
    "parity": _Object({"metric": _text, "value": _number, "tolerance": _number}, optional=True),
    "cpu_outcome": _optional(_one_of(OUTCOMES)),
    "failure": _Object(dict.fromkeys(_FAILURE_FIELDS, _string), optional=True),
    "known_failure": _Object({}, optional=True),
    "env": _Object({"backend": _text}),
    "started_at": _timestamp,
    "finished_at": _timestamp,
}
#: The fields schema 2 added, required in its records.
_SCHEMA_2_FIELDS: dict[str, Check | _Object] = {
    "gap": _optional(_one_of(GAPS)),
    "cpu_failure": _Object(dict.fromkeys((*_CPU_FAILURE_FIELDS, "failure_class"), _string), optional=True),
    "cpu_verdict": _optional(_one_of(CPU_VERDICTS)),
    "compile": _Object({"backends": _strings, "graphs": _byte_count, "graph_breaks": _byte_count,
                        "break_reasons": _strings, "recompiles": _byte_count, "recompile_reasons": _strings},
                       optional=True),
    "fallback_ops": _optional(_counts),
    "details": _Object({}, optional=True),
}
#: A schema-1 record's ``cpu_failure``, checked when present (the earliest records lack it).
_SCHEMA_1_FIELDS: dict[str, Check | _Object] = {
    "cpu_failure": _Object(dict.fromkeys(_CPU_FAILURE_FIELDS, _string), optional=True),
}


def validate_record(obj: Any) -> list[str]:
    """What is wrong with ``obj`` as a record (empty when it is a valid record). Unknown fields are allowed."""
    if not isinstance(obj, dict):
        return [f"expected a JSON object, got {type(obj).__name__}"]
    problems = _field_problems(obj, _FIELDS)
    if obj.get("schema") == SCHEMA_VERSION:
        problems += _field_problems(obj, _SCHEMA_2_FIELDS)
    else:
        problems += _field_problems(obj, {key: spec for key, spec in _SCHEMA_1_FIELDS.items() if key in obj})
    if problems:
        return problems
    expected_case = f"{obj['model_type']}::{obj['scenario']}"
    if obj["case_id"] != expected_case:
        problems.append(f"'case_id' is {obj['case_id']!r}, expected {expected_case!r}")
    if obj["outcome"] in ("skipped", "untested", "known-failure") and not obj["reason"]:
        problems.append(f"outcome {obj['outcome']!r} needs a 'reason'")
    if (obj["outcome"] == "untested") != (obj.get("gap") is not None) and obj.get("schema") == SCHEMA_VERSION:
        problems.append("'gap' is given for an untested case, and only for one")
    return problems
