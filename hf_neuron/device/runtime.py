"""The reference device's compiled runtime (the C++ extension), loaded once per process.

One home for the handle: :mod:`hf_neuron.device.neuron` (``torch.neuron``) and the c10d backend
(:mod:`hf_neuron.device.distributed`) both reach the runtime through :func:`extension`, never through each other.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["cpu_alias", "extension", "load"]

_extension: Any = None


def load() -> ModuleType:
    """Build (first use) or import the runtime, and keep it as this process's handle."""
    global _extension
    if _extension is None:
        from hf_neuron.device import build

        _extension = build.load()
    return _extension


def extension() -> Any:
    """The loaded runtime; RuntimeError when the reference device was not activated in this process."""
    if _extension is None:
        raise RuntimeError("the reference neuron device is not active in this process (HF_NEURON_EMULATOR=1?)")
    return _extension


def cpu_alias(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over the same host memory as the neuron ``tensor`` (no copy)."""
    result: torch.Tensor = extension().cpu_alias(tensor)
    return result
