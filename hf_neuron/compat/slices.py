"""Named slices of the catalog (``compat/slices.toml``): fixed lists of architectures, e.g. the one CI runs, and
optionally of the checkpoints whose real-width slices it runs (else every catalogued checkpoint of its architectures,
when a run asks for checkpoints).

::

    [ci]
    description = "every build: a dozen architectures across families, all scenarios"
    architectures = ["llama", "gpt2", ...]
    checkpoints = ["openai-community/gpt2", ...]     # optional
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hf_neuron.compat.files import COMPAT_DIR, read_toml
from hf_neuron.vocabulary.datafiles import DataFileError

__all__ = ["SLICES_PATH", "Slice", "load_slices"]

SLICES_PATH = COMPAT_DIR / "slices.toml"

_KEYS = ("description", "architectures")
_OPTIONAL = ("checkpoints",)


@dataclasses.dataclass(frozen=True)
class Slice:
    name: str
    description: str
    architectures: tuple[str, ...]
    checkpoints: tuple[str, ...] = ()


def _slice(path: Path, name: str, raw: object) -> Slice:
    if not isinstance(raw, dict):
        raise DataFileError(path, f"must be a table with {', '.join(_KEYS)}", table=name)
    if not set(_KEYS) <= set(raw) <= {*_KEYS, *_OPTIONAL}:
        raise DataFileError(path, f"must have the keys {', '.join(_KEYS)} (and may have {', '.join(_OPTIONAL)}); "
                                  f"it has {', '.join(raw)}", table=name)
    archs = raw["architectures"]
    if not isinstance(raw["description"], str):
        raise DataFileError(path, "must be a string", table=name, key="description")
    if (not isinstance(archs, list) or not archs or not all(isinstance(a, str) and a for a in archs)
            or len(set(archs)) != len(archs)):
        raise DataFileError(path, "must be a non-empty list of distinct model types", table=name,
                              key="architectures")
    checkpoints = raw.get("checkpoints", [])
    if (not isinstance(checkpoints, list) or not all(isinstance(c, str) and c for c in checkpoints)
            or len(set(checkpoints)) != len(checkpoints)):
        raise DataFileError(path, "must be a list of distinct checkpoint ids (compat/checkpoints.toml)", table=name,
                              key="checkpoints")
    return Slice(name, raw["description"], tuple(archs), tuple(checkpoints))


def load_slices(path: Path = SLICES_PATH) -> dict[str, Slice]:
    """Read and validate every slice of ``path``."""
    document = read_toml(path)
    return {name: _slice(path, name, raw) for name, raw in document.items()}
