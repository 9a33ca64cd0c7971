"""The one reader of record files: JSON lines in ``*.jsonl`` files, or gzip-compressed ``*.jsonl.gz`` ones.

Matrix records and upstream test records are both read here, each checked by its schema's validator. Two modes:

- **strict** (a run reading its own results directory): a line that is not a valid record raises
  :class:`~hf_neuron.errors.InputError` naming the file and the line — except a last line without its newline, which is
  what a writer killed mid-write leaves, and is skipped (the case runs again on resume);
- **lenient** (building a report, summarising upstream tests): a bad line is skipped and becomes a
  :class:`LineProblem` naming its file, its line and what is wrong, so it is never lost silently; a damaged compressed
  file gives the lines before the damage and a problem naming it.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, TypeVar, cast

from hf_neuron.errors import InputError

__all__ = ["RECORD_FILES", "LineProblem", "Lines", "read_jsonl", "record_files"]

#: The names of record files in a results directory.
RECORD_FILES = ("*.jsonl", "*.jsonl.gz")

Item = TypeVar("Item")


@dataclass(frozen=True)
class LineProblem:
    """A line that was skipped, and why."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Lines(Generic[Item]):
    """What a read found: the valid records, in file and line order, where each was (``file:line``), and the
    problems met on the way."""

    records: list[Item] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)


def record_files(paths: Iterable[Path], *, recursive: bool = True, missing_ok: bool = False) -> list[Path]:
    """The record files of ``paths``: a directory's ``*.jsonl`` and ``*.jsonl.gz`` files (with ``recursive``, in its
    subdirectories too), sorted; a file as given. A path that does not exist raises :class:`InputError`, or holds
    nothing with ``missing_ok`` (a results directory no test has written to yet)."""
    files: list[Path] = []
    for path in paths:
        if missing_ok and not path.exists():
            continue
        if path.is_dir():
            find = path.rglob if recursive else path.glob
            files.extend(sorted(found for pattern in RECORD_FILES for found in find(pattern)))
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such results directory or file")
    return files


def _open(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return path.open(encoding="utf-8", errors="replace")


def _lines(path: Path, problems: list[LineProblem]) -> Iterator[tuple[int, str]]:
    """The numbered lines of ``path``; a damaged compressed file yields the lines before the damage and adds a
    problem naming it."""
    number = 0
    try:
        with _open(path) as lines:
            for number, line in enumerate(lines, start=1):
                yield number, line
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError; a cut-off file raises EOFError
        problems.append(LineProblem(path, number + 1, f"cannot read on from here: {exc}"))


def read_jsonl(
    paths: Iterable[Path], validate: Callable[[Any], list[str]], *, strict: bool, what: str = "record",
    recursive: bool = True, missing_ok: bool = False,
) -> Lines[Item]:
    """Every valid record of ``paths`` (see :func:`record_files`), each line checked by ``validate`` (which returns
    what is wrong with it; empty when nothing is). ``what`` names a record in messages."""
    found: Lines[Item] = Lines()
    for path in record_files(paths, recursive=recursive, missing_ok=missing_ok):
        problems: list[LineProblem] = []
        numbered = list(_lines(path, problems))
        for number, line in numbered:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                cut_short = number == len(numbered) and not line.endswith("\n")
                if strict and cut_short:  # its writer was killed mid-write: the case runs again on resume
                    continue
                problems.append(LineProblem(path, number, f"not valid JSON: {exc.msg} (column {exc.colno})"))
                continue
            if wrong := validate(obj):
                problems.append(LineProblem(path, number, f"not a {what}: {'; '.join(wrong)}"))
                continue
            found.records.append(cast(Item, obj))
            found.locations.append(f"{path}:{number}")
        if strict and problems:
            raise InputError(f"{problems[0]}; was the file edited? Move it out of the results directory")
        found.problems.extend(problems)
    return found
