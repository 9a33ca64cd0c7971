"""Helpers of the patch tests: commands with one reference device, fake libraries, re-installing the patches."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import _helpers

__all__ = ["SCRIPTS", "fake_distribution", "fake_library", "reinstalled", "run"]

#: The directory of the console scripts (accelerate, trl, hf-neuron) of this Python environment.
SCRIPTS = Path(sys.executable).parent


def run(
    args: list[str] | str, *, env: Mapping[str, str] | None = None, cwd: Path | None = None, check: bool = True,
    timeout: float = 900,
) -> subprocess.CompletedProcess[str]:
    """:func:`_helpers.run` with one reference device by default (so that `accelerate launch` and `trl` start one
    process), failing with the output when the command fails and ``check`` is set."""
    result = _helpers.run(args, {"HF_NEURON_EMULATOR_DEVICES": "1", "HF_HUB_DISABLE_TELEMETRY": "1", **(env or {})},
                          cwd=cwd, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{args} exited {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    return result


def fake_distribution(root: Path, name: str, version: str) -> Path:
    """Write a ``<name>-<version>.dist-info`` under ``root``: first on ``sys.path``, it fakes the installed version."""
    info = root / f"{name}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return root


def fake_library(root: Path, name: str, version: str, files: Mapping[str, str]) -> Path:
    """Write package ``name`` under ``root`` (``files`` maps paths inside the package to source) and its version."""
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "__init__.py").touch()
    for relative, source in files.items():
        path = root / name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return fake_distribution(root, name, version)


@contextlib.contextmanager
def reinstalled() -> Iterator[None]:
    """Revert the process's patches for the duration of the block, then install them again (fresh registry)."""
    from hf_neuron import patches

    current = patches.installation()
    assert current is not None, "the patches are not installed"
    current.revert()
    try:
        yield
    finally:
        patches.install()
