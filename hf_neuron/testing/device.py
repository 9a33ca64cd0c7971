"""The device functions the libraries' test utilities call through a device spec, for the ``neuron`` device.

Each resolves ``torch.neuron`` when called, not when imported: a spec module is imported while the test utilities
themselves are, and must not fail there when no neuron backend is present; :func:`require_neuron` says so clearly.
"""

from __future__ import annotations

from hf_neuron.backends import NO_NEURON_DEVICE, neuron_module

__all__ = [
    "device_count",
    "empty_cache",
    "manual_seed",
    "max_memory_allocated",
    "require_neuron",
    "reset_peak_memory_stats",
]


def require_neuron() -> None:
    """Raise ``RuntimeError`` naming what to do when no backend has registered ``neuron`` in this process."""
    import torch

    if not hasattr(torch, "neuron"):
        raise RuntimeError(f"the test suite was asked to run on neuron, but there is {NO_NEURON_DEVICE}")


def manual_seed(seed: int) -> None:
    """Seed every neuron device's generator (what ``torch.cuda.manual_seed`` does for CUDA)."""
    neuron_module().manual_seed(seed)


def empty_cache() -> None:
    """Release the device allocator's cached blocks."""
    neuron_module().empty_cache()


def device_count() -> int:
    """The number of visible neuron devices."""
    return int(neuron_module().device_count())


def reset_peak_memory_stats() -> None:
    """Start peak-memory accounting afresh on the current device."""
    neuron_module().reset_peak_memory_stats()


def max_memory_allocated() -> int:
    """The peak bytes allocated on the current device since the last reset."""
    return int(neuron_module().max_memory_allocated())
