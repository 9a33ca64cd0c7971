"""Which backend owns the ``neuron`` device in this process: the real TorchNeuron, the reference device, or none."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import sys
from typing import Any

from hf_neuron.vocabulary.backends import BackendKind

__all__ = [
    "NEURON_DEVICE_HOWTO",
    "NO_NEURON_DEVICE",
    "REAL_PACKAGE",
    "BackendInfo",
    "BackendKind",
    "autoload_status",
    "backend",
    "hidden_device_environment",
    "neuron_module",
    "real_backend_installed",
    "record_autoload",
    "reference_device_active",
]

#: The import name of AWS's TorchNeuron package (distribution ``torch-neuronx``).
REAL_PACKAGE = "torch_neuronx"

#: How to get a ``neuron`` device, and what a user without one is told wherever hf-neuron needs one.
NEURON_DEVICE_HOWTO = "install torch-neuronx on Trainium, or set HF_NEURON_EMULATOR=1 for the reference device"
NO_NEURON_DEVICE = f"no neuron device: {NEURON_DEVICE_HOWTO}"

_status = "HF_NEURON_EMULATOR is not set"
_reference_active = False


def record_autoload(status: str, *, reference_active: bool) -> None:
    """What the autoload decided in this process (called by :mod:`hf_neuron._autoload` only)."""
    global _status, _reference_active
    _status, _reference_active = status, reference_active


def reference_device_active() -> bool:
    """True when this process registered the reference device as ``neuron``."""
    return _reference_active


def autoload_status() -> str:
    """Why the reference device is, or is not, registered in this process."""
    return _status


@dataclasses.dataclass(frozen=True)
class BackendInfo:
    """The backend that owns ``neuron``: ``kind`` is ``real``, ``reference`` or ``none``."""

    kind: BackendKind
    version: str | None
    device_count: int
    reason: str

    def __str__(self) -> str:
        if self.kind == "none":
            return f"no neuron backend ({self.reason})"
        name = "TorchNeuron (torch-neuronx)" if self.kind == "real" else "hf-neuron reference device"
        return f"{name} {self.version}, {self.device_count} device(s)"


def hidden_device_environment(backend_kind: str) -> dict[str, str]:
    """The variables under which a process sees no neuron device: the reference device is not registered, and the
    real backend (``torch_neuronx``, an autoloaded ``torch.backends`` entry point) is not loaded."""
    if backend_kind == "real":
        return {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    return {"HF_NEURON_EMULATOR": "0"}


def neuron_module() -> Any:
    """``torch.neuron``: the device module of whichever backend registered ``neuron`` (torch's type stubs do not
    know it, so it is typed loosely here, once). Imports torch if it is not imported yet."""
    import torch

    return torch.neuron  # type: ignore[attr-defined]


def real_backend_installed() -> bool:
    """True when the real TorchNeuron package can be imported (without importing it)."""
    return importlib.util.find_spec(REAL_PACKAGE) is not None


def backend() -> BackendInfo:
    """Tell which backend owns the ``neuron`` device in this process, its version and device count.

    Imports torch if it is not imported yet (which runs the autoload).
    """
    import torch

    if torch._C._get_privateuse1_backend_name() != "neuron" or not hasattr(torch, "neuron"):
        return BackendInfo("none", None, 0, _status)
    if _reference_active:
        from hf_neuron._version import __version__

        return BackendInfo("reference", __version__, neuron_module().device_count(), "HF_NEURON_EMULATOR=1")
    version: str | None
    try:
        version = importlib.metadata.version("torch-neuronx")
    except importlib.metadata.PackageNotFoundError:
        version = getattr(sys.modules.get(REAL_PACKAGE), "__version__", None)
    return BackendInfo("real", version, neuron_module().device_count(), f"{REAL_PACKAGE} registered `neuron`")
