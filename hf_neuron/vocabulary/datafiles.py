"""The one error for a malformed data file, and the rules every reader of a reviewed data file shares.

A :class:`DataFileError` names the file and, where it can, the line, the table and the key that are wrong, and what
to do. The readers of ``compat/`` (:mod:`hf_neuron.compat`) and of the reference device's operator list
(:mod:`hf_neuron.device.trainium_ops`) raise it; :func:`check_sorted` is the rule of the files whose header says
their tables are sorted, and :func:`toml_document` reads a document whose top-level keys are a closed set.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from hf_neuron.errors import InputError

__all__ = ["DataFileError", "check_sorted", "toml_document"]


def _header_line(path: Path, table: str) -> int | None:
    """The line of ``[table]`` (or of the ``#N``-th ``[[array]]`` for ``table = "array #N"``) in ``path``."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    array = re.fullmatch(r"\[\[(.+)\]\] #(\d+)", table)
    if array:
        name, wanted = array[1], int(array[2])
        found = [number for number, line in enumerate(lines, start=1) if line.strip() == f"[[{name}]]"]
        return found[wanted - 1] if len(found) >= wanted else None
    header = re.compile(r"\[\s*" + r"\s*\.\s*".join(re.escape(part) for part in table.split(".")) + r"\s*\]")
    return next((number for number, line in enumerate(lines, start=1) if header.fullmatch(line.strip())), None)


class DataFileError(InputError):
    """A reviewed data file is malformed; the message names the file, the line, the table and the key
    where it can, and the problem.

    ``table`` is written as the file writes it (``mistral3``, ``backbones.FluxTransformer2DModel``, or
    ``[[known_failure]] #3`` for the third table of an array); the line is looked up from it when not given.
    """

    def __init__(self, path: Path, problem: str, *, table: str | None = None, key: str | None = None,
                 line: int | None = None) -> None:
        if line is None and table is not None:
            line = _header_line(path, table)
        where = f"{path}:{line}" if line is not None else str(path)
        if table is not None:
            where += f": {table if table.startswith('[[') else f'[{table}]'}"
        if key is not None:
            where += f" {key}"
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.problem = problem
        self.table = table
        self.key = key
        self.line = line


def check_sorted(path: Path, names: Iterable[str], what: str) -> None:
    """Raise :class:`DataFileError` unless ``names`` (the file's tables, in file order) are sorted, as the file's
    header says they must be; the error names the first one out of place."""
    seen = list(names)
    for before, name in itertools.pairwise(seen):
        if name < before:
            raise DataFileError(path, f"{what} must be sorted: {name!r} comes after {before!r}; move it up",
                                  table=name)


def toml_document(path: Path, text: str, tables: Collection[str]) -> dict[str, Any]:
    """The TOML document ``text`` of ``path``, refused (:class:`DataFileError`) when it is not valid TOML or has a
    top-level key other than ``tables``."""
    import tomllib

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DataFileError(path, f"not valid TOML: {error}") from None
    if unknown := sorted(set(document) - set(tables)):
        raise DataFileError(path, f"unknown top-level key(s) {unknown}; allowed: {', '.join(tables)}")
    return document
