"""The matrix's unit of output: one JSON record per (architecture, scenario) case.

A record is written as one line of a ``*.jsonl`` file the moment its case finishes, so an interrupted run loses
nothing that finished. The report reads records, never the runner. Everything a record holds is plain JSON.

Fields (``schema`` 1):

======================  =============================================================================
``schema``              1
``run_id``              identifies the run (shards of one run share it)
``case_id``             ``"<model_type>::<scenario>"``, unique within a run
``model_type``          transformers ``model_type`` (or a diffusers class name in the diffusion group)
``group``               catalog group, e.g. ``decoder``, ``encoder-decoder``, ``multimodal``, ``diffusion``
``scenario``            one of :data:`SCENARIO_NAMES`
``outcome``             one of :data:`OUTCOMES`
``reason``              why, for ``skipped`` and ``known-failure``; else null
``duration_s``          wall seconds of the case
``peak_memory_bytes``   peak device memory during the case (null when the backend cannot tell)
``parity``              ``{"metric": "max_abs_diff", "value": float, "tolerance": float}`` or null
``cpu_outcome``         outcome of the same scenario run on the CPU alone (``passed``/``failed``/...), or null
``cpu_failure``         null, or ``{"type", "message", "frame", "fingerprint"}`` of the CPU re-run's failure: the
                        same ``fingerprint`` as ``failure`` says the CPU fails the same way (records written
                        before this field existed lack it; readers take it as null)
``failure``             null, or ``{"type", "message", "frame", "fingerprint", "traceback", "failure_class"}``
``known_failure``       the matching entry of ``compat/known_failures.toml`` (dict; its ``model_type`` and
                        ``scenario`` may be lists) or null
``env``                 ``{"backend": "reference"|"real"|"none", "backend_version", "device_count", "python",
                        "torch", "transformers", "accelerate", "peft", "diffusers", "hf_neuron", "host",
                        "patches"}`` (``none`` only in a ``--device cpu`` baseline run: a neuron run refuses to
                        start without a backend)
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
    "CORE_SCENARIOS",
    "DID_NOT_WORK",
    "OUTCOMES",
    "SCENARIO_NAMES",
    "SCHEMA_VERSION",
    "TRAINING_SCENARIOS",
    "CpuFailure",
    "Failure",
    "Outcome",
    "Parity",
    "Record",
    "ScenarioName",
    "is_name",
    "parse_time",
    "validate_record",
]

SCHEMA_VERSION = 1

Outcome = Literal["passed", "failed", "error", "timeout", "crashed", "skipped", "known-failure"]

#: The closed set of outcomes. ``failed``: the scenario ran and its check did not hold (parity, device, loss);
#: ``error``: it raised; ``timeout``: it exceeded the per-case limit; ``crashed``: its process died;
#: ``skipped``: not applicable, with a reason; ``known-failure``: failed as ``compat/known_failures`` expects.
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

#: Outcomes of a run that did not work, on the device or on the CPU (a known failure is an outcome of the record,
#: given after the run: the run itself was one of these).
DID_NOT_WORK: frozenset[str] = frozenset({"failed", "error", "timeout", "crashed"})

ScenarioName = Literal["load", "forward", "generate", "train", "lora", "bf16", "compile", "save", "ddp"]
#: Every scenario name the matrix knows, in the order the report shows them.
SCENARIO_NAMES: tuple[ScenarioName, ...] = get_args(ScenarioName)
#: The scenarios an architecture must pass (or be excused from) to count as running unmodified on neuron.
CORE_SCENARIOS: tuple[ScenarioName, ...] = ("load", "forward", "generate", "train")
#: Scenarios that train: compared with a baseline's training support, every other one with its inference support.
TRAINING_SCENARIOS: frozenset[ScenarioName] = frozenset({"train", "lora", "ddp"})


class Parity(TypedDict):
    metric: str
    value: float
    tolerance: float


class CpuFailure(TypedDict):
    type: str
    message: str
    frame: str
    fingerprint: str


class Failure(CpuFailure):
    traceback: str
    failure_class: str


class Record(TypedDict):
    schema: int
    run_id: str
    case_id: str
    model_type: str
    group: str
    scenario: str
    outcome: Outcome
    reason: str | None
    duration_s: float
    peak_memory_bytes: int | None
    parity: Parity | None
    cpu_outcome: str | None
    cpu_failure: CpuFailure | None
    failure: Failure | None
    known_failure: dict[str, Any] | None
    env: dict[str, Any]
    started_at: str
    finished_at: str


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


_CPU_FAILURE_FIELDS = ("type", "message", "frame", "fingerprint")
_FAILURE_FIELDS = (*_CPU_FAILURE_FIELDS, "traceback", "failure_class")
_FIELDS: dict[str, Check | _Object] = {
    "schema": _one_of([SCHEMA_VERSION]),
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
#: Fields checked only when present: records written before they existed lack them.
_LATER_FIELDS: dict[str, Check | _Object] = {
    "cpu_failure": _Object(dict.fromkeys(_CPU_FAILURE_FIELDS, _string), optional=True),
}


def validate_record(obj: Any) -> list[str]:
    """What is wrong with ``obj`` as a record (empty when it is a valid record). Unknown fields are allowed."""
    if not isinstance(obj, dict):
        return [f"expected a JSON object, got {type(obj).__name__}"]
    problems = _field_problems(obj, _FIELDS)
    problems += _field_problems(obj, {key: spec for key, spec in _LATER_FIELDS.items() if key in obj})
    if problems:
        return problems
    expected_case = f"{obj['model_type']}::{obj['scenario']}"
    if obj["case_id"] != expected_case:
        problems.append(f"'case_id' is {obj['case_id']!r}, expected {expected_case!r}")
    if obj["outcome"] in ("skipped", "known-failure") and not obj["reason"]:
        problems.append(f"outcome {obj['outcome']!r} needs a 'reason'")
    return problems
