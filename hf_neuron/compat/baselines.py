"""``compat/baselines/``: what another product supports, per catalog group, to compare the matrix with like for like.

A baseline file (e.g. ``optimum-neuron-0.4.5.json``) says what "supported" means on its side (``supported_means``)
and, for each catalog group, which architectures it supports for inference and for training, each row naming its
source. A malformed file raises :class:`~hf_neuron.vocabulary.datafiles.DataFileError` naming the file and the problem.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hf_neuron.compat.files import COMPAT_DIR, missing_file
from hf_neuron.vocabulary.datafiles import DataFileError
from hf_neuron.vocabulary.groups import group_name

__all__ = ["BASELINE_PATH", "Baseline", "Mode", "Support", "load_baseline"]

#: The baseline the report compares with by default.
BASELINE_PATH = COMPAT_DIR / "baselines" / "optimum-neuron-0.4.5.json"

Mode = Literal["inference", "training"]
_MODES: tuple[Mode, ...] = ("inference", "training")


@dataclass(frozen=True)
class Support:
    """What a baseline supports of one architecture, and where that is written."""

    inference: bool
    training: bool
    source: str


@dataclass(frozen=True)
class Baseline:
    """Which architectures of each catalog group a baseline (e.g. Optimum Neuron 0.4.5) supports, and what
    "supported" means there."""

    name: str
    supported_means: str
    groups: Mapping[str, Mapping[str, Support]]

    def supports(self, model_type: str, mode: Mode, group: str | None = None) -> bool:
        """Whether the baseline supports ``model_type`` (of ``group``, or of any group) for ``mode``."""
        tables = [self.groups.get(group, {})] if group is not None else list(self.groups.values())
        return any(getattr(table[model_type], mode) for table in tables if model_type in table)

    def count(self, group: str, mode: Mode) -> int:
        """How many architectures of ``group`` the baseline supports for ``mode``."""
        return sum(1 for support in self.groups.get(group, {}).values() if getattr(support, mode))

    @property
    def inference(self) -> frozenset[str]:
        """Every architecture supported for inference, in any group."""
        return frozenset(m for table in self.groups.values() for m, s in table.items() if s.inference)

    @property
    def training(self) -> frozenset[str]:
        """Every architecture supported for training, in any group."""
        return frozenset(m for table in self.groups.values() for m, s in table.items() if s.training)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise missing_file(path) from None
    except json.JSONDecodeError as exc:
        raise DataFileError(path, f"line {exc.lineno}: not valid JSON: {exc.msg}") from None


def _support(path: Path, where: str, row: Any) -> Support:
    if not isinstance(row, dict) or not all(isinstance(row.get(mode), bool) for mode in _MODES):
        raise DataFileError(path, f"'{where}' needs boolean 'inference' and 'training'")
    if not isinstance(row.get("source"), str) or not row["source"].strip():
        raise DataFileError(path, f"'{where}' needs a 'source' saying where the support is written")
    return Support(row["inference"], row["training"], row["source"])


def load_baseline(path: Path = BASELINE_PATH) -> Baseline:
    """Read a baseline file such as ``compat/baselines/optimum-neuron-0.4.5.json``."""
    data = _read_json(path)
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("baseline", "version")):
        raise DataFileError(path, "a baseline needs 'baseline' and 'version' strings")
    if not isinstance(data.get("supported_means"), str) or not data["supported_means"].strip():
        raise DataFileError(path, "a baseline needs 'supported_means': what \"supported\" means on its side")
    support = data.get("support")
    if not isinstance(support, dict) or not all(isinstance(table, dict) for table in support.values()):
        raise DataFileError(path, "a baseline needs a 'support' object of catalog group -> architecture -> support")
    groups = {group_name(group) or group: {model_type: _support(path, f"support.{group}.{model_type}", row)
                                           for model_type, row in table.items()}
              for group, table in support.items()}  # a group's old name (multimodal) is read as its name now
    name = " ".join(word.capitalize() for word in data["baseline"].split("-")) + " " + data["version"]
    return Baseline(name, data["supported_means"].strip(), groups)
