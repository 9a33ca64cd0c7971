"""transformers: detect ``neuron`` by device, list it, place pipelines on it, keep its RNG in Trainer checkpoints,
run MoE experts on it."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

from hf_neuron.backends import neuron_module
from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["PATCHES"]

VERSIONS = ">=5.24,<5.25"


def _lists_neuron(original: Callable[[], frozenset[str]]) -> Callable[[], frozenset[str]]:
    @functools.wraps(original)
    def get_available_devices() -> frozenset[str]:
        devices = original()
        return devices | {neuron_device.DEVICE} if neuron_device.neuron_available() else devices

    return get_available_devices


def _places_on_neuron(original: Callable[..., None]) -> Callable[..., None]:
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - replaces Pipeline.__init__
        bound = signature.bind(self, *args, **kwargs)
        device = bound.arguments.get("device")
        model = bound.arguments.get("model")
        if device is None and getattr(model, "hf_device_map", None) is None:
            current = getattr(model, "device", None)  # a model already on a neuron device stays there
            device = neuron_device.neuron_index(current) or 0
        if isinstance(device, int) and device >= 0 and neuron_device.neuron_is_accelerator():
            import torch

            bound.arguments["device"] = torch.device(neuron_device.DEVICE, device)
        original(*bound.args, **bound.kwargs)

    return __init__


def _rng_file(trainer: Any, directory: str) -> str:
    name = "rng_state.pth" if trainer.args.world_size <= 1 else f"rng_state_{trainer.args.process_index}.pth"
    return os.path.join(directory, name)


def _distributed(trainer: Any) -> bool:
    from transformers.training_args import ParallelMode

    return bool(trainer.args.parallel_mode == ParallelMode.DISTRIBUTED)


def _load_states(path: str) -> dict[str, Any]:
    import torch
    from transformers.trainer_pt_utils import safe_globals

    with safe_globals():
        return dict(torch.load(path, weights_only=True))


def _saves_neuron_rng(original: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    @functools.wraps(original)
    def _save_rng_state(self: Any, output_dir: str) -> None:
        original(self, output_dir)
        if neuron_device.neuron_available():
            import torch

            path = _rng_file(self, output_dir)
            states = _load_states(path)
            neuron = neuron_module()
            states[neuron_device.DEVICE] = neuron.get_rng_state_all() if _distributed(self) else neuron.get_rng_state()
            torch.save(states, path)

    return _save_rng_state


def _restores_neuron_rng(original: Callable[[Any, str | None], None]) -> Callable[[Any, str | None], None]:
    @functools.wraps(original)
    def _load_rng_state(self: Any, checkpoint: str | None) -> None:
        original(self, checkpoint)
        if checkpoint is None or not neuron_device.neuron_available():
            return
        if not os.path.isfile(_rng_file(self, checkpoint)):
            return

        state = _load_states(_rng_file(self, checkpoint)).get(neuron_device.DEVICE)
        if state is not None:
            (neuron_module().set_rng_state_all if _distributed(self) else neuron_module().set_rng_state)(state)

    return _load_rng_state


def _integer_histc_as_float() -> Any:
    """A torch-function mode computing ``torch.histc`` of an integer tensor on a float copy (the CPU has no integer
    histogram kernel; the result is the same for the small integers MoE routing counts)."""
    import torch
    from torch.overrides import TorchFunctionMode

    class IntegerHistcAsFloat(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
            if func is torch.histc and not args[0].is_floating_point():
                args = (args[0].float(), *args[1:])
            return func(*args, **(kwargs or {}))

    return IntegerHistcAsFloat()


def _experts_count_tokens_in_float(original: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    grouped = original["grouped_mm"]

    @functools.wraps(grouped)
    def grouped_mm_experts_forward(self: Any, hidden_states: Any, *args: Any, **kwargs: Any) -> Any:
        if hidden_states.device.type != neuron_device.DEVICE:
            return grouped(self, hidden_states, *args, **kwargs)
        with _integer_histc_as_float():
            return grouped(self, hidden_states, *args, **kwargs)

    return {**original, "grouped_mm": grouped_mm_experts_forward}


PATCHES: list[Patch] = [
    Patch(
        id="transformers.detect-neuron-by-device",
        library="transformers",
        module="transformers.utils.import_utils",
        attribute="is_torch_neuron_available",
        versions=VERSIONS,
        reason="transformers/utils/import_utils.py `is_torch_neuron_available()` answers False unless a package "
        "named `torch_neuronx` is importable, and is `lru_cache`d; `TrainingArguments` (device `neuron:0`, "
        "`torch_compile_backend='neuron'`) and `is_torch_bf16_gpu_available()` rely on it. The replacement asks "
        "torch, caches only True and keeps the dynamo constant marker.",
        replace=neuron_device.detection,
        upstream_fix="Test the registered PrivateUse1 backend name (or `torch.accelerator`) instead of the package.",
    ),
    Patch(
        id="transformers.available-devices-include-neuron",
        library="transformers",
        module="transformers.utils",
        attribute="get_available_devices",
        versions=VERSIONS,
        reason="transformers/utils/__init__.py `get_available_devices()` lists cuda, mps, xpu, npu, hpu, mlu, "
        "musa and supa but never neuron (read by the bitsandbytes integration and continuous batching).",
        replace=_lists_neuron,
        upstream_fix="Add `if is_torch_neuron_available(): devices.add('neuron')`.",
    ),
    Patch(
        id="transformers.pipeline-places-on-neuron",
        library="transformers",
        module="transformers.pipelines.base",
        attribute="Pipeline.__init__",
        versions=VERSIONS,
        reason="transformers/pipelines/base.py `Pipeline.__init__` turns `device=None` into 0 and maps an index "
        "to mlu, musa, cuda, npu, hpu, xpu or mps, else the CPU: on neuron a pipeline runs on the CPU and moves a "
        "model already on neuron back to it. When neuron is torch's accelerator, the replacement passes "
        "`neuron:<index>` for an index, and for `None` the model's neuron device or `neuron:0` (a model "
        "dispatched with a `device_map` keeps its placement).",
        replace=_places_on_neuron,
        upstream_fix="An `elif is_torch_neuron_available(): torch.device(f'neuron:{device}')` branch, or "
        "`torch.accelerator.current_accelerator()` for any index.",
    ),
    Patch(
        id="transformers.trainer-saves-neuron-rng",
        library="transformers",
        module="transformers.trainer",
        attribute="Trainer._save_rng_state",
        versions=VERSIONS,
        reason="transformers/trainer.py `Trainer._save_rng_state()` saves the RNG state of cuda, xla, npu, hpu, "
        "mlu and musa but not neuron, so a resumed run draws different dropout masks. The replacement adds "
        "`torch.neuron.get_rng_state()` (`_all` when distributed) under the key 'neuron'.",
        replace=_saves_neuron_rng,
        upstream_fix="A neuron branch in `_save_rng_state()`.",
    ),
    Patch(
        id="transformers.trainer-restores-neuron-rng",
        library="transformers",
        module="transformers.trainer",
        attribute="Trainer._load_rng_state",
        versions=VERSIONS,
        reason="transformers/trainer.py `Trainer._load_rng_state()` restores no neuron RNG state. The replacement "
        "restores the 'neuron' entry written by `transformers.trainer-saves-neuron-rng`.",
        replace=_restores_neuron_rng,
        upstream_fix="A neuron branch in `_load_rng_state()` (`set_rng_state_for_device('NEURON', ...)`).",
    ),
    Patch(
        id="transformers.moe-experts-run-on-neuron",
        library="transformers",
        module="transformers.integrations.moe",
        attribute="ExpertsInterface._global_mapping",
        versions=VERSIONS,
        reason="transformers/integrations/moe.py `grouped_mm_experts_forward()`, the default experts implementation "
        "of every MoE model, counts tokens per expert with `torch.histc` on an int tensor on every device but cpu "
        "and mps; `histc` has no integer CPU kernel, which is where neuron runs it (the reference device, and the "
        "real one when the op falls back), so every MoE forward fails with \"histogram_cpu\" not implemented for "
        "'Int'. The replacement maps 'grouped_mm' to a wrapper that, on neuron only, computes that histogram on a "
        "float copy as the cpu branch does. Models look the implementation up in this class-level mapping at call "
        "time, so replacing the mapping reaches every MoE model.",
        replace=_experts_count_tokens_in_float,
        upstream_fix="`expert_ids_g.int() if device.type == 'cuda' else expert_ids_g.float()`: only CUDA needs the "
        "integer input.",
    ),
]
