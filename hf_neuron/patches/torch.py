"""torch: integer histograms on neuron (the router of every mixture-of-experts model counts tokens with them)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["PATCHES"]

VERSIONS = ">=2.13,<2.15"


def _integer_histc_on_neuron(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def histc(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - torch.histc's own parameter name
        on_neuron = input.device.type == neuron_device.DEVICE and not input.is_floating_point()
        # a float copy is exact for the integers a histogram counts (below 2**24)
        return original(input.float() if on_neuron else input, *args, **kwargs)

    return histc


PATCHES: list[Patch] = [
    Patch(
        id="torch.integer-histc-on-neuron",
        library="torch",
        module="torch",
        attribute="histc",
        versions=VERSIONS,
        reason="transformers counts tokens per expert with `torch.histc` on an int32 tensor on every device but "
        "cpu and mps: in `grouped_mm_experts_forward()` (transformers/integrations/moe.py, the default experts of "
        "every MoE model) and in the `load_balancing_loss_func()` of every MoE model (the router's auxiliary loss, "
        "computed with `output_router_logits=True`, the usual setting for fine-tuning). `histc` has no integer CPU "
        "kernel, which is where neuron runs it (the reference device, and the real one when the op falls back), so "
        "MoE forward and training fail on neuron with \"histogram_cpu\" not implemented for 'Int'. On a neuron "
        "tensor of integers the replacement computes the histogram of a float copy, as the cpu branch does; every "
        "caller is covered, however it reached `torch.histc`.",
        replace=_integer_histc_on_neuron,
        upstream_fix="transformers: `expert_ids.int() if device.type == 'cuda' else expert_ids.float()` (only CUDA "
        "needs the integer input); or an integer histogram kernel on the CPU in torch.",
        reference_device_gap=True,  # Trainium may compute integer histograms natively
    ),
]
