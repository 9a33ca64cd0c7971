"""``compat/baselines/``: what another product supports, to compare the matrix with (Optimum Neuron 0.4.5).

A malformed file raises :class:`~hf_neuron.compat.files.CompatFileError` naming the file (and line) and what is
wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hf_neuron.compat.files import COMPAT_DIR, CompatFileError, missing_file

__all__ = ["BASELINE_PATH", "Baseline", "Mode", "load_baseline"]

Mode = Literal["inference", "training"]

#: The baseline the report compares with by default.
BASELINE_PATH = COMPAT_DIR / "baselines" / "optimum-neuron-0.4.5.json"


@dataclass(frozen=True)
class Baseline:
    """Which model types a baseline (e.g. Optimum Neuron 0.4.5) supports, for inference and for training."""

    name: str
    inference: frozenset[str]
    training: frozenset[str]

    def supports(self, model_type: str, mode: Mode) -> bool:
        """Whether the baseline supports ``model_type`` for ``mode`` (inference or training)."""
        return model_type in (self.training if mode == "training" else self.inference)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise missing_file(path) from None
    except json.JSONDecodeError as exc:
        raise CompatFileError(path, f"line {exc.lineno}: not valid JSON: {exc.msg}") from None


def load_baseline(path: Path = BASELINE_PATH) -> Baseline:
    """Read a baseline file such as ``compat/baselines/optimum-neuron-0.4.5.json``."""
    data = _read_json(path)
    table = data.get("text_generation") if isinstance(data, dict) else None
    if not isinstance(table, dict) or not all(isinstance(data.get(k), str) for k in ("baseline", "version")):
        raise CompatFileError(path, "a baseline needs 'baseline', 'version' and a 'text_generation' object")
    modes: dict[str, set[str]] = {"inference": set(), "training": set()}
    for model_type, support in table.items():
        if not isinstance(support, dict) or not all(isinstance(support.get(m), bool) for m in modes):
            raise CompatFileError(path, f"'text_generation.{model_type}' needs boolean 'inference' and 'training'")
        for mode, members in modes.items():
            if support[mode]:
                members.add(model_type)
    name = " ".join(word.capitalize() for word in data["baseline"].split("-")) + " " + data["version"]
    return Baseline(name, frozenset(modes["inference"]), frozenset(modes["training"]))


