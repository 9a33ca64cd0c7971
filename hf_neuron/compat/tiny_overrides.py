"""The reviewed per-architecture exceptions of the tiny shrinker: ``compat/tiny_overrides.toml``.

Each table is named for a ``model_type`` and holds a ``reason`` (required: why the generic shrinker is not enough,
or why the type cannot run), an optional ``config`` table merged into the tiny config's keyword arguments, an
optional ``target``: the model type of the target model a draft model (a speculative-decoding assistant) reads its
inputs from (:mod:`hf_neuron.tiny.transformers.drafter`), an
optional ``runs = false`` for types that cannot build or run as a standalone tiny model on a CPU, and with it an
optional ``gap`` when the cause is the harness's, not the model's (e.g. ``gap = "inputs"``: the model needs an input
the harness cannot build; the matrix then records such cases as untested)::

    [lfm2_moe]
    reason = "Lfm2MoeConfig leaves layer_types unset while the model indexes it"
    config = { layer_types = ["conv", "full_attention"] }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_neuron.compat.files import COMPAT_DIR
from hf_neuron.compat.reviewed_tables import check_table, load_tables
from hf_neuron.vocabulary.datafiles import DataFileError
from hf_neuron.vocabulary.gaps import Gap

__all__ = ["OVERRIDES_PATH", "Override", "deep_merge", "load_overrides"]

OVERRIDES_PATH = COMPAT_DIR / "tiny_overrides.toml"

_KEYS = {"config", "target"}


@dataclasses.dataclass(frozen=True)
class Override:
    """One reviewed exception: why, what to merge into the tiny config, and whether the type runs at all."""

    model_type: str
    reason: str
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    runs: bool = True
    gap: Gap | None = None
    target: str | None = None


def _parse(path: Path, model_type: str, table: Any) -> Override:
    reviewed = check_table(path, model_type, table, _KEYS)
    config = table.get("config", {})
    if not isinstance(config, dict):
        raise DataFileError(path, f"[{model_type}] 'config' must be a table")
    target = table.get("target")
    if target is not None and (not isinstance(target, str) or not target):
        raise DataFileError(path, "must be the model type of the target model", table=model_type, key="target")
    return Override(model_type=model_type, reason=reviewed.reason, config=config, runs=reviewed.runs, gap=reviewed.gap,
                    target=target)


def load_overrides(path: Path | None = None) -> dict[str, Override]:
    """The reviewed overrides by ``model_type`` (empty when the file does not exist)."""
    return load_tables(OVERRIDES_PATH if path is None else Path(path), _parse)


def deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``update`` merged in; nested tables merge key by key, everything else is replaced."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
