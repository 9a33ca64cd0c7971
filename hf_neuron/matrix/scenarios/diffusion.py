"""The scenarios of diffusion backbones: ``forward`` (one denoiser call) and ``generate`` (a two-step pipeline).

The tiny backbone is loaded from the case's checkpoint the way users load one
(``<Class>.from_pretrained(checkpoint)``, then ``.to(device)``); its inputs and the pipeline's noise are drawn on the
CPU from the case's seed, so the device and the CPU compute the same thing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hf_neuron.compat.tiny_diffusion import recipe
from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult, compare
from hf_neuron.tiny.diffusion.backbones import backbone_class
from hf_neuron.tiny.diffusion.inputs import denoise, forward_inputs
from hf_neuron.tiny.diffusion.pipelines import build_pipeline, run_pipeline

if TYPE_CHECKING:
    import torch

__all__ = ["forward", "generate"]


def _load(ctx: CaseContext, device: str) -> torch.nn.Module:
    model: torch.nn.Module = backbone_class(ctx.model_type).from_pretrained(ctx.checkpoint)  # type: ignore[attr-defined]
    return model.to(device).eval()


def _on(value: object, device: str) -> object:
    """``value`` with its tensors (also inside a dict) on ``device``."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {key: _on(item, device) for key, item in value.items()}
    return value


def forward(ctx: CaseContext) -> ScenarioResult:
    """One denoiser call on the device predicts what the CPU's does, within the float32 tolerance."""
    reference = _load(ctx, "cpu")
    inputs = forward_inputs(reference, seed=ctx.seed)
    model = _load(ctx, ctx.device)
    actual = denoise(model, {name: _on(value, ctx.device) for name, value in inputs.items()})
    return compare(actual, denoise(reference, inputs), "denoiser output", device=ctx.device)


def generate(ctx: CaseContext) -> ScenarioResult:
    """A two-step pipeline run on the device (backbone, text encoders, VAE) makes the CPU's images."""
    backbone_recipe = recipe(ctx.model_type)
    if backbone_recipe.pipeline is None:
        return ScenarioResult.untested(f"compat/tiny_diffusion.toml has no pipeline recipe for {ctx.model_type}",
                                       "pipeline-recipe")
    expected = run_pipeline(build_pipeline(_load(ctx, "cpu"), backbone_recipe, seed=ctx.seed), backbone_recipe,
                            seed=ctx.seed)
    pipeline = build_pipeline(_load(ctx, "cpu"), backbone_recipe, seed=ctx.seed).to(ctx.device)
    if pipeline.device.type != ctx.device.split(":")[0]:
        return ScenarioResult.failed(f"the pipeline runs on {pipeline.device}, not on {ctx.device}")
    return compare(run_pipeline(pipeline, backbone_recipe, seed=ctx.seed), expected, "images")
