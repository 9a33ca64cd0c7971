"""Read matrix records from result directories and check each against the record schema.

A bad line never stops a build: it is skipped, and a :class:`RecordProblem` names its file, its line and what is
wrong. The build prints the problems and the site shows how many lines were skipped, so a bad line is never lost
silently. When one case has several records (a retried case, overlapping shards), the one that finished last is
kept and the others are reported as problems too.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from hf_neuron.matrix.records import OUTCOMES, SCHEMA_VERSION, Record

__all__ = [
    "LoadedRecords",
    "RecordProblem",
    "ReportInputError",
    "is_name",
    "load_records",
    "parse_time",
    "validate_record",
]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")

Check = Callable[[Any], "str | None"]


class ReportInputError(Exception):
    """An input makes the build impossible (missing file, no valid record, several runs mixed)."""


@dataclass(frozen=True)
class RecordProblem:
    """A line that was skipped, and why."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class LoadedRecords:
    """The valid records (one per case) and the problems met on the way."""

    records: list[Record]
    problems: list[RecordProblem] = field(default_factory=list)


def parse_time(value: str) -> datetime:
    """An ISO-8601 timestamp as an aware datetime (a timestamp without offset is taken as UTC)."""
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


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


def _jsonl_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(path.rglob("*.jsonl")))
        elif path.is_file():
            files.append(path)
        else:
            raise ReportInputError(f"{path}: no such results directory or file")
    return files


_Located = tuple[Record, Path, int]


def _later_first(a: _Located, b: _Located) -> tuple[_Located, _Located]:
    """The two records of one case, the one that finished last first (on a tie, the one read last)."""
    return (a, b) if parse_time(a[0]["finished_at"]) >= parse_time(b[0]["finished_at"]) else (b, a)


def _parse_line(line: str) -> Record | str:
    """The record on ``line``, or what is wrong with it."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not valid JSON: {exc.msg} (column {exc.colno})"
    problems = validate_record(obj)
    return "; ".join(problems) if problems else cast(Record, obj)


def load_records(paths: Iterable[Path]) -> LoadedRecords:
    """Every valid record in ``paths`` (directories are searched for ``*.jsonl``; files are read as given)."""
    kept: dict[tuple[str, str], _Located] = {}
    problems: list[RecordProblem] = []
    for path in _jsonl_files(paths):
        with path.open(encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                record = _parse_line(line)
                if isinstance(record, str):
                    problems.append(RecordProblem(path, number, record))
                    continue
                key = (record["run_id"], record["case_id"])
                if key in kept:
                    newer, older = _later_first((record, path, number), kept[key])
                    message = f"duplicate of case {key[1]!r}: kept {newer[1]}:{newer[2]}, which finished last"
                    problems.append(RecordProblem(older[1], older[2], message))
                    kept[key] = newer
                else:
                    kept[key] = (record, path, number)
    return LoadedRecords([record for record, _, _ in kept.values()], problems)
