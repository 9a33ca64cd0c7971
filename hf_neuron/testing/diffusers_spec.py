"""diffusers' device spec for ``neuron`` (``DIFFUSERS_TEST_DEVICE_SPEC``).

``diffusers.utils.testing_utils`` imports the file named by ``DIFFUSERS_TEST_DEVICE_SPEC`` by module name from a
path relative to the working directory, as transformers does: :func:`hf_neuron.testing.write_spec_file` writes a
one-line file that re-exports this module. Importing it without a neuron backend raises, saying what to do.

Without a spec diffusers does select neuron by itself, but as ``torch_device = torch.neuron.current_device()``, the
``int`` ``0``, where its tests expect a device type name (they look it up in the ``BACKEND_*`` tables and compare
it with ``"cpu"``, ``"cuda"``, ...). ``DEVICE_NAME`` makes it ``"neuron"``. The upstream change that would make the
spec unnecessary: select the string ``"neuron"`` there, and fill the ``BACKEND_*`` tables of
``diffusers.utils.testing_utils`` with ``torch.neuron``'s functions when neuron is available, as for ``xpu``.

==================================  ================================================================================
attribute                           fills diffusers' table
==================================  ================================================================================
``DEVICE_NAME``                     ``torch_device``
``MANUAL_SEED_FN``                  ``BACKEND_MANUAL_SEED``
``EMPTY_CACHE_FN``                  ``BACKEND_EMPTY_CACHE``
``DEVICE_COUNT_FN``                 ``BACKEND_DEVICE_COUNT``
``SUPPORTS_TRAINING``               ``BACKEND_SUPPORTS_TRAINING``: neuron trains (TorchNeuron supports training)
``RESET_PEAK_MEMORY_STATS_FN``      ``BACKEND_RESET_PEAK_MEMORY_STATS``
``RESET_MAX_MEMORY_ALLOCATED_FN``   ``BACKEND_RESET_MAX_MEMORY_ALLOCATED`` (a peak reset, as diffusers does for xpu)
``MAX_MEMORY_ALLOCATED_FN``         ``BACKEND_MAX_MEMORY_ALLOCATED``
==================================  ================================================================================
"""

from __future__ import annotations

from hf_neuron.testing.device import (
    device_count,
    empty_cache,
    manual_seed,
    max_memory_allocated,
    require_neuron,
    reset_peak_memory_stats,
)

__all__ = [
    "DEVICE_COUNT_FN",
    "DEVICE_NAME",
    "EMPTY_CACHE_FN",
    "MANUAL_SEED_FN",
    "MAX_MEMORY_ALLOCATED_FN",
    "RESET_MAX_MEMORY_ALLOCATED_FN",
    "RESET_PEAK_MEMORY_STATS_FN",
    "SUPPORTS_TRAINING",
]

require_neuron()

DEVICE_NAME = "neuron"
MANUAL_SEED_FN = manual_seed
EMPTY_CACHE_FN = empty_cache
DEVICE_COUNT_FN = device_count
SUPPORTS_TRAINING = True
RESET_PEAK_MEMORY_STATS_FN = reset_peak_memory_stats
RESET_MAX_MEMORY_ALLOCATED_FN = reset_peak_memory_stats
MAX_MEMORY_ALLOCATED_FN = max_memory_allocated
