"""Read matrix records for a report: the vocabulary's reader, lenient, and its one rule of which record of a case
counts.

A bad line never stops a build: it is skipped, and a :class:`~hf_neuron.vocabulary.jsonl.LineProblem` names its file,
its line and what is wrong; the build prints the problems and the site shows how many lines were skipped, so a bad
line is never lost silently. Records of every readable schema are read in the current shape
(:func:`~hf_neuron.vocabulary.records.upgrade`). Several records of one case are refused when they disagree (no
splicing of runs), unless the caller says to keep the latest; the site shows how many were dropped or replaced.

A run may hold cases of two kinds of model (:data:`~hf_neuron.vocabulary.scenarios.ModelSource`): an architecture's
tiny model, and a catalogued checkpoint's real-width slice. :func:`model_source` is the one rule that tells them apart
and :func:`split_sources` the one place a report splits them: the per-architecture table, its headline, rates,
history and costs count the tiny cases only; the checkpoint cases make the per-checkpoint table
(:mod:`hf_neuron.report.checkpoints`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_neuron.errors import InputError
from hf_neuron.vocabulary.jsonl import LineProblem, Lines, read_jsonl
from hf_neuron.vocabulary.records import ConflictPolicy, Record, one_each, upgrade, validate_record
from hf_neuron.vocabulary.scenarios import ModelSource

__all__ = ["LoadedRecords", "load_records", "model_source", "split_sources"]


def model_source(record: Record) -> ModelSource:
    """What a record's model was built from: ``checkpoints`` when it names a checkpoint (its ``checkpoint`` facts;
    record schema 6), else ``tiny`` (an architecture's tiny model; every record before schema 6)."""
    return "checkpoints" if record["checkpoint"] is not None else "tiny"


def split_sources(records: Iterable[Record]) -> tuple[list[Record], list[Record]]:
    """``records`` split by :func:`model_source`, each in its order: the tiny models' cases, then the checkpoints'."""
    tiny: list[Record] = []
    checkpoints: list[Record] = []
    for record in records:
        (checkpoints if model_source(record) == "checkpoints" else tiny).append(record)
    return tiny, checkpoints


@dataclass(frozen=True)
class LoadedRecords:
    """The valid records (one per case), the problems met on the way, how many records repeated a case's result,
    and the conflicting records that were replaced by a later one (``on_conflict="latest"``)."""

    records: list[Record]
    problems: list[LineProblem] = field(default_factory=list)
    duplicates: int = 0
    replaced: list[str] = field(default_factory=list)

    @property
    def tiny(self) -> list[Record]:
        """The records of tiny models' cases (:func:`split_sources`)."""
        return split_sources(self.records)[0]

    @property
    def checkpoints(self) -> list[Record]:
        """The records of checkpoints' cases (:func:`split_sources`)."""
        return split_sources(self.records)[1]


def load_records(paths: Iterable[Path], on_conflict: ConflictPolicy = "error") -> LoadedRecords:
    """Every valid record in ``paths`` (directories are searched for ``*.jsonl`` and ``*.jsonl.gz``; files are read
    as given), one per case of a run: of two records of one case that say the same, the later is kept (counted in
    ``duplicates``); records that disagree are a conflict: an :class:`~hf_neuron.errors.InputError` listing them,
    unless ``on_conflict="latest"`` keeps each case's latest record (listed in ``replaced``)."""
    found: Lines[dict[str, Any]] = read_jsonl(paths, validate_record, strict=False, what="matrix record")
    records = [upgrade(record) for record in found.records]
    where = {id(record): location for record, location in zip(records, found.locations, strict=True)}
    each = one_each(records, key=lambda record: (record["run_id"], record["case_id"]))
    conflicts = [f"{found[0]['case_id']}: " + ", then ".join(f"{r['outcome']} ({where[id(r)]})" for r in found)
                 for found in each.conflicts.values()]
    if conflicts and on_conflict == "error":
        shown = "\n  ".join(conflicts[:20])
        raise InputError(f"{len(conflicts)} case(s) have records that disagree:\n  {shown}\nbuild from one run's "
                         "records (hf-neuron matrix merge refuses such shards too), or pass --on-conflict latest to "
                         "keep each case's latest record; the page then says how many were replaced")
    return LoadedRecords(list(each.kept.values()), found.problems, each.duplicates, conflicts)
