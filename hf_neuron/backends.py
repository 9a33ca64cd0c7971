"""Which backend owns the ``neuron`` device in this process: the real TorchNeuron, the reference device, or none."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import sys
from typing import Literal

__all__ = ["BackendInfo", "BackendKind", "REAL_PACKAGE", "backend", "real_backend_installed"]

BackendKind = Literal["real", "reference", "none"]

#: The import name of AWS's TorchNeuron package (distribution ``torch-neuronx``).
REAL_PACKAGE = "torch_neuronx"


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


def real_backend_installed() -> bool:
    """True when the real TorchNeuron package can be imported (without importing it)."""
    return importlib.util.find_spec(REAL_PACKAGE) is not None


def backend() -> BackendInfo:
    """Tell which backend owns the ``neuron`` device in this process, its version and device count.

    Imports torch if it is not imported yet (which runs the autoload).
    """
    import torch

    from hf_neuron import _autoload

    if torch._C._get_privateuse1_backend_name() != "neuron" or not hasattr(torch, "neuron"):
        return BackendInfo("none", None, 0, _autoload.status())
    if _autoload.reference_device_active():
        from hf_neuron import __version__

        return BackendInfo("reference", __version__, torch.neuron.device_count(), "HF_NEURON_EMULATOR=1")
    try:
        version = importlib.metadata.version("torch-neuronx")
    except importlib.metadata.PackageNotFoundError:
        version = getattr(sys.modules.get(REAL_PACKAGE), "__version__", None)
    return BackendInfo("real", version, torch.neuron.device_count(), f"{REAL_PACKAGE} registered `neuron`")
