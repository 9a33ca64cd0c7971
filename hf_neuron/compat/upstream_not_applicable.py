"""Upstream tests that are not applicable on neuron (``compat/upstream_not_applicable.toml``), each with its reason.

``hf-neuron upstream`` runs the libraries' own tests on neuron and on the CPU. A test listed here that fails on
neuron with the failure its entry expects is recorded as ``known-failure`` with the entry's reason, and does not
fail the run; a listed test that passes on neuron is reported as removable from the list. ::

    [[not_applicable]]
    suite = "transformers"                        # whose test suite
    test = ["test_generate_compile_*"]            # fnmatch patterns on the test's name (a string or a list)
    reason = "why the test cannot run on neuron as written, in one sentence"
    message = "InductorError"                     # regex searched in "Type: message" of the neuron failure
    model_type = ["llama"]                        # optional: only these architectures (default: every one)

``message`` is required: an entry excuses one failure, and the same test failing on neuron in another way is
still a neuron failure.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import tomllib
from pathlib import Path
from typing import Any

from hf_neuron.compat.files import COMPAT_DIR, CompatFileError

__all__ = ["NOT_APPLICABLE_PATH", "SUITES", "NotApplicable", "NotApplicableList", "load_not_applicable"]

NOT_APPLICABLE_PATH = COMPAT_DIR / "upstream_not_applicable.toml"
#: The libraries whose test suites ``hf-neuron upstream`` runs.
SUITES: tuple[str, ...] = ("transformers",)
_TABLE = "not_applicable"
_REQUIRED = ("suite", "test", "reason", "message")
_OPTIONAL = ("model_type",)


@dataclasses.dataclass(frozen=True)
class NotApplicable:
    """One reviewed entry: the tests (``fnmatch`` patterns on test names) of ``suite`` it names, on
    ``model_types`` (empty: every architecture), why, and the failure (``message``) it expects."""

    suite: str
    tests: tuple[str, ...]
    reason: str
    message: re.Pattern[str]
    model_types: tuple[str, ...] = ()

    def names(self, suite: str, model_type: str, test: str) -> bool:
        """True when this entry lists ``test`` (a test's name, without its class) of ``model_type``."""
        return (suite == self.suite and (not self.model_types or model_type in self.model_types)
                and any(fnmatch.fnmatchcase(test, pattern) for pattern in self.tests))

    def as_dict(self) -> dict[str, Any]:
        """The entry as a record carries it."""
        return {"suite": self.suite, "test": list(self.tests), "reason": self.reason,
                "message": self.message.pattern, "model_type": list(self.model_types)}


@dataclasses.dataclass(frozen=True)
class NotApplicableList:
    """The loaded list."""

    entries: tuple[NotApplicable, ...] = ()

    def match(self, suite: str, model_type: str, test: str, failure_text: str | None) -> NotApplicable | None:
        """The entry that lists this test; with ``failure_text`` (``"Type: message"`` of its neuron failure), only
        one that expects that failure. None (a passing test) matches on the name alone."""
        for entry in self.entries:
            if entry.names(suite, model_type, test) and (
                    failure_text is None or entry.message.search(failure_text) is not None):
                return entry
        return None


def _strings(path: Path, where: str, key: str, value: Any) -> tuple[str, ...]:
    """A string or a non-empty list of distinct non-empty strings, as a tuple."""
    values = [value] if isinstance(value, str) else value
    if (not isinstance(values, list) or not values or len(set(values)) != len(values)
            or not all(isinstance(v, str) and v.strip() for v in values)):
        raise CompatFileError(path, f"{where}: {key} must be a non-empty string or a list of distinct ones")
    return tuple(values)


def _entry(path: Path, index: int, raw: Any) -> NotApplicable:
    where = f"[[{_TABLE}]] #{index + 1}"
    if not isinstance(raw, dict):
        raise CompatFileError(path, f"{where} is not a table")
    where += f" (test={raw.get('test')!r})"
    if unknown := sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL)):
        raise CompatFileError(path, f"{where}: unknown key(s) {', '.join(unknown)}; "
                                    f"allowed: {', '.join(_REQUIRED + _OPTIONAL)}")
    if missing := [key for key in _REQUIRED if key not in raw]:
        raise CompatFileError(path, f"{where}: missing {', '.join(missing)} (every entry needs "
                                    f"{', '.join(_REQUIRED)})")
    for key in ("suite", "reason", "message"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise CompatFileError(path, f"{where}: {key} must be a non-empty string")
    if raw["suite"] not in SUITES:
        raise CompatFileError(path, f"{where}: suite {raw['suite']!r} is not one of {', '.join(SUITES)}")
    tests = _strings(path, where, "test", raw["test"])
    model_types = _strings(path, where, "model_type", raw["model_type"]) if "model_type" in raw else ()
    try:
        message = re.compile(raw["message"])
    except re.error as exc:
        raise CompatFileError(path, f"{where}: message is not a valid regular expression: {exc}") from exc
    return NotApplicable(raw["suite"], tests, raw["reason"], message, model_types)


def load_not_applicable(path: Path = NOT_APPLICABLE_PATH) -> NotApplicableList:
    """Read and validate ``path``; a missing file is an empty list."""
    if not path.is_file():
        return NotApplicableList()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CompatFileError(path, f"not valid TOML: {exc}") from exc
    if extra := sorted(set(document) - {_TABLE}):
        raise CompatFileError(path, f"unknown top-level key(s) {', '.join(extra)}; entries are [[{_TABLE}]] tables")
    raw_entries = document.get(_TABLE, [])
    if not isinstance(raw_entries, list):
        raise CompatFileError(path, f"{_TABLE} must be an array of tables: write each entry as [[{_TABLE}]]")
    return NotApplicableList(tuple(_entry(path, i, raw) for i, raw in enumerate(raw_entries)))
