"""Build the reference device's C++ extension on first use and cache it.

The cache key is the torch version, the Python version and a hash of the sources, so upgrading torch or
hf-neuron rebuilds instead of loading an incompatible binary. Builds are serialised across processes with an
``flock`` (released by the kernel when a process dies), which also makes a lock file left behind by a killed
``torch.utils.cpp_extension`` build safe to remove instead of hanging the next import.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType

from hf_neuron import settings

__all__ = ["CFLAGS", "EXTENSION_NAME", "KEPT_BUILDS", "SOURCES", "build_dir", "cache_root", "load"]

EXTENSION_NAME = "hf_neuron_reference_device"
CSRC = Path(__file__).parent / "csrc"
SOURCES = ("runtime.cpp", "kernels.cpp", "attention.cpp", "autocast.cpp", "bindings.cpp")
_HEADERS = ("neuron.h",)
#: The compiler's flags beyond torch's own, part of the cache key with the sources.
CFLAGS = ("-O2", "-Wno-unused-parameter", "-fvisibility=hidden", "-fvisibility-inlines-hidden",
          "-fno-semantic-interposition", "-fno-plt")
#: Builds of this torch and Python kept in the cache, the current one included (the most recently used).
KEPT_BUILDS = 3


def cache_root() -> Path:
    """Where builds are cached: ``HF_NEURON_CACHE`` or ``~/.cache/hf-neuron``."""
    configured = settings.read("HF_NEURON_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "hf-neuron"


def _source_hash() -> str:
    digest = hashlib.sha256()
    digest.update(" ".join(CFLAGS).encode())
    for name in SOURCES + _HEADERS:
        digest.update(name.encode())
        digest.update((CSRC / name).read_bytes())
    return digest.hexdigest()[:12]


def build_dir() -> Path:
    """The build directory for this torch, this Python and these sources."""
    import torch

    python = f"py{sys.version_info.major}{sys.version_info.minor}"
    return cache_root() / f"torch-{torch.__version__}-{python}" / f"{EXTENSION_NAME}-{_source_hash()}"


def _import_built(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        EXTENSION_NAME, path, loader=importlib.machinery.ExtensionFileLoader(EXTENSION_NAME, str(path))
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(verbose: bool = False) -> ModuleType:
    """Import the extension, building it first if this torch/Python/source combination has no build yet."""
    directory = build_dir()
    built = directory / f"{EXTENSION_NAME}.so"
    if built.exists():
        os.utime(directory)  # used now: the most recent builds are the ones kept
        return _import_built(built)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "hf-neuron.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built.exists():
            _build(directory, verbose)
    return _import_built(built)


def _build(directory: Path, verbose: bool) -> None:
    from torch.utils import cpp_extension

    # We hold the flock: any lock file of cpp_extension's own is from a build that was killed.
    (directory / "lock").unlink(missing_ok=True)
    print(
        f"hf-neuron: building the reference neuron device in {directory} (first use, about a minute)...",
        file=sys.stderr,
    )
    started = time.monotonic()
    os.environ.setdefault("MAX_JOBS", str(max(1, os.cpu_count() or 1)))
    cpp_extension.load(
        name=EXTENSION_NAME,
        sources=[str(CSRC / name) for name in SOURCES],
        extra_cflags=list(CFLAGS),
        build_directory=str(directory),
        verbose=verbose,
        is_python_module=True,
    )
    print(f"hf-neuron: reference device built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    _remove_stale_builds(directory)


def _remove_stale_builds(current: Path) -> None:
    """Delete builds of other sources for this torch and Python beyond the :data:`KEPT_BUILDS` most recently used
    (two checkouts of different sources, a bisection, do not rebuild each other away), except one being built right
    now (its lock is held). A loaded library survives the removal of its file."""
    others = sorted((other for other in current.parent.glob(f"{EXTENSION_NAME}-*")
                     if other != current and other.is_dir()), key=lambda other: other.stat().st_mtime, reverse=True)
    for other in others[KEPT_BUILDS - 1:]:
        with open(other / "hf-neuron.lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # another process is building these sources
            shutil.rmtree(other, ignore_errors=True)
