"""The reference device's compiled runtime (the C++ extension), loaded once per process.

One home for the handle: :mod:`hf_neuron.device.neuron` (``torch.neuron``) and the c10d backend
(:mod:`hf_neuron.device.distributed`) both reach the runtime through :func:`extension`, never through each other.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["cpu_alias", "drain_autograd_threads", "extension", "load"]

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


def drain_autograd_threads() -> None:
    """Let autograd's device threads drop what they hold of the last backward before the interpreter finalizes
    (an exit handler, registered when the device is activated): a device thread that drops a finished backward's
    task after finalization began aborts the process, however well its work went (the runtime's
    ``drain_autograd_threads`` says how). Nothing to do when the device was never used, or in a child forked after
    the device threads started (autograd refuses to run there)."""
    if _extension is None or not _extension.initialized() or _extension.in_bad_fork():
        return
    with contextlib.suppress(RuntimeError):  # an exit handler must not raise: the process ends either way
        _extension.drain_autograd_threads()
