"""The ``torch.neuron`` device-module contract, written down once.

Every name TorchNeuron documents for ``torch.neuron`` (``NEURON_FACTS.md``), and every name that torch,
accelerate, transformers, trl, peft or diffusers call on a device module, with who calls it and what it must
do. ``tests/test_device_contract.py`` checks each entry's behaviour against whichever backend is active (the
real TorchNeuron or the reference device), and fails if an entry has no behavioural check.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

__all__ = ["CONTRACT", "Requirement", "names"]

Kind = Literal["function", "class", "context manager", "attribute"]


@dataclasses.dataclass(frozen=True)
class Requirement:
    """One name of ``torch.neuron``: what it is, who calls it, and what it must do."""

    name: str
    kind: Kind
    callers: str
    behaviour: str


CONTRACT: tuple[Requirement, ...] = (
    # devices
    Requirement("is_available", "function", "docs, accelerate, transformers", "True when a device is present"),
    Requirement("device_count", "function", "docs, accelerate launch, torch.distributed",
                "devices this process sees; LOCAL_WORLD_SIZE under torchrun"),
    Requirement("current_device", "function", "docs, accelerate state, torch.random",
                "index of the current device; LOCAL_RANK under torchrun"),
    Requirement("set_device", "function", "docs, accelerate, torch.accelerator",
                "int or torch.device; an index out of range raises ValueError"),
    Requirement("device", "context manager", "docs, torch.random.fork_rng",
                "makes an index current inside the block, restores it after"),
    Requirement("get_device_name", "function", "docs, accelerate env", "the string 'neuron:i'"),
    Requirement("get_device_properties", "function", "docs, trl telemetry and `trl env`",
                ".name (instance type on Trainium) and .total_memory in bytes"),
    Requirement("synchronize", "function", "docs, FSDP, benchmarks", "waits for the device; validates its argument"),
    Requirement("is_initialized", "function", "torch.distributed", "True once the device has been used"),
    Requirement("_is_in_bad_fork", "function", "torch.random.fork_rng, torch backend registration",
                "True in a forked child of a process that used the device"),
    # streams
    Requirement("Stream", "class", "docs, FSDP2, DDP", "a torch.Stream on a neuron device"),
    Requirement("Event", "class", "docs, FSDP2", "a torch.Event on a neuron device; elapsed_time in ms"),
    Requirement("current_stream", "function", "docs, FSDP2, DDP", "the current stream of a device"),
    Requirement("stream", "context manager", "FSDP2, torch.utils.checkpoint", "selects a stream inside the block"),
    Requirement("set_stream", "function", "torch.accelerator users", "makes a stream current"),
    # random numbers
    Requirement("manual_seed", "function", "docs", "seeds the current device's generator"),
    Requirement("manual_seed_all", "function", "docs, torch.manual_seed, transformers set_seed",
                "seeds every device's generator; torch.manual_seed reaches it"),
    Requirement("seed", "function", "docs", "seeds the current generator non-deterministically"),
    Requirement("initial_seed", "function", "docs", "the current generator's initial seed"),
    Requirement("get_rng_state", "function", "docs, torch.utils.checkpoint, fork_rng",
                "state of a device's generator as a CPU uint8 tensor"),
    Requirement("set_rng_state", "function", "docs, torch.utils.checkpoint, fork_rng",
                "restores a state from get_rng_state: the same numbers follow"),
    Requirement("get_rng_state_all", "function", "accelerate checkpointing", "states of every device"),
    Requirement("set_rng_state_all", "function", "accelerate checkpointing", "restores every device's state"),
    Requirement("default_generators", "attribute", "torch.Generator users", "one torch.Generator per device"),
    # mixed precision
    Requirement("get_amp_supported_dtype", "function", "docs, torch.autocast", "[float32, float16, bfloat16]"),
    Requirement("is_bf16_supported", "function", "docs, transformers, accelerate", "True"),
    # memory
    Requirement("memory_allocated", "function", "docs, accelerate, transformers", "bytes held by tensors"),
    Requirement("max_memory_allocated", "function", "docs, accelerate", "peak since the last reset"),
    Requirement("memory_reserved", "function", "docs", "bytes reserved by the allocator (>= allocated)"),
    Requirement("max_memory_reserved", "function", "docs", "peak reserved"),
    Requirement("reset_peak_memory_stats", "function", "docs, accelerate", "peak restarts at the current value"),
    Requirement("memory_stats", "function", "docs, FSDP", "nested dicts: allocated_bytes.current/peak, ..."),
    Requirement("memory_summary", "function", "docs", "human-readable text"),
    Requirement("empty_cache", "function", "docs, accelerate, transformers", "releases cached memory; safe anytime"),
    Requirement("mem_get_info", "function", "accelerate device_map='auto'", "(free, total) bytes, free <= total"),
)


def names() -> tuple[str, ...]:
    """Every contract name, in table order."""
    return tuple(requirement.name for requirement in CONTRACT)
