"""Known failures: the reviewed list of cases expected to fail, with why and what upstream change would fix them.

``compat/known_failures.toml`` holds ``[[known_failure]]`` tables::

    [[known_failure]]
    model_type = "mamba"
    scenario = "compile"            # a scenario name, or "*" for every scenario of the architecture
    reason = "the conv1d of the mixer has no neuron kernel"
    upstream = "https://github.com/pytorch/pytorch/issues/NNNNN"
    message = "Could not run 'aten::convolution_overrideable'"   # optional regex, searched in "Type: message"

A failing case that matches an entry is recorded as ``known-failure``; a case that passes although an entry names
it keeps ``passed`` and carries the entry in ``known_failure``, so the summary and the report say it can be
removed from the list.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Any

from hf_neuron.matrix.errors import MatrixInputError
from hf_neuron.matrix.scenarios import SCENARIO_NAMES

__all__ = ["ANY_SCENARIO", "KnownFailure", "KnownFailures", "load_known_failures"]

ANY_SCENARIO = "*"
_TABLE = "known_failure"
_REQUIRED = ("model_type", "scenario", "reason", "upstream")
_OPTIONAL = ("message",)


@dataclasses.dataclass(frozen=True)
class KnownFailure:
    """One reviewed entry; ``message`` (a regex) narrows it to one failure of the case."""

    model_type: str
    scenario: str
    reason: str
    upstream: str
    message: re.Pattern[str] | None = None

    def applies_to(self, model_type: str, scenario: str, failure_text: str | None) -> bool:
        """True for this case; ``failure_text`` None (a passing case) ignores the message pattern."""
        if self.model_type != model_type or self.scenario not in (scenario, ANY_SCENARIO):
            return False
        return failure_text is None or self.message is None or self.message.search(failure_text) is not None

    def as_dict(self) -> dict[str, Any]:
        """The entry as a record carries it."""
        return {
            "model_type": self.model_type,
            "scenario": self.scenario,
            "reason": self.reason,
            "upstream": self.upstream,
            "message": None if self.message is None else self.message.pattern,
        }


@dataclasses.dataclass(frozen=True)
class KnownFailures:
    """The loaded list; entries for one scenario take precedence over ``"*"`` entries."""

    entries: tuple[KnownFailure, ...] = ()

    def match(self, model_type: str, scenario: str, failure_text: str | None) -> KnownFailure | None:
        candidates = [e for e in self.entries if e.applies_to(model_type, scenario, failure_text)]
        candidates.sort(key=lambda e: e.scenario == ANY_SCENARIO)
        return candidates[0] if candidates else None


def _entry(path: Path, index: int, raw: Any) -> KnownFailure:
    where = f"{path}: [[{_TABLE}]] #{index + 1}"
    if not isinstance(raw, dict):
        raise MatrixInputError(f"{where} is not a table")
    where += f" (model_type={raw.get('model_type')!r}, scenario={raw.get('scenario')!r})"
    unknown = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise MatrixInputError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_REQUIRED + _OPTIONAL)}"
        )
    for key in _REQUIRED + _OPTIONAL:
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise MatrixInputError(f"{where}: {key} must be a non-empty string")
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise MatrixInputError(f"{where}: missing {', '.join(missing)} (every entry needs {', '.join(_REQUIRED)})")
    if raw["scenario"] not in (*SCENARIO_NAMES, ANY_SCENARIO):
        raise MatrixInputError(
            f"{where}: scenario must be one of {', '.join(SCENARIO_NAMES)} or {ANY_SCENARIO!r}"
        )
    if not raw["upstream"].startswith(("https://", "http://")):
        raise MatrixInputError(f"{where}: upstream must be a link (https://...) to the issue or patch that fixes it")
    message = None
    if "message" in raw:
        try:
            message = re.compile(raw["message"])
        except re.error as exc:
            raise MatrixInputError(f"{where}: message is not a valid regular expression: {exc}") from exc
    return KnownFailure(raw["model_type"], raw["scenario"], raw["reason"], raw["upstream"], message)


def load_known_failures(path: Path, *, required: bool = False) -> KnownFailures:
    """Read and validate ``path``; a missing file is an empty list unless ``required``."""
    if not path.is_file():
        if required:
            raise MatrixInputError(f"known-failures file {path} does not exist")
        return KnownFailures()
    try:
        document = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise MatrixInputError(f"{path}: not valid TOML: {exc}") from exc
    extra = sorted(set(document) - {_TABLE})
    if extra:
        raise MatrixInputError(f"{path}: unknown top-level key(s) {', '.join(extra)}; entries are [[{_TABLE}]] tables")
    raw_entries = document.get(_TABLE, [])
    if not isinstance(raw_entries, list):
        raise MatrixInputError(f"{path}: {_TABLE} must be an array of tables: write each entry as [[{_TABLE}]]")
    entries = tuple(_entry(path, i, raw) for i, raw in enumerate(raw_entries))
    seen: dict[tuple[str, str, str | None], int] = {}
    for i, entry in enumerate(entries):
        key = (entry.model_type, entry.scenario, None if entry.message is None else entry.message.pattern)
        if key in seen:
            raise MatrixInputError(
                f"{path}: [[{_TABLE}]] #{i + 1} (model_type={entry.model_type!r}, scenario={entry.scenario!r}) "
                f"repeats #{seen[key] + 1}: merge them"
            )
        seen[key] = i
    return KnownFailures(entries)
