"""The Trainium instance families a checkpoint is sized for, read from ``instances.toml`` beside this module (package
data: ``hf-neuron check`` works from an installed package, without a checkout).

Each family gives a chip's device memory and its logical NeuronCores at the default LNC=2; a core's memory is the
chip's divided among them (trn2: 96 GiB / 4 = 24 GiB, trn3: 144 GiB / 4 = 36 GiB). :func:`placement` is the one rule
of how many cores and chips hold a number of bytes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

from hf_neuron.vocabulary.datafiles import DataFileError

__all__ = ["GIB", "INSTANCES_FILE", "InstanceFamily", "Placement", "families", "placement"]

INSTANCES_FILE = Path(__file__).with_name("instances.toml")
GIB = 1 << 30
_REQUIRED = {"chip": str, "memory_gib_per_chip": int, "logical_cores_per_chip": int, "source": str}
_OPTIONAL = {"largest_instance": str, "chips_per_largest_instance": int}


@dataclasses.dataclass(frozen=True)
class InstanceFamily:
    """One family (``trn2``): its chip, the chip's memory and logical cores, its largest instance and that instance's
    chips (None where the facts do not say), and where the facts come from."""

    name: str
    chip: str
    memory_gib_per_chip: int
    logical_cores_per_chip: int
    source: str
    largest_instance: str | None = None
    chips_per_largest_instance: int | None = None

    @property
    def core_bytes(self) -> int:
        """The device memory of one logical core."""
        return self.memory_gib_per_chip * GIB // self.logical_cores_per_chip


class Placement(NamedTuple):
    """Where a number of bytes fits in a family: the logical ``cores`` (``neuron:N`` devices) and ``chips`` whose
    memory holds it, sharded evenly, and how many of the family's largest instances that is (None where unknown)."""

    cores: int
    chips: int
    instances: int | None


def _check(path: Path, name: str, table: Any) -> InstanceFamily:
    if not isinstance(table, dict):
        raise DataFileError(path, "each family is a table", table=name)
    unknown = sorted(set(table) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise DataFileError(path, f"unknown keys {unknown}; a family has {sorted({*_REQUIRED, *_OPTIONAL})}",
                            table=name)
    for key, kind in {**_REQUIRED, **_OPTIONAL}.items():
        if key not in table:
            if key in _REQUIRED:
                raise DataFileError(path, "missing", table=name, key=key)
            continue
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            good = False
        else:
            good = value > 0 if isinstance(value, int) else bool(str(value).strip())
        if not good:
            what = "a positive whole number" if kind is int else "a non-empty text"
            raise DataFileError(path, f"must be {what}, not {value!r}", table=name, key=key)
    if ("largest_instance" in table) != ("chips_per_largest_instance" in table):
        raise DataFileError(path, "give largest_instance and chips_per_largest_instance together", table=name)
    return InstanceFamily(name=name, **table)


def parse(path: Path, text: str) -> tuple[InstanceFamily, ...]:
    """The families of an instances file's ``text``, checked (:class:`DataFileError` naming the problem)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DataFileError(path, f"not valid TOML: {error}") from None
    if not document:
        raise DataFileError(path, "no instance family: give at least one table such as [trn2]")
    return tuple(_check(path, name, table) for name, table in document.items())


@functools.cache
def families(path: Path = INSTANCES_FILE) -> tuple[InstanceFamily, ...]:
    """The instance families of ``path``, in file order."""
    return parse(path, path.read_text(encoding="utf-8"))


def placement(size: int, family: InstanceFamily) -> Placement:
    """The cores and chips of ``family`` whose device memory holds ``size`` bytes, evenly sharded (at least one)."""
    cores = max(1, math.ceil(size / family.core_bytes))
    chips = math.ceil(cores / family.logical_cores_per_chip)
    per_instance = family.chips_per_largest_instance
    return Placement(cores, chips, None if per_instance is None else math.ceil(chips / per_instance))
