"""Which reference devices this process sees, following the real backend's rules.

On Trainium one ``neuron:N`` device is one logical NeuronCore; ``NEURON_RT_VISIBLE_CORES`` (``"0-3"``,
``"0,2"``) restricts what a process sees, and under torchrun each rank sees its own core:
``device_count()`` is ``LOCAL_WORLD_SIZE`` and ``current_device()`` is ``LOCAL_RANK``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from hf_neuron.settings import SettingError

__all__ = ["Topology", "parse_core_list", "topology"]


@dataclasses.dataclass(frozen=True)
class Topology:
    """``count`` devices visible to this process, of which ``current`` is the one a thread starts on."""

    count: int
    current: int


def parse_core_list(name: str, raw: str, cores: int) -> list[int]:
    """Parse ``"0-3"`` / ``"0,2,5"`` / ``"1"`` into core indices below ``cores``."""
    indices: list[int] = []
    try:
        for part in raw.split(","):
            low, _, high = part.strip().partition("-")
            indices.extend(range(int(low), int(high or low) + 1))
    except ValueError:
        indices = []
    if not indices or len(set(indices)) != len(indices) or not all(0 <= i < cores for i in indices):
        raise SettingError(
            f"{name}={raw!r} is not a list of distinct cores between 0 and {cores - 1}: use e.g. '0-3' or '0,2'"
            f" (this reference instance has {cores} cores; set HF_NEURON_EMULATOR_DEVICES for more)"
        )
    return indices


def _int(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise SettingError(f"{name}={raw!r} is not a whole number") from None


def topology(cores: int, environ: Mapping[str, str] | None = None) -> Topology:
    """The devices this process sees on a reference instance of ``cores`` cores."""
    env = os.environ if environ is None else environ
    visible = cores
    if env.get("NEURON_RT_VISIBLE_CORES"):
        visible = len(parse_core_list("NEURON_RT_VISIBLE_CORES", env["NEURON_RT_VISIBLE_CORES"], cores))
    if "LOCAL_WORLD_SIZE" in env and "LOCAL_RANK" in env:
        world = _int("LOCAL_WORLD_SIZE", env["LOCAL_WORLD_SIZE"])
        rank = _int("LOCAL_RANK", env["LOCAL_RANK"])
        if not 1 <= world <= visible:
            raise SettingError(
                f"LOCAL_WORLD_SIZE={world} processes need as many neuron cores, but this process sees {visible}: "
                "launch fewer processes, or raise HF_NEURON_EMULATOR_DEVICES / NEURON_RT_VISIBLE_CORES"
            )
        if not 0 <= rank < world:
            raise SettingError(f"LOCAL_RANK={rank} is outside 0..{world - 1} (LOCAL_WORLD_SIZE={world})")
        return Topology(count=world, current=rank)
    return Topology(count=visible, current=0)
