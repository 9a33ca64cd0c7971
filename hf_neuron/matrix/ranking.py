"""The architecture ranking: which model types matter most, by Hub downloads (``compat/ranking.csv``).

The file has the columns ``model_type,rank,source``; ``source`` says where each rank comes from. :func:`refresh_ranking`
asks the Hugging Face Hub for the most-downloaded text-generation models, maps each to its ``model_type`` (from the
config the Hub indexes, else from the model's tags) and ranks the types by the downloads they gather. Without a
reachable Hub it raises :class:`HubUnreachable` and the committed file stays as it is.
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import datetime
import io
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hf_neuron.compat_files import COMPAT_DIR, CompatFileError

__all__ = ["COLUMNS", "RANKING_PATH", "HubUnreachable", "RankEntry", "load_ranking", "main_refresh",
           "refresh_ranking", "write_ranking"]

RANKING_PATH = COMPAT_DIR / "ranking.csv"
COLUMNS = ("model_type", "rank", "source")

#: ``list_models``-like callable: keyword arguments as ``huggingface_hub.list_models``, yields ``ModelInfo``-likes.
ListModels = Callable[..., Iterable[Any]]


class HubUnreachable(RuntimeError):
    """The Hub could not be asked (offline mode, no network, or an HTTP error)."""


@dataclasses.dataclass(frozen=True)
class RankEntry:
    """One ranked architecture (rank 1 is the most popular) and where the rank comes from."""

    model_type: str
    rank: int
    source: str


def load_ranking(path: Path | None = None) -> list[RankEntry]:
    """Read and validate the ranking, by rank; a malformed file raises :class:`CompatFileError`."""
    path = RANKING_PATH if path is None else Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        problem = "no such file: write it with `hf-neuron matrix catalog --refresh-ranking`"
        raise CompatFileError(path, problem) from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(header) != COLUMNS:
        raise CompatFileError(path, f"the header must be {','.join(COLUMNS)}, got {','.join(header or [])!r}")
    entries: list[RankEntry] = []
    seen: set[str] = set()
    for line, row in enumerate(reader, start=2):
        if len(row) != len(COLUMNS):
            raise CompatFileError(path, f"line {line}: expected {len(COLUMNS)} fields, got {len(row)}")
        model_type, rank, source = row
        if not rank.strip().isdigit() or int(rank) < 1:
            raise CompatFileError(path, f"line {line}: rank must be a positive integer, got {rank!r}")
        if not model_type or model_type in seen:
            raise CompatFileError(path, f"line {line}: model_type {model_type!r} is empty or listed twice")
        if not source.strip():
            raise CompatFileError(path, f"line {line}: source must say where the rank comes from")
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


def _model_type(info: Any, known: Iterable[str]) -> str | None:
    """The ``model_type`` of a Hub model: from its indexed config, else the first tag naming a known type."""
    config = getattr(info, "config", None) or {}
    if isinstance(config, dict) and isinstance(config.get("model_type"), str):
        return config["model_type"]
    known = set(known)
    return next((tag for tag in getattr(info, "tags", None) or () if tag in known), None)


def refresh_ranking(*, limit: int = 500, list_models: ListModels | None = None,
                    today: datetime.date | None = None) -> list[RankEntry]:
    """Rank the generative model types of the installed transformers by the downloads of their models among the
    ``limit`` most-downloaded text-generation models on the Hub. Raises :class:`HubUnreachable` without a Hub."""
    from hf_neuron.tiny.registry import generative_types

    if list_models is None:
        from huggingface_hub import list_models
    known = generative_types()
    try:
        infos = list(list_models(pipeline_tag="text-generation", sort="downloads", limit=limit,
                                 expand=["config", "downloads", "tags"]))
    except Exception as error:  # noqa: BLE001 - offline mode, DNS, HTTP: all mean "no ranking today"
        raise HubUnreachable(f"cannot list models on the Hugging Face Hub ({type(error).__name__}: {error})") from error
    downloads: collections.Counter[str] = collections.Counter()
    models: collections.Counter[str] = collections.Counter()
    for info in infos:
        model_type = _model_type(info, known)
        if model_type in known:
            downloads[model_type] += int(getattr(info, "downloads", 0) or 0)
            models[model_type] += 1
    date = (today or datetime.date.today()).isoformat()
    ranked = sorted(downloads, key=lambda model_type: (-downloads[model_type], model_type))
    return [
        RankEntry(model_type, rank, f"hub {date}: {models[model_type]} of the top {limit} text-generation models, "
                                    f"{downloads[model_type]} downloads")
        for rank, model_type in enumerate(ranked, start=1)
    ]


def main_refresh(path: Path | None = None, *, limit: int = 500, list_models: ListModels | None = None) -> int:
    """``hf-neuron matrix catalog --refresh-ranking``: rewrite the ranking from the Hub; 0 on success, 2 when the
    Hub cannot be reached or names no known type (the file is left unchanged then)."""
    try:
        entries = refresh_ranking(limit=limit, list_models=list_models)
    except HubUnreachable as error:
        print(f"error: {error}; {path or RANKING_PATH} was left unchanged", file=sys.stderr)
        return 2
    if not entries:
        print(f"error: the Hub listed no model of a known model_type; {path or RANKING_PATH} was left unchanged",
              file=sys.stderr)
        return 2
    written = write_ranking(entries, path)
    print(f"wrote {written}: {len(entries)} model types, top: {', '.join(e.model_type for e in entries[:5])}")
    return 0
