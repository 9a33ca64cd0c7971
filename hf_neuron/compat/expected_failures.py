"""Reviewed lists of failures that are expected, each with why: the one reader of ``compat/known_failures.toml`` (matrix
cases) and ``compat/upstream_not_applicable.toml`` (a library's own tests that cannot run on neuron as written).

Both files are arrays of tables of one shape: *selectors* that say which cases or tests an entry names (each a string
or a list of distinct strings, ``fnmatch`` patterns where the list allows them, ``"*"`` for every one), a ``reason``,
and a ``message``: a regular expression searched in the failure's ``"Type: message"``, so that an entry excuses one
failure and the same case failing another way is still a failure. A :class:`ListSchema` says what a file's entries
hold; :func:`load_expected` reads and checks one (a malformed file raises
:class:`~hf_neuron.vocabulary.datafiles.DataFileError` naming the file, the line, the entry and the key).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from hf_neuron.compat.files import read_toml
from hf_neuron.vocabulary.datafiles import DataFileError

__all__ = ["EVERY", "ExpectedFailure", "ExpectedFailures", "ListSchema", "Selector", "load_expected"]

#: The selector value that names every case (every architecture, every scenario).
EVERY = "*"


@dataclasses.dataclass(frozen=True)
class Selector:
    """One selecting key: whether an entry must give it (else it names every one), whether its values are
    ``fnmatch`` patterns, and the values it may take (None: any name; :data:`EVERY` is always allowed)."""

    required: bool = True
    patterns: bool = False
    allowed: Collection[str] | None = None


@dataclasses.dataclass(frozen=True)
class ListSchema:
    """What a file's ``[[table]]`` entries hold besides the shared ``reason`` and ``message``: its selectors, other
    keys (``required`` and ``optional``, non-empty strings; ``lists``, required, each a non-empty string or a list of
    distinct ones), whether ``message`` is required, and a ``check`` of an entry's own rules (what is wrong with it, or
    None)."""

    table: str
    selectors: Mapping[str, Selector]
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    message_required: bool = True
    check: Callable[[ExpectedFailure], str | None] | None = None
    lists: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return (*self.selectors, "reason", "message", *self.required, *self.optional, *self.lists)


@dataclasses.dataclass(frozen=True)
class ExpectedFailure:
    """One reviewed entry: what it names (``names``: selector -> values), why, the failure it expects (``message``),
    and the file's other keys (``fields``: strings; ``lists``: lists of strings)."""

    names: Mapping[str, tuple[str, ...]]
    reason: str
    message: re.Pattern[str] | None
    fields: Mapping[str, str] = dataclasses.field(default_factory=dict)
    patterns: frozenset[str] = frozenset()
    lists: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def selects(self, values: Mapping[str, str]) -> bool:
        """True when every selector names ``values[selector]``."""
        for key, wanted in self.names.items():
            value = values[key]
            if key in self.patterns:
                if not any(fnmatch.fnmatchcase(value, pattern) for pattern in wanted):
                    return False
            elif not {value, EVERY} & set(wanted):
                return False
        return True

    def expects(self, failure_text: str | None) -> bool:
        """True for a failure whose ``"Type: message"`` is ``failure_text``; None (a passing case) ignores the
        message."""
        return failure_text is None or self.message is None or self.message.search(failure_text) is not None

    @property
    def breadth(self) -> int:
        """How many selectors name every case: the narrower entry wins where two match."""
        return sum(EVERY in values for values in self.names.values())

    def as_dict(self) -> dict[str, Any]:
        """The entry as a record carries it (a selector of one value as that value)."""
        named = {key: values[0] if len(values) == 1 else list(values) for key, values in self.names.items()}
        return {**named, "reason": self.reason, **self.fields, **{key: list(v) for key, v in self.lists.items()},
                "message": None if self.message is None else self.message.pattern}


@dataclasses.dataclass(frozen=True)
class ExpectedFailures:
    """A loaded list."""

    entries: tuple[ExpectedFailure, ...] = ()

    def match(self, failure_text: str | None, **values: str) -> ExpectedFailure | None:
        """The entry that names ``values`` and expects the failure ``failure_text`` (None: a passing case, matched
        on the names alone); the narrowest first, then the first in the file."""
        found = [entry for entry in self.entries if entry.selects(values) and entry.expects(failure_text)]
        return min(found, key=lambda entry: entry.breadth) if found else None


def _strings(path: Path, where: str, key: str, value: Any) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else value
    if (not isinstance(values, list) or not values or len(set(values)) != len(values)
            or not all(isinstance(v, str) and v.strip() for v in values)):
        raise DataFileError(path, "must be a non-empty string or a list of distinct ones", table=where, key=key)
    return tuple(values)


def _entry(path: Path, schema: ListSchema, index: int, raw: Any) -> ExpectedFailure:
    where = f"[[{schema.table}]] #{index + 1}"
    if not isinstance(raw, dict):
        raise DataFileError(path, "is not a table", table=where)
    if unknown := sorted(set(raw) - set(schema.keys)):
        raise DataFileError(path, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(schema.keys)}",
                              table=where)
    needed = [*(key for key, s in schema.selectors.items() if s.required), "reason", *schema.required,
              *schema.lists, *(("message",) if schema.message_required else ())]
    if missing := [key for key in needed if key not in raw]:
        raise DataFileError(path, f"missing {', '.join(missing)} (every entry needs {', '.join(needed)})",
                              table=where)
    for key in ("reason", "message", *schema.required, *schema.optional):
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise DataFileError(path, "must be a non-empty string", table=where, key=key)
    names: dict[str, tuple[str, ...]] = {}
    for key, selector in schema.selectors.items():
        values = _strings(path, where, key, raw[key]) if key in raw else (EVERY,)
        if selector.allowed is not None and (bad := [v for v in values if v not in (*selector.allowed, EVERY)]):
            raise DataFileError(path, f"{', '.join(map(repr, bad))} is not one of {', '.join(selector.allowed)} "
                                        f"or {EVERY!r}", table=where, key=key)
        names[key] = values
    message = None
    if "message" in raw:
        try:
            message = re.compile(raw["message"])
        except re.error as exc:
            raise DataFileError(path, f"not a valid regular expression: {exc}", table=where, key="message") from exc
    entry = ExpectedFailure(names, raw["reason"], message,
                            {key: raw[key] for key in (*schema.required, *schema.optional) if key in raw},
                            frozenset(key for key, s in schema.selectors.items() if s.patterns),
                            {key: _strings(path, where, key, raw[key]) for key in schema.lists})
    if schema.check is not None and (problem := schema.check(entry)):
        raise DataFileError(path, problem, table=where)
    return entry


def load_expected(path: Path, schema: ListSchema, *, required: bool = False) -> ExpectedFailures:
    """Read and check ``path`` by ``schema``; a missing file is an empty list unless ``required``. Two entries that
    name the same case with the same message are refused (merge them)."""
    document = read_toml(path, required=required)
    if extra := sorted(set(document) - {schema.table}):
        raise DataFileError(path, f"unknown top-level key(s) {', '.join(extra)}; entries are [[{schema.table}]] "
                                    "tables")
    raw_entries = document.get(schema.table, [])
    if not isinstance(raw_entries, list):
        raise DataFileError(path, f"{schema.table} must be an array of tables: write each entry as "
                                    f"[[{schema.table}]]")
    entries = tuple(_entry(path, schema, index, raw) for index, raw in enumerate(raw_entries))
    seen: dict[tuple[Any, ...], int] = {}
    for index, entry in enumerate(entries):
        for combination in _combinations(entry.names):
            key = (*combination, None if entry.message is None else entry.message.pattern)
            if key in seen:
                raise DataFileError(path, f"names {dict(zip(entry.names, combination, strict=True))} with the same "
                                            f"message as #{seen[key] + 1}: merge them",
                                      table=f"[[{schema.table}]] #{index + 1}")
            seen[key] = index
    return ExpectedFailures(entries)


def _combinations(names: Mapping[str, tuple[str, ...]]) -> list[tuple[str, ...]]:
    combinations: list[tuple[str, ...]] = [()]
    for values in names.values():
        combinations = [(*prefix, value) for prefix in combinations for value in values]
    return combinations
