"""safetensors: open files straight onto a neuron device."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["PATCHES"]

VERSIONS = ">=0.8,<0.9"


def _opens_on_neuron(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def safe_open(filename: Any, framework: str, device: Any = "cpu", **kwargs: Any) -> Any:
        index = neuron_device.neuron_index(device)
        if index is not None and neuron_device.neuron_is_accelerator():
            device = index
        return original(filename, framework, device, **kwargs)

    return safe_open


PATCHES: list[Patch] = [
    Patch(
        id="safetensors.open-on-neuron",
        library="safetensors",
        module="safetensors",
        attribute="safe_open",
        versions=VERSIONS,
        reason="safetensors bindings/python/src/lib.rs (the Rust `safe_open`) parses the device against a fixed "
        "list and rejects 'neuron' "
        "(\"device neuron is invalid\"), so `safetensors.torch.load_file(..., device=...)`, accelerate's "
        "`load_state_dict()` / `load_checkpoint_and_dispatch()` and peft's `load_peft_weights()` fail on neuron. "
        "An integer index is accepted and means torch's current accelerator: when that is neuron, the "
        "replacement passes 'neuron:N' (or a `torch.device`) on as the index N.",
        replace=_opens_on_neuron,
        upstream_fix="Accept any device torch knows (e.g. the PrivateUse1 backend name) in the device parser.",
    ),
]
