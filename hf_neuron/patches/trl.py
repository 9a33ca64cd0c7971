"""trl: load models on the process's neuron device, and name that device when computing peak FLOPs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hf_neuron.backends import neuron_module
from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["PATCHES"]

VERSIONS = ">=1.16,<1.17"


def _names_neuron(original: Callable[[Any, str], float | None]) -> Callable[[Any, str], float | None]:
    @functools.wraps(original)
    def get_peak_flops_per_device(accelerator: Any, dtype: str) -> float | None:
        device = accelerator.device
        if device.type != neuron_device.DEVICE:
            return original(accelerator, dtype)
        from trl.trainer.utils import get_peak_flops

        index = device.index if device.index is not None else neuron_module().current_device()
        return get_peak_flops(neuron_module().get_device_properties(index).name, dtype)

    return get_peak_flops_per_device


def _loads_on_the_process_device(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def create_model_from_path(model_id: str, architecture: Any = None, **kwargs: Any) -> Any:
        if "device_map" not in kwargs and neuron_device.neuron_available():
            from accelerate import PartialState

            if PartialState().device.type == neuron_device.DEVICE:
                kwargs["device_map"] = None  # the Trainer moves the model to the process's device
        return original(model_id, architecture, **kwargs)

    return create_model_from_path


PATCHES: list[Patch] = [
    Patch(
        id="trl.loads-model-on-the-process-device",
        library="trl",
        module="trl.trainer.utils",
        attribute="create_model_from_path",
        versions=VERSIONS,
        reason="trl/trainer/utils.py `create_model_from_path()` loads with `device_map='auto'` on any device but "
        "cpu and mps, and the trainers reset that only for MULTI_GPU and DEEPSPEED. Every neuron process sees "
        "all the NeuronCores of the instance, so 'auto' splits the model across them in each process, and the "
        "split model fails in `SFTTrainer.compute_loss` (\"Expected all tensors to be on the same device, ... "
        "neuron:1 and neuron:0\"). On neuron, unless the caller chose a `device_map`, the replacement loads with "
        "`device_map=None` and the Trainer places the model on the process's device.",
        replace=_loads_on_the_process_device,
        upstream_fix="Keep 'auto' for single-device processes only (e.g. `{'': PartialState().device}` on "
        "accelerators whose processes see every device, like neuron).",
    ),
    Patch(
        id="trl.peak-flops-by-device",
        library="trl",
        module="trl.trainer.utils",
        attribute="get_peak_flops_per_device",
        versions=VERSIONS,
        reason="trl/trainer/utils.py `get_peak_flops_per_device()` asks `torch.cuda.get_device_name()` whatever "
        "the device, which raises on neuron (the async GRPO and distillation trainers call it). On neuron the "
        "replacement looks up `torch.neuron.get_device_properties(i).name`.",
        replace=_names_neuron,
        upstream_fix="Use `torch.get_device_module(device).get_device_properties(device).name`.",
    ),
]
