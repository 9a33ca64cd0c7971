"""``torch.neuron`` for the reference device: the device module surface of TorchNeuron.

Registered with ``torch._register_device_module("neuron", ...)`` by :func:`hf_neuron.device.activate`. Every
public name here is listed in :mod:`hf_neuron.device.contract`, which the conformance test checks against
whichever backend is active.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from hf_neuron.device.runtime import extension as _runtime

__all__ = [
    "Event", "Stream", "current_device", "current_stream", "default_generators", "device", "device_count",
    "empty_cache", "get_amp_supported_dtype", "get_device_name", "get_device_properties", "get_executed_ops",
    "get_fallback_ops", "get_rng_state", "get_rng_state_all", "initial_seed", "is_available", "is_bf16_supported",
    "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated", "max_memory_reserved",
    "mem_get_info", "memory_allocated", "memory_reserved", "memory_stats", "memory_summary", "reset_op_log",
    "reset_peak_memory_stats", "seed", "seed_all", "set_device", "set_rng_state", "set_rng_state_all",
    "set_stream", "stream", "synchronize",
]

default_generators: tuple[torch.Generator, ...] = ()

def bind() -> None:
    """Create the devices' default generators from the loaded runtime; called once, before the module is registered
    as ``torch.neuron``."""
    global default_generators
    default_generators = tuple(_runtime().default_generator(i) for i in range(_runtime().device_count()))


# ---- devices ----------------------------------------------------------------------------------------
def _index(device: torch.device | str | int | None) -> int:
    """A device argument as an index of this process (``None`` -> current device), validated."""
    if device is None:
        return _runtime().current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "neuron":
            raise ValueError(f"Expected a neuron device, got {device}")
        return _runtime().current_device() if device.index is None else _runtime().check_index(device.index)
    return _runtime().check_index(int(device))


def is_available() -> bool:
    """True: the reference device always has at least one device."""
    return _runtime().device_count() > 0


def is_initialized() -> bool:
    """True once the device has been used in this process."""
    return bool(_runtime().initialized())


def _is_in_bad_fork() -> bool:
    """True in a forked child of a process that used the device (torch asks this before touching RNG)."""
    return bool(_runtime().in_bad_fork())


def _lazy_init() -> None:
    """Nothing to do: the device is ready once registered (kept for torch code that calls it)."""


def device_count() -> int:
    """Number of neuron devices this process sees (``LOCAL_WORLD_SIZE`` under torchrun)."""
    return int(_runtime().device_count())


def current_device() -> int:
    """Index of the current device of this thread (``LOCAL_RANK`` under torchrun)."""
    return int(_runtime().current_device())


def set_device(device: torch.device | str | int) -> None:
    """Make ``device`` the current device; an index out of range raises ``ValueError``."""
    _runtime().set_device(_index(device))


class device:  # noqa: N801 - torch's device modules name this context manager `device`
    """Context manager that makes ``idx`` the current device and restores the previous one."""

    def __init__(self, idx: torch.device | str | int | None) -> None:
        self.idx = None if idx is None else _index(idx)
        self.prev = -1

    def __enter__(self) -> None:
        self.prev = _runtime().current_device()
        if self.idx is not None:
            _runtime().set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        _runtime().set_device(self.prev)


@dataclasses.dataclass(frozen=True)
class NeuronDeviceProperties:
    """What ``get_device_properties`` returns: ``name`` (instance type on Trainium) and ``total_memory``."""

    name: str
    total_memory: int
    index: int


def get_device_name(device: torch.device | str | int | None = None) -> str:
    """``"neuron:i"``, as the real backend answers."""
    return f"neuron:{_index(device)}"


def mem_get_info(device: torch.device | str | int | None = None) -> tuple[int, int]:
    """(free, total) bytes of a device: its capacity when one is set, else the host's memory (what
    ``torch.accelerator.get_memory_info`` answers too: the device's allocator is a ``c10::DeviceAllocator``)."""
    free, total = _runtime().memory_info(_index(device))
    return int(free), int(total)


def get_device_properties(device: torch.device | str | int | None = None) -> NeuronDeviceProperties:
    """Name and total memory of a device (the name says it is the reference device)."""
    index = _index(device)
    return NeuronDeviceProperties("hf-neuron reference device", mem_get_info(index)[1], index)


def synchronize(device: torch.device | str | int | None = None) -> None:
    """Wait for the device: execution on the reference device is synchronous, so this only validates."""
    _index(device)


# ---- streams and events -----------------------------------------------------------------------------
class Stream(torch.Stream):
    """A neuron stream (work runs synchronously; streams and events keep their documented semantics)."""

    def __new__(cls, device: torch.device | str | int | None = None, priority: int = 0, **kwargs: Any) -> Stream:
        return super().__new__(cls, device=torch.device("neuron", _index(device)), priority=priority, **kwargs)


class _NeuronEventType(type):
    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, torch.Event) and instance.device.type == "neuron"


class Event(metaclass=_NeuronEventType):
    """A neuron event: a ``torch.Event`` on the current device (torch's event methods accept no subclass);
    ``elapsed_time`` measures host time between records."""

    def __new__(  # type: ignore[misc]
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> torch.Event:
        return torch.Event(
            device=torch.device("neuron", _runtime().current_device()), enable_timing=enable_timing,
            blocking=blocking, interprocess=interprocess,
        )


def current_stream(device: torch.device | str | int | None = None) -> torch.Stream:
    """The current stream of a device."""
    return torch.accelerator.current_stream(torch.device("neuron", _index(device)))


def set_stream(stream: torch.Stream) -> None:
    """Make ``stream`` current on its device."""
    torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(stream: torch.Stream | None) -> Iterator[None]:
    """Context manager selecting ``stream`` (``None``: no change)."""
    if stream is None:
        yield
        return
    previous = current_stream(stream.device_index)
    set_stream(stream)
    try:
        yield
    finally:
        set_stream(previous)


# ---- random numbers -----------------------------------------------------------------------------------
def manual_seed(seed: int) -> None:
    """Seed the current device's default generator."""
    if not _is_in_bad_fork():
        default_generators[_runtime().current_device()].manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed every device's default generator (skipped in a forked child, as CUDA defers it)."""
    if not _is_in_bad_fork():
        for generator in default_generators:
            generator.manual_seed(int(seed))


def seed() -> None:
    """Seed the current device's generator with a non-deterministic number."""
    default_generators[_runtime().current_device()].seed()


def seed_all() -> None:
    """Seed every device's generator with the same non-deterministic number."""
    value = default_generators[0].seed()
    for generator in default_generators[1:]:
        generator.manual_seed(value)


def initial_seed() -> int:
    """The initial seed of the current device's generator."""
    return int(default_generators[_runtime().current_device()].initial_seed())


def get_rng_state(device: torch.device | str | int = "neuron") -> torch.Tensor:
    """The generator state of a device, as a CPU ``uint8`` tensor."""
    return default_generators[_index(device)].get_state()


def set_rng_state(new_state: torch.Tensor, device: torch.device | str | int = "neuron") -> None:
    """Restore a state returned by :func:`get_rng_state`."""
    default_generators[_index(device)].set_state(new_state.cpu())


def get_rng_state_all() -> list[torch.Tensor]:
    """The generator states of every device (accelerate checkpoints these)."""
    return [generator.get_state() for generator in default_generators]


def set_rng_state_all(new_states: Sequence[torch.Tensor]) -> None:
    """Restore every device's generator state."""
    for generator, state in zip(default_generators, new_states, strict=True):
        generator.set_state(state.cpu())


# ---- mixed precision ----------------------------------------------------------------------------------
def get_amp_supported_dtype() -> list[torch.dtype]:
    """Dtypes ``torch.autocast("neuron")`` accepts."""
    return [torch.float32, torch.float16, torch.bfloat16]


def is_bf16_supported() -> bool:
    """Trainium computes bfloat16 natively."""
    return True


# ---- memory -----------------------------------------------------------------------------------------
def memory_allocated(device: torch.device | str | int | None = None) -> int:
    """Bytes held by tensors on a device."""
    return int(_runtime().memory_stats(_index(device))["allocated"])


def max_memory_allocated(device: torch.device | str | int | None = None) -> int:
    """Peak of :func:`memory_allocated` since start or the last :func:`reset_peak_memory_stats`."""
    return int(_runtime().memory_stats(_index(device))["peak"])


# The reference device has no caching allocator: what is reserved is what is allocated.
memory_reserved = memory_allocated
max_memory_reserved = max_memory_allocated


def reset_peak_memory_stats(device: torch.device | str | int | None = None) -> None:
    """Restart peak tracking at the current allocation."""
    _runtime().reset_peak(_index(device))


def memory_stats(device: torch.device | str | int | None = None) -> dict[str, Any]:
    """Nested statistics: ``{"allocated_bytes": {"current", "peak"}, "reserved_bytes": {...}, ...}``."""
    raw = _runtime().memory_stats(_index(device))
    bytes_stats = {"current": raw["allocated"], "peak": raw["peak"]}
    return {
        "allocated_bytes": dict(bytes_stats),
        "reserved_bytes": dict(bytes_stats),
        "allocation": {"current": raw["allocations"] - raw["frees"], "allocated": raw["allocations"],
                       "freed": raw["frees"]},
        "num_ooms": raw["ooms"],
    }


def memory_summary(device: torch.device | str | int | None = None, abbreviated: bool = False) -> str:
    """A human-readable summary of :func:`memory_stats`."""
    index = _index(device)
    stats = memory_stats(index)
    free, total = mem_get_info(index)
    mib = 2**20
    return "\n".join([
        f"neuron:{index} memory (hf-neuron reference device)",
        f"  allocated: {stats['allocated_bytes']['current'] / mib:.1f} MiB "
        f"(peak {stats['allocated_bytes']['peak'] / mib:.1f} MiB)",
        f"  live allocations: {stats['allocation']['current']}",
        f"  free / total: {free / mib:.0f} / {total / mib:.0f} MiB",
        f"  out-of-memory errors: {stats['num_ooms']}",
    ])


def empty_cache() -> None:
    """Nothing is cached: freed device memory returns to the host at once."""


# ---- operator log -------------------------------------------------------------------------------------
def get_executed_ops() -> dict[str, int]:
    """Operators the model dispatched on the device that ran through its CPU kernels, by dispatcher name
    (``aten::name[.overload]``), with their calls (needs HF_NEURON_EMULATOR_OP_LOG=1)."""
    return dict(sorted(_runtime().executed_ops().items()))


def get_fallback_ops() -> dict[str, int]:
    """The executed operators that would run on the CPU on Trainium (``hf_neuron/device/trainium_ops.toml``: not
    native there, or measured falling back), with their calls."""
    return dict(sorted(_runtime().fallback_ops().items()))


def reset_op_log() -> None:
    """Forget the executed operators (and which have warned)."""
    _runtime().clear_op_log()
