"""Conformance of ``torch.neuron`` with the contract table, on whichever backend is active."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType, SimpleNamespace

import pytest
import torch

from hf_neuron.device.contract import CONTRACT, names


def _is_available(n: ModuleType) -> None:
    assert n.is_available() is True


def _device_count(n: ModuleType) -> None:
    assert isinstance(n.device_count(), int) and n.device_count() >= 1


def _current_device(n: ModuleType) -> None:
    assert 0 <= n.current_device() < n.device_count()


def _set_device(n: ModuleType) -> None:
    before = n.current_device()
    try:
        n.set_device(torch.device("neuron", n.device_count() - 1))
        assert n.current_device() == n.device_count() - 1
        n.set_device(0)
        assert n.current_device() == 0
        with pytest.raises(ValueError, match="Invalid device neuron:99"):
            n.set_device(99)
    finally:
        n.set_device(before)


def _device(n: ModuleType) -> None:
    last = n.device_count() - 1
    with n.device(last):
        assert n.current_device() == last
        assert torch.empty(1, device="neuron").device == torch.device("neuron", last)
    assert n.current_device() == 0


def _get_device_name(n: ModuleType) -> None:
    assert n.get_device_name(0) == "neuron:0"
    assert n.get_device_name() == f"neuron:{n.current_device()}"


def _get_device_properties(n: ModuleType) -> None:
    properties = n.get_device_properties(0)
    assert isinstance(properties.name, str) and properties.name
    assert properties.total_memory > 0


def _synchronize(n: ModuleType) -> None:
    n.synchronize()
    n.synchronize(0)
    n.synchronize(torch.device("neuron", n.device_count() - 1))
    with pytest.raises((ValueError, RuntimeError)):  # it waits for a device: one that does not exist is an error
        n.synchronize(99)


def _is_initialized(n: ModuleType) -> None:
    torch.ones(1, device="neuron")
    assert n.is_initialized() is True


def _is_in_bad_fork(n: ModuleType) -> None:
    assert n._is_in_bad_fork() is False


def _stream_class(n: ModuleType) -> None:
    stream = n.Stream()
    assert isinstance(stream, torch.Stream) and stream.device.type == "neuron"
    stream.synchronize()
    assert stream.query() is True


def _event_class(n: ModuleType) -> None:
    start, end = n.Event(enable_timing=True), n.Event(enable_timing=True)
    assert isinstance(start, n.Event) and start.device.type == "neuron"
    assert not isinstance(torch.Event(device="cpu"), n.Event)
    start.record()
    torch.ones(100, device="neuron").sum()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0


def _current_stream(n: ModuleType) -> None:
    assert n.current_stream().device == torch.device("neuron", n.current_device())


def _stream(n: ModuleType) -> None:
    side = n.Stream()
    before = n.current_stream()
    with n.stream(side):
        assert n.current_stream() == side
        side.wait_stream(before)
    assert n.current_stream() == before


def _set_stream(n: ModuleType) -> None:
    before = n.current_stream()
    side = n.Stream()
    n.set_stream(side)
    try:
        assert n.current_stream() == side
    finally:
        n.set_stream(before)


def _manual_seed(n: ModuleType) -> None:
    n.manual_seed(3)
    a = torch.rand(4, device="neuron").cpu()
    n.manual_seed(3)
    assert torch.equal(a, torch.rand(4, device="neuron").cpu())


def _manual_seed_all(n: ModuleType) -> None:
    torch.manual_seed(5)  # torch.manual_seed reaches every device's generator
    a = [torch.rand(3, device=f"neuron:{i}").cpu() for i in range(n.device_count())]
    n.manual_seed_all(5)
    b = [torch.rand(3, device=f"neuron:{i}").cpu() for i in range(n.device_count())]
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=False))


def _seed(n: ModuleType) -> None:
    n.seed()
    first = n.initial_seed()
    n.seed()
    assert n.initial_seed() != first


def _initial_seed(n: ModuleType) -> None:
    n.manual_seed(11)
    assert n.initial_seed() == 11


def _get_rng_state(n: ModuleType) -> None:
    state = n.get_rng_state()
    assert state.device.type == "cpu" and state.dtype == torch.uint8 and state.numel() > 0


def _set_rng_state(n: ModuleType) -> None:
    state = n.get_rng_state()
    a = torch.randn(5, device="neuron").cpu()
    n.set_rng_state(state)
    assert torch.equal(a, torch.randn(5, device="neuron").cpu())


def _get_rng_state_all(n: ModuleType) -> None:
    assert len(n.get_rng_state_all()) == n.device_count()


def _set_rng_state_all(n: ModuleType) -> None:
    states = n.get_rng_state_all()
    a = torch.rand(2, device=f"neuron:{n.device_count() - 1}").cpu()
    n.set_rng_state_all(states)
    assert torch.equal(a, torch.rand(2, device=f"neuron:{n.device_count() - 1}").cpu())


def _default_generators(n: ModuleType) -> None:
    assert len(n.default_generators) == n.device_count()
    assert all(g.device == torch.device("neuron", i) for i, g in enumerate(n.default_generators))


def _get_amp_supported_dtype(n: ModuleType) -> None:
    assert n.get_amp_supported_dtype() == [torch.float32, torch.float16, torch.bfloat16]


def _is_bf16_supported(n: ModuleType) -> None:
    assert n.is_bf16_supported() is True


def _memory_allocated(n: ModuleType) -> None:
    before = n.memory_allocated(0)
    t = torch.empty(1024, dtype=torch.float32, device="neuron:0")
    assert n.memory_allocated(0) - before == 4096
    del t
    assert n.memory_allocated(0) == before


def _max_memory_allocated(n: ModuleType) -> None:
    n.reset_peak_memory_stats(0)
    before = n.memory_allocated(0)
    t = torch.empty(2**20, dtype=torch.uint8, device="neuron:0")
    del t
    assert n.max_memory_allocated(0) >= before + 2**20 > n.memory_allocated(0)


#: A tensor large enough for a segment of its own in a caching allocator (above its 20 MiB large-buffer size).
_SEGMENT = 64 * 2**20


def _memory_reserved(n: ModuleType) -> None:
    """Reserved memory holds what tensors hold: a held tensor is in it (a constant or zero fails)."""
    before = n.memory_reserved(0)
    t = torch.empty(_SEGMENT, dtype=torch.uint8, device="neuron:0")
    assert n.memory_reserved(0) >= n.memory_allocated(0) >= _SEGMENT
    assert n.memory_reserved(0) >= before + _SEGMENT or before >= n.memory_allocated(0)  # grew, or was cached
    del t


def _max_memory_reserved(n: ModuleType) -> None:
    """The peak of reserved memory: at least what a held tensor reserved, and the current value right after a reset
    of the peaks (a constant fails)."""
    t = torch.empty(_SEGMENT, dtype=torch.uint8, device="neuron:0")
    assert n.max_memory_reserved(0) >= n.memory_reserved(0) >= _SEGMENT
    del t
    n.empty_cache()
    n.reset_peak_memory_stats(0)
    assert n.max_memory_reserved(0) == n.memory_reserved(0)


def _reset_peak_memory_stats(n: ModuleType) -> None:
    t = torch.empty(2**20, dtype=torch.uint8, device="neuron:0")
    del t
    n.reset_peak_memory_stats(0)
    assert n.max_memory_allocated(0) == n.memory_allocated(0)


def _memory_stats(n: ModuleType) -> None:
    stats = n.memory_stats(0)
    assert stats["allocated_bytes"]["current"] == n.memory_allocated(0)
    assert stats["allocated_bytes"]["peak"] == n.max_memory_allocated(0)


def _memory_summary(n: ModuleType) -> None:
    assert "neuron:0" in n.memory_summary(0)


def _empty_cache(n: ModuleType) -> None:
    """Freed memory a caching allocator keeps goes back: after it, a freed tensor's bytes are no longer reserved (a
    no-op on an allocator that caches fails; the reference device caches nothing, so freeing gives them back)."""
    t = torch.empty(_SEGMENT, dtype=torch.uint8, device="neuron:0")
    held = n.memory_reserved(0)
    del t
    n.empty_cache()
    assert n.memory_reserved(0) <= held - _SEGMENT


def _mem_get_info(n: ModuleType) -> None:
    free, total = n.mem_get_info(0)
    assert 0 <= free <= total and total > 0


CHECKS: dict[str, Callable[[ModuleType], None]] = {
    "is_available": _is_available, "device_count": _device_count, "current_device": _current_device,
    "set_device": _set_device, "device": _device, "get_device_name": _get_device_name,
    "get_device_properties": _get_device_properties, "synchronize": _synchronize,
    "is_initialized": _is_initialized, "_is_in_bad_fork": _is_in_bad_fork, "Stream": _stream_class,
    "Event": _event_class, "current_stream": _current_stream, "stream": _stream, "set_stream": _set_stream,
    "manual_seed": _manual_seed, "manual_seed_all": _manual_seed_all, "seed": _seed,
    "initial_seed": _initial_seed, "get_rng_state": _get_rng_state, "set_rng_state": _set_rng_state,
    "get_rng_state_all": _get_rng_state_all, "set_rng_state_all": _set_rng_state_all,
    "default_generators": _default_generators, "get_amp_supported_dtype": _get_amp_supported_dtype,
    "is_bf16_supported": _is_bf16_supported, "memory_allocated": _memory_allocated,
    "max_memory_allocated": _max_memory_allocated, "memory_reserved": _memory_reserved,
    "max_memory_reserved": _max_memory_reserved, "reset_peak_memory_stats": _reset_peak_memory_stats,
    "memory_stats": _memory_stats, "memory_summary": _memory_summary, "empty_cache": _empty_cache,
    "mem_get_info": _mem_get_info,
}


def test_every_contract_entry_has_a_behavioural_check() -> None:
    assert set(CHECKS) == set(names())


@pytest.mark.parametrize("requirement", CONTRACT, ids=lambda r: r.name)
def test_contract(neuron: ModuleType, requirement: object) -> None:
    name = requirement.name  # type: ignore[attr-defined]
    assert hasattr(neuron, name), f"torch.neuron has no {name} ({requirement.callers} call it)"  # type: ignore[attr-defined]
    CHECKS[name](neuron)


def test_the_checks_fail_a_trivial_implementation(neuron: ModuleType) -> None:
    """A no-op ``synchronize`` or ``empty_cache`` (under a caching allocator), a ``memory_reserved`` of zero, a
    constant ``max_memory_reserved``: each met the old checks (which only ran them, or compared two values a
    trivial implementation keeps in order)."""
    real = {name: getattr(neuron, name) for name in names()}

    def fake(**changed: Callable[..., object]) -> ModuleType:
        return SimpleNamespace(**{**real, **changed})  # type: ignore[return-value]

    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        _synchronize(fake(synchronize=lambda device=None: None))
    with pytest.raises(AssertionError):
        _memory_reserved(fake(memory_reserved=lambda device=None: 0))
    with pytest.raises(AssertionError):
        _max_memory_reserved(fake(max_memory_reserved=lambda device=None: 2**62))
    caching = fake(memory_reserved=lambda device=None: neuron.max_memory_allocated(device),  # keeps the peak
                   empty_cache=lambda: None)
    with pytest.raises(AssertionError):
        _empty_cache(caching)
