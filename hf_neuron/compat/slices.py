"""Named slices of the catalog (``compat/slices.toml``): fixed lists of architectures, e.g. the one CI runs.

::

    [ci]
    description = "every build: a dozen architectures across families, all scenarios"
    architectures = ["llama", "gpt2", ...]
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

from hf_neuron.compat.files import COMPAT_DIR
from hf_neuron.errors import InputError

__all__ = ["SLICES_PATH", "Slice", "load_slices"]

SLICES_PATH = COMPAT_DIR / "slices.toml"

_KEYS = ("description", "architectures")


@dataclasses.dataclass(frozen=True)
class Slice:
    name: str
    description: str
    architectures: tuple[str, ...]


def _slice(path: Path, name: str, raw: object) -> Slice:
    where = f"{path}: [{name}]"
    if not isinstance(raw, dict):
        raise InputError(f"{where} must be a table with {', '.join(_KEYS)}")
    if set(raw) != set(_KEYS):
        raise InputError(f"{where} must have exactly the keys {', '.join(_KEYS)}; it has {', '.join(raw)}")
    archs = raw["architectures"]
    if not isinstance(raw["description"], str) or not isinstance(archs, list) or not archs:
        raise InputError(f"{where}: description is a string, architectures a non-empty list of model types")
    if not all(isinstance(a, str) and a for a in archs) or len(set(archs)) != len(archs):
        raise InputError(f"{where}: architectures must be distinct, non-empty model_type strings")
    return Slice(name, raw["description"], tuple(archs))


def load_slices(path: Path) -> dict[str, Slice]:
    """Read and validate every slice of ``path``."""
    if not path.is_file():
        raise InputError(f"slices file {path} does not exist")
    try:
        document = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from exc
    return {name: _slice(path, name, raw) for name, raw in document.items()}
