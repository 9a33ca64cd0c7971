"""Read matrix records from result directories and check each against the record schema.

Records are JSON lines, in ``*.jsonl`` files or gzip-compressed ``*.jsonl.gz`` ones (the sample the repository
keeps). A bad line never stops a build: it is skipped, and a :class:`RecordProblem` names its file, its line and
what is wrong. The build prints the problems and the site shows how many lines were skipped, so a bad line is never lost
silently. Several records of one case are refused when they disagree (no splicing of runs), unless the caller says
to keep the latest; the site shows how many were dropped or replaced.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast

from hf_neuron.errors import InputError
from hf_neuron.matrix.records import ConflictPolicy, Record, parse_time, result_key, validate_record

__all__ = ["RECORD_FILES", "LoadedRecords", "RecordProblem", "load_records"]

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
    """The valid records (one per case), the problems met on the way, how many records repeated a case's result,
    and the conflicting records that were replaced by a later one (``on_conflict="latest"``)."""

    records: list[Record]
    problems: list[RecordProblem] = field(default_factory=list)
    duplicates: int = 0
    replaced: list[str] = field(default_factory=list)


#: The names of record files in a results directory.
RECORD_FILES = ("*.jsonl", "*.jsonl.gz")


def _jsonl_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(found for pattern in RECORD_FILES for found in path.rglob(pattern)))
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such results directory or file")
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


def _open(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return path.open(encoding="utf-8", errors="replace")


def _lines(path: Path, problems: list[RecordProblem]) -> Iterator[tuple[int, str]]:
    """The numbered lines of ``path`` (gunzipped when it ends in ``.gz``); a damaged compressed file yields the lines
    before the damage and adds a problem naming it."""
    number = 0
    try:
        with _open(path) as lines:
            for number, line in enumerate(lines, start=1):
                yield number, line
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError; a cut-off file raises EOFError
        problems.append(RecordProblem(path, number + 1, f"cannot read on from here: {exc}"))


def load_records(paths: Iterable[Path], on_conflict: ConflictPolicy = "error") -> LoadedRecords:
    """Every valid record in ``paths`` (directories are searched for ``*.jsonl`` and ``*.jsonl.gz``; files are read
    as given).

    Two records of one case (in one run) that say the same (:func:`~hf_neuron.matrix.records.result_key`) are one
    result seen twice: the later is kept and counted in ``duplicates``. Records that disagree are a conflict: an
    :class:`~hf_neuron.errors.InputError` listing them, unless ``on_conflict="latest"`` keeps each case's latest
    record (listed in ``replaced``).
    """
    kept: dict[tuple[str, str], _Located] = {}
    problems: list[RecordProblem] = []
    duplicates, conflicts = 0, {}
    for path in _jsonl_files(paths):
        for number, line in _lines(path, problems):
            if not line.strip():
                continue
            record = _parse_line(line)
            if isinstance(record, str):
                problems.append(RecordProblem(path, number, record))
                continue
            key = (record["run_id"], record["case_id"])
            if key not in kept:
                kept[key] = (record, path, number)
                continue
            newer, older = _later_first((record, path, number), kept[key])
            if result_key(newer[0]) == result_key(older[0]):
                duplicates += 1
            else:
                conflicts[key] = (f"{key[1]}: {older[0]['outcome']} ({older[1]}:{older[2]}), then "
                                  f"{newer[0]['outcome']} ({newer[1]}:{newer[2]})")
            kept[key] = newer
    if conflicts and on_conflict == "error":
        shown = "\n  ".join(list(conflicts.values())[:20])
        raise InputError(f"{len(conflicts)} case(s) have records that disagree:\n  {shown}\nbuild from one run's "
                         "records (hf-neuron matrix merge refuses such shards too), or pass --on-conflict latest to "
                         "keep each case's latest record; the page then says how many were replaced")
    return LoadedRecords([record for record, _, _ in kept.values()], problems, duplicates, list(conflicts.values()))
