"""Where a number of bytes fits in an instance family (:class:`~hf_neuron.compat.hardware.Family`, read from
``compat/hardware.toml``): :func:`placement` is the one rule of how many devices (logical NeuronCores, or GPUs) and
chips hold it. A device's memory is its chip's divided among the chip's devices (trn2: 96 GiB / 4 = 24 GiB, trn3:
144 GiB / 4 = 36 GiB at LNC=2; a GPU's own).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from hf_neuron.compat.hardware import GIB, Family

__all__ = ["GIB", "Placement", "placement"]


class Placement(NamedTuple):
    """Where a number of bytes fits in a family: the ``cores`` (devices: ``neuron:N`` logical NeuronCores, or GPUs)
    and ``chips`` whose memory holds it, sharded evenly, and how many of the family's instances that is (None where
    the facts name none)."""

    cores: int
    chips: int
    instances: int | None


def placement(size: int, family: Family) -> Placement:
    """The devices and chips of ``family`` whose memory holds ``size`` bytes, evenly sharded (at least one)."""
    cores = max(1, math.ceil(size / family.device_bytes))
    chips = math.ceil(cores / family.devices_per_chip)
    per_instance = family.chips_per_instance
    return Placement(cores, chips, None if per_instance is None else math.ceil(chips / per_instance))
