"""The catalog's CPU check of a diffusers backbone: its tiny model builds, and one denoiser call on its generic inputs
gives a finite prediction. Never raises."""

from __future__ import annotations

import time

from hf_neuron.tiny.groups import CpuCheck
from hf_neuron.tiny.transformers.cpu_check import describe

__all__ = ["check_diffusion_backbone"]


def check_diffusion_backbone(name: str) -> CpuCheck:
    """Build the tiny ``name`` backbone and call it once on its generic inputs (a finite prediction)."""
    import torch

    from hf_neuron.tiny.diffusion.backbones import build_backbone
    from hf_neuron.tiny.diffusion.inputs import denoise, forward_inputs

    start = time.perf_counter()
    stage, parameters = "build", 0
    try:
        model = build_backbone(name)
        parameters = sum(p.numel() for p in model.parameters())
        stage = "forward"
        prediction = denoise(model, forward_inputs(model))
        if not torch.isfinite(prediction).all():
            raise AssertionError("the prediction is not finite")
    except Exception as error:  # noqa: BLE001 - a check reports, it does not raise
        return CpuCheck(name, stage, describe(error), parameters, time.perf_counter() - start)
    return CpuCheck(name, "ok", None, parameters, time.perf_counter() - start)
