"""transformers' device spec for ``neuron`` (``TRANSFORMERS_TEST_DEVICE_SPEC``).

``transformers.testing_utils`` imports the file named by ``TRANSFORMERS_TEST_DEVICE_SPEC`` when it is imported and
reads these attributes. transformers imports that file by module name from a path relative to the working
directory, so it cannot be named inside an installed package: :func:`hf_neuron.testing.write_spec_file` writes a
one-line file that re-exports this module. Importing it without a neuron backend raises, saying what to do.

==========================  ========================================================================================
attribute                   what it does, and the upstream change that would make it unnecessary
==========================  ========================================================================================
``DEVICE_NAME``             ``torch_device = "neuron"`` for every test. Unnecessary once ``testing_utils`` picks
                            ``neuron`` by itself when ``is_torch_neuron_available()`` (as it picks npu, xpu, hpu).
``MANUAL_SEED_FN``          ``backend_manual_seed("neuron", seed)``; ``EMPTY_CACHE_FN`` and ``DEVICE_COUNT_FN``
``EMPTY_CACHE_FN``          likewise. Unnecessary once ``testing_utils`` fills its ``BACKEND_*`` tables with
``DEVICE_COUNT_FN``         ``torch.neuron``'s functions when neuron is available, as it does for npu and xpu.
``SINGLE_PROCESS_DEVICE``   runs ``@run_test_using_subprocess`` tests in the test's own process: a NeuronCore is
                            opened by one process only, so a child process could not use it. Unnecessary once
                            ``"neuron"`` is in ``testing_utils.SINGLE_PROCESS_DEVICES`` (as ``"tpu"`` is).
==========================  ========================================================================================
"""

from __future__ import annotations

from hf_neuron.testing.device import device_count, empty_cache, manual_seed, require_neuron

__all__ = ["DEVICE_COUNT_FN", "DEVICE_NAME", "EMPTY_CACHE_FN", "MANUAL_SEED_FN", "SINGLE_PROCESS_DEVICE"]

require_neuron()

DEVICE_NAME = "neuron"
MANUAL_SEED_FN = manual_seed
EMPTY_CACHE_FN = empty_cache
DEVICE_COUNT_FN = device_count
SINGLE_PROCESS_DEVICE = True
