"""peft: ``infer_device()`` answers ``neuron``."""

from __future__ import annotations

import functools
from collections.abc import Callable

from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["PATCHES"]

VERSIONS = ">=0.21,<0.22"


def _infers_neuron(original: Callable[[], str]) -> Callable[[], str]:
    @functools.wraps(original)
    def infer_device() -> str:
        device = original()
        return neuron_device.DEVICE if device == "cpu" and neuron_device.neuron_available() else device

    return infer_device


PATCHES: list[Patch] = [
    Patch(
        id="peft.infer-device-neuron",
        library="peft",
        module="peft.utils.other",
        attribute="infer_device",
        versions=VERSIONS,
        reason="peft/utils/other.py `infer_device()` knows cuda, mps, mlu, xpu and npu, else 'cpu': "
        "`PeftModel.from_pretrained()` / `load_adapter()` without `torch_device` load adapters on the CPU, next "
        "to a base model on neuron. The replacement answers 'neuron' where the original would answer 'cpu'.",
        replace=_infers_neuron,
        upstream_fix="`torch.accelerator.current_accelerator().type` as the last resort of `infer_device()`.",
    ),
]
