"""The output of ``hf-neuron upstream``: one JSON record per upstream test and device.

Records follow the matrix's conventions: the closed outcome set of :mod:`hf_neuron.matrix.records`, the failure
fingerprint of :mod:`hf_neuron.matrix.case.fingerprint`, and the run's environment block of
:mod:`hf_neuron.matrix.results.environment`. They are appended as the tests finish, one line each, to
``*.jsonl`` files of the results directory (:class:`~hf_neuron.matrix.results.store.RecordWriter`).

Fields (``schema`` 1):

=====================  ===============================================================================
``schema``             1
``run_id``             identifies the run
``suite``              whose test suite: ``transformers``
``model_type``         the architecture, as given to ``--arch`` (its tests are ``tests/models/<arch>/``)
``test``               the pytest node id, relative to the source tree
                       (``tests/models/llama/test_modeling_llama.py::LlamaModelTest::test_x``)
``device``             ``neuron`` or ``cpu``
``outcome``            one of :data:`~hf_neuron.matrix.records.OUTCOMES`: ``failed`` the test failed, ``error``
                       its setup, teardown or collection did, ``timeout``, ``crashed`` (its process died),
                       ``skipped`` (upstream's reason; an expected failure ``xfail`` too), ``known-failure``
                       (fails on neuron as its ``compat/upstream_not_applicable.toml`` entry expects)
``reason``             why, for ``skipped`` and ``known-failure``; else null
``duration_s``         wall seconds of setup, call and teardown
``failure``            null, or ``{"type", "message", "frame", "fingerprint", "traceback"}``
``not_applicable``     the entry of ``compat/upstream_not_applicable.toml`` naming this neuron test, or null
                       (with outcome ``passed``: the entry can be removed)
``env``                the environment block of the run
``started_at``         ISO-8601 UTC
``finished_at``        ISO-8601 UTC
=====================  ===============================================================================
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, TypedDict, get_args

from hf_neuron.matrix.records import OUTCOMES, Outcome, is_name, parse_time

__all__ = [
    "DEVICES",
    "SCHEMA_VERSION",
    "Device",
    "UpstreamFailure",
    "UpstreamRecord",
    "read_records",
    "short_name",
    "validate_record",
]

SCHEMA_VERSION = 1
Device = Literal["cpu", "neuron"]
#: The devices every test runs on: the CPU is the reference the neuron result is judged against.
DEVICES: tuple[Device, ...] = get_args(Device)


class UpstreamFailure(TypedDict):
    type: str
    message: str
    frame: str
    fingerprint: str
    traceback: str


class UpstreamRecord(TypedDict):
    schema: int
    run_id: str
    suite: str
    model_type: str
    test: str
    device: Device
    outcome: Outcome
    reason: str | None
    duration_s: float
    failure: UpstreamFailure | None
    not_applicable: dict[str, Any] | None
    env: dict[str, Any]
    started_at: str
    finished_at: str


def short_name(node_id: str) -> str:
    """The test's name without file and class: what ``compat/upstream_not_applicable.toml`` patterns match."""
    return node_id.rpartition("::")[2]


_FAILURE_KEYS = tuple(UpstreamFailure.__annotations__)


def _problems(obj: dict[str, Any]) -> list[str]:
    missing = [key for key in UpstreamRecord.__annotations__ if key not in obj]
    if missing:
        return [f"missing field(s) {', '.join(missing)}"]
    problems = []
    texts = ("run_id", "suite", "test", "started_at", "finished_at")
    problems += [f"'{key}' must be a non-empty string" for key in texts
                 if not isinstance(obj[key], str) or not obj[key]]
    if obj["schema"] != SCHEMA_VERSION:
        problems.append(f"'schema' must be {SCHEMA_VERSION}")
    if not is_name(obj["model_type"]):
        problems.append("'model_type' must be a name of letters, digits, '_', '.' and '-'")
    if obj["device"] not in DEVICES:
        problems.append(f"'device' must be one of {', '.join(DEVICES)}")
    if obj["outcome"] not in OUTCOMES:
        problems.append(f"'outcome' must be one of {', '.join(OUTCOMES)}")
    elif obj["outcome"] in ("skipped", "known-failure") and not obj["reason"]:
        problems.append(f"outcome {obj['outcome']!r} needs a 'reason'")
    duration = obj["duration_s"]
    if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not duration >= 0:
        problems.append("'duration_s' must be a number >= 0")
    failure = obj["failure"]
    if failure is not None and not (isinstance(failure, dict)
                                    and all(isinstance(failure.get(key), str) for key in _FAILURE_KEYS)):
        problems.append(f"'failure' must be null or an object with string fields {', '.join(_FAILURE_KEYS)}")
    for key in ("not_applicable", "env"):
        if not isinstance(obj[key], dict) and not (key == "not_applicable" and obj[key] is None):
            problems.append(f"'{key}' must be an object")
    for key in ("started_at", "finished_at"):
        try:
            parse_time(obj[key])
        except (TypeError, ValueError):
            problems.append(f"'{key}' must be an ISO-8601 timestamp")
    return problems


def validate_record(obj: Any) -> list[str]:
    """What is wrong with ``obj`` as an upstream record (empty when nothing is). Unknown fields are allowed."""
    return _problems(obj) if isinstance(obj, dict) else [f"expected a JSON object, got {type(obj).__name__}"]


def _files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.rglob("*.jsonl")) if path.is_dir() else [path] if path.is_file() else [])
    return files


def read_records(paths: Iterable[Path]) -> tuple[list[UpstreamRecord], list[str]]:
    """The valid records in ``paths`` (directories are searched for ``*.jsonl``), and one ``file:line: problem``
    per line that is not one (skipped, never fatal: a results directory may hold a line cut short by a kill)."""
    records: list[UpstreamRecord] = []
    problems: list[str] = []
    for path in _files(paths):
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{path}:{number}: not valid JSON: {exc.msg}")
                continue
            if found := validate_record(obj):
                problems.append(f"{path}:{number}: not an upstream record: {'; '.join(found)}")
            else:
                records.append(obj)
    return records, problems
