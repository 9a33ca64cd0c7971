"""Named slices of the catalog (``compat/slices.toml``): fixed lists of architectures, e.g. the one CI runs.

::

    [ci]
    description = "every build: a dozen architectures across families, all scenarios"
    architectures = ["llama", "gpt2", ...]
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hf_neuron.compat.files import COMPAT_DIR, read_toml
from hf_neuron.vocabulary.datafiles import DataFileError

__all__ = ["SLICES_PATH", "Slice", "load_slices"]

SLICES_PATH = COMPAT_DIR / "slices.toml"

_KEYS = ("description", "architectures")


@dataclasses.dataclass(frozen=True)
class Slice:
    name: str
    description: str
    architectures: tuple[str, ...]


def _slice(path: Path, name: str, raw: object) -> Slice:
    if not isinstance(raw, dict):
        raise DataFileError(path, f"must be a table with {', '.join(_KEYS)}", table=name)
    if set(raw) != set(_KEYS):
        raise DataFileError(path, f"must have exactly the keys {', '.join(_KEYS)}; it has {', '.join(raw)}",
                              table=name)
    archs = raw["architectures"]
    if not isinstance(raw["description"], str):
        raise DataFileError(path, "must be a string", table=name, key="description")
    if (not isinstance(archs, list) or not archs or not all(isinstance(a, str) and a for a in archs)
            or len(set(archs)) != len(archs)):
        raise DataFileError(path, "must be a non-empty list of distinct model types", table=name,
                              key="architectures")
    return Slice(name, raw["description"], tuple(archs))


def load_slices(path: Path = SLICES_PATH) -> dict[str, Slice]:
    """Read and validate every slice of ``path``."""
    document = read_toml(path)
    return {name: _slice(path, name, raw) for name, raw in document.items()}
