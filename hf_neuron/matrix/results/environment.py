"""The environment block of a run's records: the backend under test, the library versions and the processor.

It is computed once, by the process that starts the run, without importing torch (the backend is the one
:mod:`hf_neuron._autoload` will pick: the real TorchNeuron when installed, else the reference device when
``HF_NEURON_EMULATOR=1``), and shared with every worker, so all records of a run carry the same block.
A run on the ``neuron`` device needs one of the two: :func:`require_backend` refuses to start one without, so no
record ever says backend ``none`` for a neuron run (``--device cpu`` makes a CPU-only baseline run).
"""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, cast

from hf_neuron import backends, cpus
from hf_neuron._version import __version__
from hf_neuron.compat.files import REPO_ROOT
from hf_neuron.errors import InputError
from hf_neuron.settings import read
from hf_neuron.vocabulary.backends import BackendKind
from hf_neuron.vocabulary.records import CPU_ISA, Env, FallbackList, NamedScenario

__all__ = ["CPUINFO", "LIBRARIES", "NO_NEURON_DEVICE", "Processor", "collect", "fallback_list", "predicts", "processor",
           "require_backend"]

#: Why a neuron run does not start without a backend, and what to do.
NO_NEURON_DEVICE = f"{backends.NO_NEURON_DEVICE} (--device cpu runs a CPU-only baseline)"

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


def _commit() -> str | None:
    """The git commit of the checkout hf-neuron runs from, when it runs from one."""
    try:
        result = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


#: Where Linux describes the processor (absent on other systems: their records say ``None``).
CPUINFO = Path("/proc/cpuinfo")


class Processor(NamedTuple):
    """What a run's time and bfloat16 numerics depend on besides the code, by the env keys that record it: the
    processor's model name, the CPUs the run could use, and which of :data:`~hf_neuron.vocabulary.records.CPU_ISA` it
    has (space-separated; ``"none"`` when it has none of them); None where the system does not say."""

    cpu_model: str | None
    cpus: int
    cpu_isa: str | None


def processor(cpuinfo: Path = CPUINFO) -> Processor:
    """The :class:`Processor` this process runs on, from ``cpuinfo`` (the first processor's ``model name`` and
    ``flags`` lines) and the CPUs this process may run on."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip() in ("model name", "flags"):
            fields.setdefault(key.strip(), value.strip())
    flags = set(fields["flags"].split()) if "flags" in fields else None
    return Processor(fields.get("model name") or None, cpus.usable(),
                     None if flags is None else " ".join(isa for isa in CPU_ISA if isa in flags) or "none")


def collect(profile: str | None = None, scenarios: Sequence[NamedScenario] = ()) -> Env:
    """The ``env`` block: backend, backend_version, device_count, the matrix profile and the release its verdicts
    predict (:func:`predicts`), where the fallback operators
    come from (:func:`fallback_list`), the hf-neuron patches that apply (none with ``HF_NEURON_PATCHES=0``: the run
    measures the libraries unmodified) and those among them that work around a gap of the reference device itself,
    python, library versions, hf_neuron and its commit, host and its :func:`processor`, and the run's ``scenarios``
    (its scenario set in run order, so the report knows every core scenario, run or not)."""
    from hf_neuron.patches import applicable

    backend: BackendKind
    if backends.real_backend_installed():
        backend, backend_version, device_count = "real", _version(backends.REAL_PACKAGE.replace("_", "-")), None
    elif read("HF_NEURON_EMULATOR"):
        backend, backend_version, device_count = "reference", __version__, read("HF_NEURON_EMULATOR_DEVICES")
    else:
        backend, backend_version, device_count = "none", None, 0
    patches = applicable() if read("HF_NEURON_PATCHES") else []
    return cast(Env, {  # the version keys are spelled by LIBRARIES
        "backend": backend,
        "backend_version": backend_version,
        "device_count": device_count,
        "profile": profile,
        "predicts": predicts(backend, profile),
        "fallback_list": fallback_list(backend, backend_version),
        "patches": [patch.id for patch in patches],
        "reference_gap_patches": [patch.id for patch in patches if patch.reference_device_gap],
        "python": platform.python_version(),
        **{key: _version(distribution) for key, distribution in LIBRARIES.items()},
        "hf_neuron": __version__,
        "hf_neuron_commit": _commit(),
        "host": platform.node(),
        **processor()._asdict(),
        "scenarios": list(scenarios),
    })


def predicts(backend: str, profile: str | None) -> str | None:
    """The torch-neuronx release whose behaviours the run's verdicts predict (its label, ``torch-neuronx 2.13.3.1 /
    2.14.3.1 (Neuron 2.34.0, 2026-11-30)``): the profile's, on the reference device; None on the real backend (it
    measures what it is), for a CPU-only run and for a profile that predicts none."""
    from hf_neuron.matrix.profiles import PROFILES
    from hf_neuron.vocabulary import trainium_sources

    release = PROFILES[profile].predicts if backend == "reference" and profile in PROFILES else None
    return None if release is None else trainium_sources.load().releases[release].label


def fallback_list(backend: str, backend_version: str | None) -> FallbackList | None:
    """Where the run's ``fallback_ops`` come from: on the reference device, the list of operators native on Trainium
    (``hf_neuron/device/trainium_ops.toml``: its source repository and commit, kind ``source`` or ``measured``); on the
    real backend, the backend's own report (kind ``backend``); None for a CPU-only run."""
    if backend == "reference":
        from hf_neuron.device import trainium_ops

        return {"file": "hf_neuron/device/trainium_ops.toml", **trainium_ops.provenance()}
    if backend == "real":
        return {"source": backends.REAL_PACKAGE.replace("_", "-"), "commit": None, "kind": "backend",
                "torch_neuronx": backend_version}
    return None


def require_backend(device: str, env: Env) -> None:
    """Raise :class:`InputError` when ``device`` is a neuron device and ``env`` (from :func:`collect`) has no
    neuron backend."""
    if device.split(":")[0] == "neuron" and env["backend"] == "none":
        raise InputError(NO_NEURON_DEVICE)
