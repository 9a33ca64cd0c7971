"""The environment block of a run's records: the backend under test and the library versions.

It is computed once, by the process that starts the run, without importing torch (the backend is the one
:mod:`hf_neuron._autoload` will pick: the real TorchNeuron when installed, else the reference device when
``HF_NEURON_EMULATOR=1``), and shared with every worker, so all records of a run carry the same block.
"""

from __future__ import annotations

import importlib.metadata
import platform
from typing import Any

from hf_neuron import __version__
from hf_neuron.backends import REAL_PACKAGE, real_backend_installed
from hf_neuron.settings import read

__all__ = ["LIBRARIES", "collect"]

#: Distribution names whose versions a record carries, by record key.
LIBRARIES: dict[str, str] = {
    "torch": "torch",
    "transformers": "transformers",
    "accelerate": "accelerate",
    "peft": "peft",
    "diffusers": "diffusers",
}


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect() -> dict[str, Any]:
    """The ``env`` block: backend, backend_version, device_count, python, library versions, hf_neuron, host."""
    if real_backend_installed():
        backend, backend_version, device_count = "real", _version(REAL_PACKAGE.replace("_", "-")), None
    elif read("HF_NEURON_EMULATOR"):
        backend, backend_version, device_count = "reference", __version__, read("HF_NEURON_EMULATOR_DEVICES")
    else:
        backend, backend_version, device_count = "none", None, 0
    return {
        "backend": backend,
        "backend_version": backend_version,
        "device_count": device_count,
        "python": platform.python_version(),
        **{key: _version(distribution) for key, distribution in LIBRARIES.items()},
        "hf_neuron": __version__,
        "host": platform.node(),
    }
