"""Known failures: the reviewed list of cases expected to fail, with why and what upstream change would fix them.

``compat/known_failures.toml`` holds ``[[known_failure]]`` tables::

    [[known_failure]]
    model_type = "mamba"            # or a list of model types that fail the same way: ["mamba", "mamba2"], or "*"
                                    # for every architecture (then `message` is required: one failure, by its text)
    scenario = "compile"            # a scenario name, a list of them, or "*" for every scenario
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
from collections.abc import Collection
from pathlib import Path
from typing import Any

from hf_neuron.compat.files import COMPAT_DIR
from hf_neuron.errors import InputError

__all__ = ["ANY_MODEL_TYPE", "ANY_SCENARIO", "KNOWN_FAILURES_PATH", "KnownFailure", "KnownFailures",
           "load_known_failures"]

KNOWN_FAILURES_PATH = COMPAT_DIR / "known_failures.toml"
ANY_SCENARIO = "*"
ANY_MODEL_TYPE = "*"
_TABLE = "known_failure"
_REQUIRED = ("model_type", "scenario", "reason", "upstream")
_OPTIONAL = ("message",)


@dataclasses.dataclass(frozen=True)
class KnownFailure:
    """One reviewed entry; ``message`` (a regex) narrows it to one failure of the case."""

    model_types: tuple[str, ...]
    scenarios: tuple[str, ...]
    reason: str
    upstream: str
    message: re.Pattern[str] | None = None

    def applies_to(self, model_type: str, scenario: str, failure_text: str | None) -> bool:
        """True for this case; ``failure_text`` None (a passing case) ignores the message pattern."""
        if not {model_type, ANY_MODEL_TYPE} & set(self.model_types):
            return False
        if not {scenario, ANY_SCENARIO} & set(self.scenarios):
            return False
        return failure_text is None or self.message is None or self.message.search(failure_text) is not None

    def as_dict(self) -> dict[str, Any]:
        """The entry as a record carries it."""
        return {
            "model_type": self.model_types[0] if len(self.model_types) == 1 else list(self.model_types),
            "scenario": self.scenarios[0] if len(self.scenarios) == 1 else list(self.scenarios),
            "reason": self.reason,
            "upstream": self.upstream,
            "message": None if self.message is None else self.message.pattern,
        }


@dataclasses.dataclass(frozen=True)
class KnownFailures:
    """The loaded list; entries for one scenario or architecture take precedence over ``"*"`` entries."""

    entries: tuple[KnownFailure, ...] = ()

    def match(self, model_type: str, scenario: str, failure_text: str | None) -> KnownFailure | None:
        candidates = [e for e in self.entries if e.applies_to(model_type, scenario, failure_text)]
        candidates.sort(key=lambda e: (ANY_MODEL_TYPE in e.model_types, ANY_SCENARIO in e.scenarios))
        return candidates[0] if candidates else None


def _entry(path: Path, index: int, raw: Any, scenario_names: Collection[str]) -> KnownFailure:
    where = f"{path}: [[{_TABLE}]] #{index + 1}"
    if not isinstance(raw, dict):
        raise InputError(f"{where} is not a table")
    where += f" (model_type={raw.get('model_type')!r}, scenario={raw.get('scenario')!r})"
    unknown = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_REQUIRED + _OPTIONAL)}"
        )
    for key in _REQUIRED + _OPTIONAL:
        if key not in ("model_type", "scenario") and key in raw and (
                not isinstance(raw[key], str) or not raw[key].strip()):
            raise InputError(f"{where}: {key} must be a non-empty string")
    model_types = [raw["model_type"]] if isinstance(raw.get("model_type"), str) else raw.get("model_type", [])
    if "model_type" in raw and (not isinstance(model_types, list) or not model_types or not all(
            isinstance(m, str) and m.strip() for m in model_types) or len(set(model_types)) != len(model_types)):
        raise InputError(f"{where}: model_type must be a non-empty string or a list of distinct ones")
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)} (every entry needs {', '.join(_REQUIRED)})")
    scenarios = [raw["scenario"]] if isinstance(raw["scenario"], str) else raw["scenario"]
    if (not isinstance(scenarios, list) or not scenarios or len(set(scenarios)) != len(scenarios)
            or not all(name in (*scenario_names, ANY_SCENARIO) for name in scenarios)):
        raise InputError(
            f"{where}: scenario must be one of {', '.join(scenario_names)} or {ANY_SCENARIO!r}, or a list of "
            "distinct scenario names"
        )
    if ANY_MODEL_TYPE in model_types and "message" not in raw:
        raise InputError(f"{where}: an entry for every architecture ({ANY_MODEL_TYPE!r}) needs a message: the "
                         "failure it expects, so that no other failure is excused")
    if not raw["upstream"].startswith(("https://", "http://")):
        raise InputError(f"{where}: upstream must be a link (https://...) to the issue or patch that fixes it")
    message = None
    if "message" in raw:
        try:
            message = re.compile(raw["message"])
        except re.error as exc:
            raise InputError(f"{where}: message is not a valid regular expression: {exc}") from exc
    return KnownFailure(tuple(model_types), tuple(scenarios), raw["reason"], raw["upstream"], message)


def load_known_failures(path: Path, scenario_names: Collection[str], *, required: bool = False) -> KnownFailures:
    """Read and validate ``path`` (whose scenarios must be among ``scenario_names``); a missing file is an empty
    list unless ``required``."""
    if not path.is_file():
        if required:
            raise InputError(f"known-failures file {path} does not exist")
        return KnownFailures()
    try:
        document = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from exc
    extra = sorted(set(document) - {_TABLE})
    if extra:
        raise InputError(f"{path}: unknown top-level key(s) {', '.join(extra)}; entries are [[{_TABLE}]] tables")
    raw_entries = document.get(_TABLE, [])
    if not isinstance(raw_entries, list):
        raise InputError(f"{path}: {_TABLE} must be an array of tables: write each entry as [[{_TABLE}]]")
    entries = tuple(_entry(path, i, raw, scenario_names) for i, raw in enumerate(raw_entries))
    seen: dict[tuple[str, str, str | None], int] = {}
    for i, entry in enumerate(entries):
        for model_type in entry.model_types:
            for scenario in entry.scenarios:
                key = (model_type, scenario, None if entry.message is None else entry.message.pattern)
                if key in seen:
                    raise InputError(
                        f"{path}: [[{_TABLE}]] #{i + 1} (model_type={model_type!r}, scenario={scenario!r}) "
                        f"repeats #{seen[key] + 1}: merge them"
                    )
                seen[key] = i
    return KnownFailures(entries)
