"""The device plug-ins the Hugging Face libraries' own test suites look for, for the ``neuron`` device.

Each library's suite picks its device its own way, and this package gives each what it needs for ``neuron``:

===============  =================================================================  ==================================
library          how its suite picks the device                                     what this package gives it
===============  =================================================================  ==================================
transformers     ``TRANSFORMERS_TEST_DEVICE``, ``_DEVICE_SPEC``, ``_BACKEND``       a device spec, a test backend
diffusers        ``DIFFUSERS_TEST_DEVICE``, ``_DEVICE_SPEC``, ``_BACKEND``          a device spec
TRL              transformers' ``testing_utils.torch_device``                       transformers' spec and backend
PEFT             ``peft.utils.infer_device()``                                      nothing: the shim's patch
                                                                                    ``peft.infer-device-neuron``
accelerate       ``accelerate.test_utils.testing.get_backend()``                    nothing: the shim's patches make
                                                                                    ``is_neuron_available()`` true
===============  =================================================================  ==================================

=====================================  ==========================================================================
module                                 what
=====================================  ==========================================================================
:mod:`~hf_neuron.testing.device`       the device functions the specs name (seed, empty cache, counts, memory),
                                       and what a run measures to prove where it ran
:mod:`~.transformers_spec`             transformers' device spec
:mod:`~.transformers_backend`          transformers' test backend: what its test modules need beyond the spec
:mod:`~.diffusers_spec`                diffusers' device spec
:mod:`~.tolerance`                     tolerance rows for ``neuron`` in a test's lookup by device type
=====================================  ==========================================================================

transformers and diffusers import the spec file by module name, from a path relative to the working directory, so the
file cannot live inside an installed package: :func:`write_spec_file` writes a one-line file re-exporting the spec
module. The upstream change that would make that file unnecessary: import the spec with
``importlib.util.spec_from_file_location`` (any path). :func:`suite_environment` gives the variables that run a
library's suite on neuron, :func:`cpu_environment` those that run it on the CPU beside it: PEFT's, accelerate's and
TRL's trainers pick an accelerator by themselves wherever one is visible, so the CPU run hides the neuron device (the
reference device is not registered; the real backend is not autoloaded). Each spec and adaptation documents the
upstream change that would make it unnecessary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from hf_neuron.backends import hidden_device_environment

__all__ = [
    "LIBRARIES",
    "SPEC_FILE_NAMES",
    "SPEC_MODULES",
    "Library",
    "cpu_environment",
    "spec_library",
    "suite_environment",
    "write_spec_file",
]

Library = Literal["transformers", "diffusers", "peft", "accelerate", "trl"]
#: The libraries whose suites the plug-ins serve.
LIBRARIES: tuple[Library, ...] = ("transformers", "diffusers", "peft", "accelerate", "trl")

#: The libraries that read a device spec file, and their spec module.
SPEC_MODULES: dict[Library, str] = {
    "transformers": "hf_neuron.testing.transformers_spec",
    "diffusers": "hf_neuron.testing.diffusers_spec",
}
#: Whose test utilities a library's suite uses to pick its device, where it is not its own: TRL's tests take
#: ``torch_device`` from ``transformers.testing_utils``.
_SPEC_OF: dict[Library, Library] = {"transformers": "transformers", "diffusers": "diffusers", "trl": "transformers"}
#: The test backend module of each library that needs one.
_BACKEND_MODULES: dict[Library, str] = {"transformers": "hf_neuron.testing.transformers_backend"}
#: The file :func:`write_spec_file` writes (a module name no library or test tree uses).
SPEC_FILE_NAMES: dict[Library, str] = {
    "transformers": "hf_neuron_transformers_device_spec.py",
    "diffusers": "hf_neuron_diffusers_device_spec.py",
}
_VARIABLE_PREFIX: dict[Library, str] = {"transformers": "TRANSFORMERS", "diffusers": "DIFFUSERS"}


def spec_library(library: Library) -> Library | None:
    """The library whose device spec ``library``'s suite reads (itself, transformers for TRL), or None."""
    return _SPEC_OF.get(library)


def write_spec_file(library: Library, directory: Path) -> Path:
    """Write ``library``'s spec file into ``directory`` (the working directory of the test run); return its path."""
    path = directory / SPEC_FILE_NAMES[library]
    path.write_text(f'"""The neuron device spec of {library}\'s test suite, written by hf-neuron."""\n'
                    f"from {SPEC_MODULES[library]} import *  # noqa: F403\n")
    return path


def suite_environment(library: Library) -> dict[str, str]:
    """The environment variables that run ``library``'s test suite on neuron, from a working directory holding the
    file :func:`write_spec_file` wrote for :func:`spec_library` (PEFT's and accelerate's need none)."""
    spec = spec_library(library)
    if spec is None:
        return {}
    prefix = _VARIABLE_PREFIX[spec]
    env = {f"{prefix}_TEST_DEVICE": "neuron", f"{prefix}_TEST_DEVICE_SPEC": SPEC_FILE_NAMES[spec]}
    if spec in _BACKEND_MODULES:
        env[f"{prefix}_TEST_BACKEND"] = _BACKEND_MODULES[spec]
    return env


def cpu_environment(library: Library, backend_kind: str) -> dict[str, str]:
    """The environment variables that run ``library``'s test suite on the CPU beside a neuron run: no neuron device
    is visible, and a suite that reads a device variable is told ``cpu``."""
    env = hidden_device_environment(backend_kind)
    if (spec := spec_library(library)) is not None:
        env[f"{_VARIABLE_PREFIX[spec]}_TEST_DEVICE"] = "cpu"
    return env
