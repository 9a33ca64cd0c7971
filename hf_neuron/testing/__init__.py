"""The device plug-ins the Hugging Face libraries' own test suites look for, for the ``neuron`` device.

transformers and diffusers run their test suites on any device named by three environment variables: a backend
module imported first (``*_TEST_BACKEND``), the device (``*_TEST_DEVICE``) and a device spec file
(``*_TEST_DEVICE_SPEC``). This package provides them for ``neuron``:

=====================================  ==========================================================================
module                                 what
=====================================  ==========================================================================
:mod:`~hf_neuron.testing.device`       the device functions the specs name (seed, empty cache, counts, memory)
:mod:`~.transformers_spec`             transformers' device spec
:mod:`~.transformers_backend`          transformers' test backend: what its test modules need beyond the spec
:mod:`~.diffusers_spec`                diffusers' device spec
:mod:`~.tolerance`                     tolerance rows for ``neuron`` in a test's lookup by device type
=====================================  ==========================================================================

Both libraries import the spec file by module name, from a path relative to the working directory, so the file
cannot live inside an installed package: :func:`write_spec_file` writes a one-line file re-exporting the spec
module, and :func:`suite_environment` gives the variables that run a library's suite on neuron. The upstream change
that would make that file unnecessary: import the spec with ``importlib.util.spec_from_file_location`` (any path).
Each spec and adaptation documents the upstream change that would make it unnecessary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

__all__ = ["SPEC_FILE_NAMES", "SPEC_MODULES", "Library", "suite_environment", "write_spec_file"]

Library = Literal["transformers", "diffusers"]

#: The spec module of each library.
SPEC_MODULES: dict[Library, str] = {
    "transformers": "hf_neuron.testing.transformers_spec",
    "diffusers": "hf_neuron.testing.diffusers_spec",
}
#: The test backend module of each library that needs one.
_BACKEND_MODULES: dict[Library, str] = {"transformers": "hf_neuron.testing.transformers_backend"}
#: The file :func:`write_spec_file` writes (a module name no library or test tree uses).
SPEC_FILE_NAMES: dict[Library, str] = {
    "transformers": "hf_neuron_transformers_device_spec.py",
    "diffusers": "hf_neuron_diffusers_device_spec.py",
}
_VARIABLE_PREFIX: dict[Library, str] = {"transformers": "TRANSFORMERS", "diffusers": "DIFFUSERS"}


def write_spec_file(library: Library, directory: Path) -> Path:
    """Write ``library``'s spec file into ``directory`` (the working directory of the test run); return its path."""
    path = directory / SPEC_FILE_NAMES[library]
    path.write_text(f'"""The neuron device spec of {library}\'s test suite, written by hf-neuron."""\n'
                    f"from {SPEC_MODULES[library]} import *  # noqa: F403\n")
    return path


def suite_environment(library: Library) -> dict[str, str]:
    """The environment variables that run ``library``'s test suite on neuron, from a working directory holding the
    file :func:`write_spec_file` wrote."""
    prefix = _VARIABLE_PREFIX[library]
    env = {f"{prefix}_TEST_DEVICE": "neuron", f"{prefix}_TEST_DEVICE_SPEC": SPEC_FILE_NAMES[library]}
    if library in _BACKEND_MODULES:
        env[f"{prefix}_TEST_BACKEND"] = _BACKEND_MODULES[library]
    return env
