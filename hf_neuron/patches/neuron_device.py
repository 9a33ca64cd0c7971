"""What the patches ask about the ``neuron`` device, answered without importing anything.

Every answer looks at the ``torch`` already in ``sys.modules``: the patches run inside imports of Hugging Face
libraries, which have imported torch by then. A negative answer is never cached, so a device registered after a
library was imported is still seen.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "DEVICE",
    "detection",
    "forced_device_type",
    "forget",
    "neuron_available",
    "neuron_index",
    "neuron_is_accelerator",
    "neuron_registered",
]

#: The device type every patch is about.
DEVICE = "neuron"

_available = False


def neuron_registered() -> bool:
    """True when some backend (the real TorchNeuron or the reference device) registered ``neuron`` in torch."""
    torch = sys.modules.get("torch")
    try:
        name = torch._C._get_privateuse1_backend_name()  # type: ignore[union-attr]
    except AttributeError:  # torch not imported, or still importing
        return False
    return name == DEVICE and hasattr(torch, DEVICE)


def forced_device_type() -> str | None:
    """The device type accelerate's ``ACCELERATE_TORCH_DEVICE`` forces on this process (set by ``--device``)."""
    forced = os.environ.get("ACCELERATE_TORCH_DEVICE", "").strip().lower()
    return forced.partition(":")[0] or None


def neuron_available() -> bool:
    """True when a ``neuron`` device is registered and available, and the process is not forced onto another type.

    Only a positive answer is cached (a device never disappears from a process); :func:`forget` drops it.
    """
    global _available
    if forced_device_type() not in (None, DEVICE):
        return False
    if not _available:
        _available = neuron_registered() and bool(sys.modules["torch"].neuron.is_available())
    return _available


def forget() -> None:
    """Drop the cached positive answer of :func:`neuron_available` (the ``cache_clear`` of the patched probes)."""
    global _available
    _available = False


def neuron_is_accelerator() -> bool:
    """True when ``neuron`` is available and is torch's current accelerator (what an integer device index means)."""
    if not neuron_available():
        return False
    current = sys.modules["torch"].accelerator.current_accelerator()
    return current is not None and current.type == DEVICE


def neuron_index(device: Any) -> int | None:
    """The index of ``device`` when it names a neuron device (``"neuron"``, ``"neuron:1"``, a ``torch.device``).

    A device without an index means the current one. Anything else (other devices, integers, None) gives None.
    """
    torch = sys.modules.get("torch")
    if isinstance(device, str):
        kind, _, index = device.strip().partition(":")
        if kind != DEVICE:
            return None
        if index:
            return int(index)
    elif torch is not None and isinstance(device, torch.device) and device.type == DEVICE:
        if device.index is not None:
            return device.index
    else:
        return None
    return int(torch.neuron.current_device())  # type: ignore[union-attr]


def detection(original: Callable[..., bool]) -> Callable[..., bool]:
    """The replacement of a library's "is neuron available" probe: asks torch, not the package list.

    Keeps the original's name, docstring and attributes (transformers' dynamo constant marker) and its
    ``lru_cache`` API: ``cache_clear()`` drops the cached positive answer.
    """

    @functools.wraps(original)
    def is_neuron_available(check_device: bool = False) -> bool:
        return neuron_available()

    is_neuron_available.cache_clear = forget  # type: ignore[attr-defined]
    return is_neuron_available
