"""``compat/ranking.csv``: which model types matter most, by Hub downloads.

The file has the columns ``model_type,rank,source``; ``source`` says where each rank comes from (the Hub and the
date, or a hand-seeded list). :mod:`hf_neuron.matrix.catalog.hub_ranking` rebuilds it from the Hub.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Iterable, Mapping
from pathlib import Path

from hf_neuron.compat.files import COMPAT_DIR, missing_file
from hf_neuron.vocabulary.datafiles import DataFileError

__all__ = ["COLUMNS", "RANKING_PATH", "RankEntry", "Ranking", "best_of_each_group", "load_ranking", "ranking",
           "write_ranking"]

RANKING_PATH = COMPAT_DIR / "ranking.csv"
COLUMNS = ("model_type", "rank", "source")

@dataclasses.dataclass(frozen=True)
class RankEntry:
    """One ranked architecture (rank 1 is the most popular) and where the rank comes from."""

    model_type: str
    rank: int
    source: str


def load_ranking(path: Path | None = None) -> list[RankEntry]:
    """Read and validate the ranking, by rank; a malformed file raises :class:`DataFileError`."""
    path = RANKING_PATH if path is None else Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise missing_file(path, "write it with `hf-neuron matrix catalog --refresh-ranking`") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(header) != COLUMNS:
        raise DataFileError(path, f"the header must be {','.join(COLUMNS)}, got {','.join(header or [])!r}")
    entries: list[RankEntry] = []
    seen: set[str] = set()
    for line, row in enumerate(reader, start=2):
        if len(row) != len(COLUMNS):
            raise DataFileError(path, f"line {line}: expected {len(COLUMNS)} fields, got {len(row)}")
        model_type, rank, source = row
        if not rank.strip().isdigit() or int(rank) < 1:
            raise DataFileError(path, f"line {line}: rank must be a positive integer, got {rank!r}")
        if not model_type or model_type in seen:
            raise DataFileError(path, f"line {line}: model_type {model_type!r} is empty or listed twice")
        if not source.strip():
            raise DataFileError(path, f"line {line}: source must say where the rank comes from")
        seen.add(model_type)
        entries.append(RankEntry(model_type, int(rank), source))
    return sorted(entries, key=lambda entry: entry.rank)


def write_ranking(entries: Iterable[RankEntry], path: Path | None = None) -> Path:
    """Write the ranking as CSV, by rank."""
    path = RANKING_PATH if path is None else Path(path)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows((entry.model_type, entry.rank, entry.source) for entry in sorted(entries, key=lambda e: e.rank))
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


@dataclasses.dataclass(frozen=True)
class Ranking:
    """The ranking as a lookup: rank (1 = most used) of each model type, and where the ranks come from."""

    ranks: Mapping[str, int]
    source: str


def ranking(entries: Iterable[RankEntry]) -> Ranking:
    """The lookup of ``entries`` (from :func:`load_ranking`); ``source`` joins their distinct sources."""
    entries = list(entries)
    return Ranking({entry.model_type: entry.rank for entry in entries},
                   ", ".join(sorted({entry.source for entry in entries})))


def best_of_each_group(groups: Mapping[str, str], top: int, entries: Iterable[RankEntry]) -> frozenset[str]:
    """The model types of ``groups`` (model type -> its group) among the ``top`` best-ranked of their group in
    ``entries`` (from :func:`load_ranking`); model types the ranking does not list are not among them."""
    taken: dict[str, int] = {}
    found = set()
    for entry in sorted(entries, key=lambda entry: entry.rank):
        group = groups.get(entry.model_type)
        if group is not None and taken.get(group, 0) < top:
            taken[group] = taken.get(group, 0) + 1
            found.add(entry.model_type)
    return frozenset(found)
