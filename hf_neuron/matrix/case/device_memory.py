"""Peak device memory of a case, when the device's module can tell (``torch.<device>.max_memory_allocated``)."""

from __future__ import annotations

import contextlib
import sys
from types import ModuleType

__all__ = ["peak_bytes", "reset_peak"]


def _device_module(device: str) -> ModuleType | None:
    torch = sys.modules.get("torch")  # a case that never imported torch allocated no device memory
    if torch is None:
        return None
    module = getattr(torch, device.split(":")[0], None)
    if not hasattr(module, "max_memory_allocated") or not hasattr(module, "reset_peak_memory_stats"):
        return None
    return module


def reset_peak(device: str) -> None:
    """Start measuring the peak afresh (nothing to do where the device cannot tell)."""
    module = _device_module(device)
    if module is not None:
        with contextlib.suppress(RuntimeError, ValueError):  # an unusable device: the case itself will say why
            module.reset_peak_memory_stats(device)


def peak_bytes(device: str) -> int | None:
    """Peak bytes allocated on ``device`` since :func:`reset_peak`, or None when the device cannot tell."""
    module = _device_module(device)
    if module is None:
        return None
    try:
        return int(module.max_memory_allocated(device))
    except (RuntimeError, ValueError):
        return None
