"""Environment switches of hf-neuron, parsed and validated in one place.

Every variable hf-neuron reads — the package, its commands and its scripts, and the real backend's own
(``TORCH_NEURONX_*``) where the reference device honours it as TorchNeuron does — is declared here once, with its type,
default, meaning and who reads it; the reference table (``docs/reference.md``) is generated from :data:`SWITCHES`,
and a test keeps every ``HF_NEURON_*`` name the repository spells declared here. A bad value raises
:class:`SettingError` naming the variable, the value, and what is accepted: nothing is silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any

from hf_neuron.errors import InputError

__all__ = ["SWITCHES", "ReferenceDeviceSettings", "SettingError", "Switch", "read", "reference_device_settings"]


class SettingError(InputError):
    """An environment variable of hf-neuron holds a value it does not accept."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingError(f"{name}={raw!r} is not a switch value: use 1 to turn it on or 0 to turn it off")


def _device_count(name: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if not 1 <= value <= 128:
        raise SettingError(
            f"{name}={raw!r} is not a device count: use a whole number from 1 to 128 "
            "(a trn2.48xlarge has 64 logical NeuronCores, 128 at LNC=1)"
        )
    return value


def _gibibytes(name: str, raw: str) -> float | None:
    if raw.strip() == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise SettingError(f"{name}={raw!r} is not a memory size: use a positive number of GiB, e.g. 24")
    return value


def _text(name: str, raw: str) -> str:
    return raw.strip()


def _positive_int(name: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise SettingError(f"{name}={raw!r} is not a count: use a whole number of 1 or more")
    return value


def _seconds(name: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        value = 0.0
    if not value > 0:
        raise SettingError(f"{name}={raw!r} is not a time: use a positive number of seconds, e.g. 300")
    return value


def _choice(*options: str) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        value = raw.strip().lower()
        if value not in options:
            raise SettingError(f"{name}={raw!r} is not one of: {', '.join(options)}")
        return value

    return parse


def _libraries(name: str, raw: str) -> str:
    """Names of libraries whose own test suites ``hf-neuron upstream`` runs beyond transformers, separated by spaces."""
    from hf_neuron.compat.upstream_not_applicable import SUITES

    known = [suite for suite in SUITES if suite != "transformers"]
    chosen = raw.split()
    if unknown := [library for library in chosen if library not in known]:
        raise SettingError(f"{name}={raw!r} names {', '.join(map(repr, unknown))}: use some of {' '.join(known)}, "
                           "separated by spaces")
    return " ".join(chosen)


#: Who reads the settings that say where a library's tests come from.
_CONFIGURED = "hf-neuron upstream --configured (scripts/nightly.sh, scripts/ci_upstream.sh)"


@dataclasses.dataclass(frozen=True)
class Switch:
    """One environment variable: its parser, default and the sentence the README shows."""

    name: str
    parse: Callable[[str, str], Any]
    default: str
    doc: str
    #: who reads it: the package (``import torch``), a command, or a script
    read_by: str = "the reference device"


SWITCHES: tuple[Switch, ...] = (
    Switch("HF_NEURON_EMULATOR", _flag, "0",
           "Register the reference `neuron` device at `import torch` (off by default; never used when the real "
           "`torch_neuronx` is installed)."),
    Switch("HF_NEURON_EMULATOR_DEVICES", _device_count, "2",
           "Number of reference devices (`neuron:0..N-1`), 1 to 128."),
    Switch("HF_NEURON_EMULATOR_64BIT", _choice("exact", "narrow"), "exact",
           "`narrow` computes float64/int64 in 32 bits and casts back, as Trainium hardware does; `exact` keeps CPU "
           "precision."),
    Switch("HF_NEURON_EMULATOR_MEMORY_FORMATS", _choice("any", "strict"), "any",
           "`strict` refuses channels-last and other memory formats like the real backend (\"Neuron tensors only "
           "support contiguous or preserve memory format\")."),
    Switch("HF_NEURON_EMULATOR_MEMORY_GB", _gibibytes, "",
           "Capacity of each reference device in GiB (24 is one trn2 logical core at LNC=2); allocations beyond it "
           "raise a device out-of-memory error. Unlimited when empty."),
    Switch("HF_NEURON_EMULATOR_OP_LOG", _flag, "0",
           "Record every operator that runs on the device, with its calls (`torch.neuron.get_executed_ops()`), and "
           "those that would fall back to the CPU on Trainium (`torch.neuron.get_fallback_ops()`: not native by "
           "`hf_neuron/device/trainium_ops.toml`)."),
    Switch("HF_NEURON_EMULATOR_WARN_FALLBACK", _flag, "0",
           "Warn once per operator that would fall back to the CPU on Trainium (\"would fall back to CPU on "
           "Trainium\"); implies the op log."),
    Switch("HF_NEURON_EMULATOR_COMPILE_CONTRACT", _choice("trainium", "lenient"), "trainium",
           "`trainium`: `torch.compile(backend=\"neuron\")` also refuses what the Neuron compiler rejects by default, "
           "integer scatter-with-compute (`scatter_add`, `index_add`, `scatter_reduce`, accumulating `index_put` on "
           "integers: NCC_EVRF060); `lenient` compiles it as the CPU does. `dynamic=True` is refused either way."),
    Switch("HF_NEURON_EMULATOR_COMPILE_BACKEND", _choice("auto", "explicit"), "auto",
           "`auto` (TorchNeuron 2.33 and later): the `neuron` backend is selected by itself on the device, so a "
           "`torch.compile` that names no backend, or Inductor by name, compiles a graph on the device (a neuron "
           "input, or a tensor it makes there) with it (its mode ignored with a warning); `explicit` (the pre-release "
           "tree): only `backend=\"neuron\"` compiles for the device, and such a graph goes to Inductor, which cannot "
           "lower for it."),
    Switch("HF_NEURON_EMULATOR_FLEX_ATTENTION", _choice("device", "refused"), "device",
           "`device` (TorchNeuron 2.33 and later, whose 2.34 notes say FlexAttention runs on Neuron): torch's "
           "`flex_attention` accepts neuron tensors and computes the attention densely, eagerly and compiled with the "
           "`neuron` backend; `refused` (the pre-release tree): torch's own device check refuses them (\"FlexAttention "
           "is only supported on ...\")."),
    Switch("TORCH_NEURONX_COMPLEX_DECOMPOSE", _flag, "1",
           "The real backend's own switch (AWS docs, `torch/reference/env-vars`: on by default for PyTorch >= 2.13): "
           "complex operations are decomposed into real ones before the Neuron compiler sees a graph. The reference "
           "device's `neuron` backend honours it: `0` makes it reject a compiled graph with a complex dtype as the "
           "compiler does (NCC_EVRF004).", "the reference device (and TorchNeuron, whose variable it is)"),
    Switch("HF_NEURON_EMULATOR_DISPATCH", _choice("cpu", "trainium"), "cpu",
           "`trainium` takes the real backend's dispatch routes: an operator TorchNeuron does not implement "
           "(`hf_neuron/device/trainium_ops.toml`) runs its composite kernel, whose parts are dispatched and logged "
           "as on Trainium, and `scaled_dot_product_attention` on 4-D inputs runs the overrideable fused attention "
           "TorchNeuron picks; `cpu` runs every operator that has a CPU kernel with it, attention as the CPU picks."),
    Switch("HF_NEURON_EMULATOR_RNG", _choice("device", "cpu"), "device",
           "`device` (the released TorchNeuron's, 2.33 and later, and the `trainium` profile's): each neuron device "
           "has its own default generator, random operators on the device draw from it, an explicit neuron generator "
           "is used, and `torch.manual_seed` seeds it with the CPU's; `cpu` (the pre-release tree's): random operators "
           "on the device draw from the CPU's default generator, as its CPU fallback and its dropout did, and refuse "
           "an explicit neuron generator as the CPU kernels do."),
    Switch("HF_NEURON_EMULATOR_ALIASING", _choice("zero-copy", "copy"), "zero-copy",
           "Debug mode `copy`: CPU kernels run on copies of device tensors, copied back after the call, instead of "
           "on aliases of device memory."),
    Switch("HF_NEURON_CACHE", _text, "",
           "Where the reference device's C++ extension is built and cached, and where `hf-neuron upstream --fetch` "
           "keeps the source trees it fetches (default `~/.cache/hf-neuron`).", "the reference device, upstream"),
    Switch("HF_NEURON_CUDA_REDIRECT", _flag, "0",
           "Opt-in: redirect `\"cuda\"`, `.cuda()` and `torch.cuda.*` in user scripts to `neuron`, logging each "
           "redirect.", "the package"),
    Switch("HF_NEURON_PATCHES", _flag, "1",
           "Apply the Hugging Face patches when a `neuron` device is registered (0 turns every patch off).",
           "the package"),
    Switch("HF_NEURON_MATRIX_WORKERS", _positive_int, "1",
           "Worker processes of `hf-neuron matrix run` when `-n` is not given (`scripts/ci_matrix_shard.sh` and "
           "`scripts/nightly.sh` set it to the number of cores unless it is set).", "hf-neuron matrix run"),
    Switch("HF_NEURON_MATRIX_MAX_GB", _gibibytes, "",
           "Memory budget of a checkpoint's real-width slice, GiB, when `--max-gb` is not given (unset: 3/4 of the "
           "memory available when the run starts, shared by its workers). `scripts/nightly.sh` sets 8 unless it is "
           "set, so that nights on different machines slice alike.", "hf-neuron matrix run"),
    Switch("HF_NEURON_MATRIX_TIMEOUT", _seconds, "300",
           "Seconds one matrix case may take before it is recorded as `timeout`, when `--timeout` is not given.",
           "hf-neuron matrix run"),
    Switch("HF_NEURON_MATRIX_RUN_ID", _text, "",
           "The run id of `hf-neuron matrix run` when `--run-id` is not given (give every shard of one run the same "
           "id); new when empty (`scripts/ci_matrix_shard.sh` makes one per CI run).", "hf-neuron matrix run"),
    Switch("HF_NEURON_HISTORY", _text, "nightly/history",
           "The run history `scripts/nightly.sh` reads for the trend and the diff and adds its run to.",
           "scripts/nightly.sh"),
    Switch("HF_NEURON_UPSTREAM_TOP", _positive_int, "10",
           "How many architectures of `compat/ranking.csv` the nightly's `hf-neuron upstream` step runs.",
           "scripts/nightly.sh"),
    Switch("HF_NEURON_UPSTREAM_FETCH", _flag, "0",
           "Let `hf-neuron upstream --configured` (the nightly's and CI's upstream steps) clone the tag of the "
           "installed transformers, diffusers or TRL (network) when no source tree is configured.",
           _CONFIGURED),
    Switch("HF_NEURON_TRANSFORMERS_SOURCE", _text, "",
           "A transformers checkout of the installed version's tag for `hf-neuron upstream transformers "
           "--configured`, the nightly's step (without it, and without `HF_NEURON_UPSTREAM_FETCH=1`, the step is "
           "skipped, saying so).", _CONFIGURED),
    Switch("HF_NEURON_UPSTREAM_LIBRARIES", _libraries, "peft accelerate diffusers trl",
           "The libraries whose own test suites beyond transformers the nightly runs (their `nightly` selection), "
           "separated by spaces.", "scripts/nightly.sh"),
    Switch("HF_NEURON_DIFFUSERS_SOURCE", _text, "",
           "A tree of diffusers' model tests for `hf-neuron upstream diffusers --configured`, the nightly's and CI's "
           "step (default `../shared/upstream/diffusers-tests` beside the checkout, when it is there; else a clone "
           "with `HF_NEURON_UPSTREAM_FETCH=1`; else the step is skipped, saying so).", _CONFIGURED),
    Switch("HF_NEURON_TRL_SOURCE", _text, "",
           "A TRL checkout, or a git repository (see `HF_NEURON_TRL_REVISION`), for `hf-neuron upstream trl "
           "--configured`, the nightly's and CI's step (TRL's sdist has no tests; without it, and without "
           "`HF_NEURON_UPSTREAM_FETCH=1`, the step is skipped, saying so).", _CONFIGURED),
    Switch("HF_NEURON_TRL_REVISION", _text, "",
           "With `HF_NEURON_TRL_SOURCE` a git repository: the commit, tag or branch whose tests are exported (default "
           "HEAD).", _CONFIGURED),
    Switch("HF_NEURON_TRL_AGAINST", _text, "",
           "With `HF_NEURON_TRL_SOURCE`: the TRL release its tests were written for, when not the installed one "
           "(e.g. `1.9.0` for a tree of 1.10.0.dev0): `hf-neuron upstream trl --configured` installs it beside the "
           "installed TRL, in the cache (`--against`), and runs the tests against it (default: the installed TRL).",
           _CONFIGURED),
    Switch("HF_NEURON_DEVICE_PROBE", _text, "",
           "A directory: each process that imports torch writes there, at exit, how many allocations it made on "
           "neuron. `hf-neuron upstream` sets it for the tests it runs, so that it can tell the processes a test "
           "launched (`accelerate launch`, `torchrun`) ran on neuron.", "the package (set by hf-neuron upstream)"),
)

_BY_NAME = {switch.name: switch for switch in SWITCHES}


def read(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """Parse one declared variable from ``environ`` (default ``os.environ``), or its default when unset."""
    switch = _BY_NAME[name]
    env = os.environ if environ is None else environ
    raw = env.get(name)
    if raw is None:
        raw = switch.default
    return switch.parse(name, raw)


@dataclasses.dataclass(frozen=True)
class ReferenceDeviceSettings:
    """What the reference device is asked to be, read from the environment."""

    enabled: bool
    devices: int
    narrow_64bit: bool
    strict_memory_formats: bool
    capacity_bytes: int | None
    op_log: bool
    warn_fallback: bool
    copy_aliasing: bool
    trainium_dispatch: bool
    rng_on_cpu: bool


def reference_device_settings(environ: Mapping[str, str] | None = None) -> ReferenceDeviceSettings:
    """Read every ``HF_NEURON_EMULATOR*`` variable; raise :class:`SettingError` on the first bad one."""
    capacity = read("HF_NEURON_EMULATOR_MEMORY_GB", environ)
    warn_fallback = read("HF_NEURON_EMULATOR_WARN_FALLBACK", environ)
    return ReferenceDeviceSettings(
        enabled=read("HF_NEURON_EMULATOR", environ),
        devices=read("HF_NEURON_EMULATOR_DEVICES", environ),
        narrow_64bit=read("HF_NEURON_EMULATOR_64BIT", environ) == "narrow",
        strict_memory_formats=read("HF_NEURON_EMULATOR_MEMORY_FORMATS", environ) == "strict",
        capacity_bytes=None if capacity is None else int(capacity * 2**30),
        op_log=read("HF_NEURON_EMULATOR_OP_LOG", environ) or warn_fallback,
        warn_fallback=warn_fallback,
        copy_aliasing=read("HF_NEURON_EMULATOR_ALIASING", environ) == "copy",
        trainium_dispatch=read("HF_NEURON_EMULATOR_DISPATCH", environ) == "trainium",
        rng_on_cpu=read("HF_NEURON_EMULATOR_RNG", environ) == "cpu",
    )
