"""Read the reviewed data files of ``compat/`` the report uses: the baseline, the ranking and the catalog.

A malformed file raises :class:`~hf_neuron.report.load.ReportInputError` naming the file (and line) and what is
wrong. The catalog is read into the plain mapping :func:`~hf_neuron.report.site.build_site` takes, so callers
holding a catalog in memory need nothing from this module.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_neuron.report.load import ReportInputError

__all__ = [
    "TRAINING_SCENARIOS",
    "Baseline",
    "Ranking",
    "baseline_mode",
    "load_baseline",
    "load_catalog",
    "load_ranking",
]

#: Scenarios compared with the baseline's training support; every other scenario with its inference support.
TRAINING_SCENARIOS: frozenset[str] = frozenset({"train", "lora", "ddp"})


@dataclass(frozen=True)
class Baseline:
    """Which model types a baseline (e.g. Optimum Neuron 0.4.5) supports, for inference and for training."""

    name: str
    inference: frozenset[str]
    training: frozenset[str]

    def supports(self, model_type: str, scenario: str) -> bool:
        """Whether the baseline supports ``model_type`` in the mode ``scenario`` exercises."""
        return model_type in (self.training if baseline_mode(scenario) == "training" else self.inference)


def baseline_mode(scenario: str) -> str:
    """``training`` or ``inference``: which baseline support ``scenario`` is compared with."""
    return "training" if scenario in TRAINING_SCENARIOS else "inference"


@dataclass(frozen=True)
class Ranking:
    """Rank (1 = most used) of each model type, and where the ranking comes from."""

    ranks: Mapping[str, int]
    source: str


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportInputError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None


def load_baseline(path: Path) -> Baseline:
    """Read a baseline file such as ``compat/baselines/optimum-neuron-0.4.5.json``."""
    data = _read_json(path)
    table = data.get("text_generation") if isinstance(data, dict) else None
    if not isinstance(table, dict) or not all(isinstance(data.get(k), str) for k in ("baseline", "version")):
        raise ReportInputError(f"{path}: a baseline needs 'baseline', 'version' and a 'text_generation' object")
    modes: dict[str, set[str]] = {"inference": set(), "training": set()}
    for model_type, support in table.items():
        if not isinstance(support, dict) or not all(isinstance(support.get(m), bool) for m in modes):
            raise ReportInputError(f"{path}: 'text_generation.{model_type}' needs boolean 'inference' and 'training'")
        for mode, members in modes.items():
            if support[mode]:
                members.add(model_type)
    name = " ".join(word.capitalize() for word in data["baseline"].split("-")) + " " + data["version"]
    return Baseline(name, frozenset(modes["inference"]), frozenset(modes["training"]))


def load_ranking(path: Path) -> Ranking:
    """Read ``compat/ranking.csv`` (columns ``model_type,rank,source``)."""
    try:
        with path.open(encoding="utf-8", newline="") as stream:
            rows = list(csv.DictReader(stream))
            header = set(rows[0]) if rows else set()
    except FileNotFoundError:
        raise ReportInputError(f"{path}: no such file") from None
    if missing := {"model_type", "rank", "source"} - header:
        raise ReportInputError(f"{path}: needs columns model_type, rank, source (missing {', '.join(sorted(missing))})")
    ranks: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):
        model_type, rank = row["model_type"], row["rank"]
        if not model_type:
            raise ReportInputError(f"{path}:{line}: empty model_type")
        if not rank or not rank.isdigit() or int(rank) < 1:
            raise ReportInputError(f"{path}:{line}: rank must be a whole number >= 1, got {rank!r}")
        if model_type in ranks:
            raise ReportInputError(f"{path}:{line}: {model_type!r} is ranked twice")
        ranks[model_type] = int(rank)
    return Ranking(ranks, ", ".join(sorted({row["source"] for row in rows if row["source"]})))


def load_catalog(path: Path) -> dict[str, dict[str, Any]]:
    """Read the catalog into ``{model_type: entry}``; each entry may hold ``group``, ``family``, ``config``, ....

    The file is a JSON list of entries, or an object whose ``architectures`` or ``entries`` key holds that list;
    every entry is an object with a ``model_type`` (the first entry of a model type is the one used).
    """
    data = _read_json(path)
    entries = data.get("architectures", data.get("entries")) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ReportInputError(f"{path}: expected a list of entries, or an object with an 'architectures' list")
    catalog: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("model_type"), str):
            raise ReportInputError(f"{path}: entry {index} is not an object with a 'model_type'")
        catalog.setdefault(entry["model_type"], entry)
    return catalog
