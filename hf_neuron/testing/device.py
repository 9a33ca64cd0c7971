"""The device functions the libraries' test utilities call through a device spec, for the ``neuron`` device, and
what a test run measures to show where its tests ran.

Each resolves ``torch.neuron`` when called, not when imported: a spec module is imported while the test utilities
themselves are, and must not fail there when no neuron backend is present; :func:`require_neuron` says so clearly.
:func:`selected_device` reads the device a suite's own test utilities chose, :func:`neuron_allocations` counts what
the process allocated on neuron: ``hf-neuron upstream`` checks both, so a "neuron" run that ran on the CPU (or the
reverse) is caught, not reported.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hf_neuron.backends import NO_NEURON_DEVICE, neuron_module

__all__ = [
    "device_count",
    "empty_cache",
    "manual_seed",
    "max_memory_allocated",
    "neuron_allocations",
    "require_neuron",
    "reset_peak_memory_stats",
    "selected_device",
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


def neuron_allocations() -> int | None:
    """How many allocations this process made on the neuron devices so far (a count that peak-memory resets leave
    alone), or None when no neuron device is registered. A backend whose statistics have no allocation count gives 1
    for a device whose peak allocated bytes are above 0."""
    import torch

    module = getattr(torch, "neuron", None)
    if module is None:
        return None
    total = 0
    for index in range(int(module.device_count())):
        stats = module.memory_stats(index)
        count = stats.get("allocation", {}).get("allocated")
        total += int(count) if count is not None else int(stats.get("allocated_bytes", {}).get("peak", 0) > 0)
    return total


def selected_device(probes: Sequence[str]) -> str:
    """The device type a suite's test utilities chose, read from the first of ``probes`` that answers: each is
    ``module:attribute`` (a device, or a device name or index) or ``module:function()``. A module the tests already
    imported is read as it is; one they did not is imported. ``unknown: ...`` when none answers."""
    import torch

    problems = []
    for probe in probes:
        module_name, _, attribute = probe.partition(":")
        call = attribute.endswith("()")
        try:
            module = sys.modules.get(module_name) or importlib.import_module(module_name)
            value = getattr(module, attribute.removesuffix("()"))
            value = value() if call else value
        except Exception as exc:  # noqa: BLE001 - a probe that cannot answer says why, and the next is tried
            problems.append(f"{probe}: {type(exc).__name__}: {exc}")
            continue
        if isinstance(value, int) and not isinstance(value, bool):  # an accelerator index, as diffusers picks neuron
            return torch._C._get_privateuse1_backend_name() if hasattr(torch, "neuron") else f"index {value}"
        try:
            return torch.device(value).type
        except (RuntimeError, TypeError) as exc:
            problems.append(f"{probe}: {value!r} is not a device: {exc}")
    return "unknown: " + "; ".join(problems)


def probe_at_exit(directory: str) -> None:
    """At this process's exit, write ``<directory>/process-<pid>.json``: its pid and :func:`neuron_allocations` (the
    child processes of a test report where they ran; see ``HF_NEURON_DEVICE_PROBE``)."""

    def write() -> None:
        try:
            allocations = neuron_allocations()
        except Exception:  # noqa: BLE001 - a device torn down at exit: nothing to report
            allocations = None
        try:
            Path(directory).mkdir(parents=True, exist_ok=True)
            (Path(directory) / f"process-{os.getpid()}.json").write_text(
                json.dumps({"pid": os.getpid(), "neuron_allocations": allocations}) + "\n", encoding="utf-8")
        except OSError:
            pass

    atexit.register(write)
