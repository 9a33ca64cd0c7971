"""The catalog's CPU check of a diffusers backbone: its tiny model builds, and one denoiser call on its generic inputs
gives a finite prediction. Never raises."""

from __future__ import annotations

from hf_neuron.tiny.groups import CpuCheck
from hf_neuron.tiny.transformers.cpu_check import CheckProgress, staged_check

__all__ = ["check_diffusion_backbone"]


def check_diffusion_backbone(name: str) -> CpuCheck:
    """Build the tiny ``name`` backbone and call it once on its generic inputs (a finite prediction)."""
    import torch

    from hf_neuron.tiny.diffusion.backbones import build_backbone
    from hf_neuron.tiny.diffusion.inputs import denoise, forward_inputs

    def body(progress: CheckProgress) -> None:
        model = build_backbone(name)
        progress.parameters = sum(p.numel() for p in model.parameters())
        progress.stage = "forward"
        prediction = denoise(model, forward_inputs(model))
        if not torch.isfinite(prediction).all():
            raise AssertionError("the prediction is not finite")

    return staged_check(name, body, first="build")
