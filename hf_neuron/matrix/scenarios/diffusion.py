"""The scenarios of diffusion backbones: ``load`` (``from_pretrained`` with a device map), ``forward`` (one denoiser
call), ``generate`` (a two-step pipeline) and ``train`` (denoising-loss AdamW steps), declared in
:mod:`~hf_neuron.matrix.scenarios.builtin`.

The tiny backbone is loaded from the case's checkpoint the way users load one
(``<Class>.from_pretrained(checkpoint)``, then ``.to(device)``); its inputs and the pipeline's noise are drawn on the
CPU from the case's seed, so the device and the CPU compute the same thing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hf_neuron.compat.tiny_diffusion import presets, recipe
from hf_neuron.matrix.scenarios.contract import EXACT, CaseContext, ScenarioResult, compare, compare_named
from hf_neuron.tiny.diffusion.backbones import backbone_class
from hf_neuron.tiny.diffusion.inputs import denoise, forward_inputs, predict
from hf_neuron.tiny.diffusion.pipelines import build_pipeline, run_pipeline, shipped_pipelines

if TYPE_CHECKING:
    import torch

__all__ = ["forward", "generate", "load", "train"]


def _load(ctx: CaseContext, device: str) -> torch.nn.Module:
    model: torch.nn.Module = backbone_class(ctx.model_type).from_pretrained(ctx.checkpoint)  # type: ignore[attr-defined]
    return model.to(device).eval()


def _tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def load(ctx: CaseContext) -> ScenarioResult:
    """``<Class>.from_pretrained(checkpoint, device_map=device)`` puts every parameter and buffer on the device,
    holding exactly the values a CPU load holds."""
    cls = backbone_class(ctx.model_type)
    model = cls.from_pretrained(ctx.checkpoint, device_map=ctx.device)  # type: ignore[attr-defined]
    tensors = _tensors(model)
    wanted = ctx.device.split(":")[0]
    elsewhere = [f"{name} ({tensor.device})" for name, tensor in tensors.items() if tensor.device.type != wanted]
    if elsewhere:
        return ScenarioResult.failed(f"{len(elsewhere)} of {len(tensors)} tensors not on {ctx.device} after "
                                     f"from_pretrained(device_map={ctx.device!r}): {', '.join(elsewhere[:5])}")
    reference = cls.from_pretrained(ctx.checkpoint)  # type: ignore[attr-defined]
    return compare_named(tensors, _tensors(reference), "tensor", EXACT, device=ctx.device)


def _on(value: object, device: str) -> object:
    """``value`` with its tensors (also inside dicts, lists and tuples) on ``device``."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {key: _on(item, device) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_on(item, device) for item in value)
    return value


def forward(ctx: CaseContext) -> ScenarioResult:
    """One denoiser call on the device predicts what the CPU's does, within the float32 tolerance."""
    reference = _load(ctx, "cpu")
    inputs = forward_inputs(reference, seed=ctx.seed)
    model = _load(ctx, ctx.device)
    actual = denoise(model, {name: _on(value, ctx.device) for name, value in inputs.items()})
    return compare(actual, denoise(reference, inputs), "denoiser output", device=ctx.device)


def generate(ctx: CaseContext) -> ScenarioResult:
    """A two-step pipeline run on the device (backbone, text encoders, VAE) makes the CPU's images, video frames or
    audio; not applicable where diffusers ships no pipeline for the backbone."""
    backbone_recipe = recipe(ctx.model_type)
    if backbone_recipe.pipeline_gap is not None:
        return ScenarioResult.untested(backbone_recipe.pipeline_gap, "pipeline-recipe")
    if backbone_recipe.pipeline is None:
        shipped = shipped_pipelines(ctx.model_type)
        if not shipped:
            import diffusers

            return ScenarioResult.skipped(f"diffusers {diffusers.__version__} ships no pipeline for {ctx.model_type}")
        return ScenarioResult.untested(f"compat/tiny_diffusion.toml has no pipeline recipe for {ctx.model_type} "
                                       f"(diffusers ships {', '.join(shipped)})", "pipeline-recipe")
    expected = run_pipeline(build_pipeline(_load(ctx, "cpu"), backbone_recipe, seed=ctx.seed, presets=presets()),
                            backbone_recipe, seed=ctx.seed)
    pipeline = build_pipeline(_load(ctx, "cpu"), backbone_recipe, seed=ctx.seed, presets=presets()).to(ctx.device)
    if pipeline.device.type != ctx.device.split(":")[0]:
        return ScenarioResult.failed(f"the pipeline runs on {pipeline.device}, not on {ctx.device}")
    return compare_named(run_pipeline(pipeline, backbone_recipe, seed=ctx.seed), expected, "pipeline")


def _loss(model: torch.nn.Module, inputs: dict[str, object], seed: int) -> torch.Tensor:
    """The denoising loss of one call: the mean squared error of the prediction against a fixed target drawn from
    ``seed`` on the CPU (the noise or velocity a training step regresses to)."""
    import torch

    prediction = predict(model, inputs)
    target = torch.randn(prediction.shape, generator=torch.Generator().manual_seed(seed + 1)).to(prediction.device)
    return torch.nn.functional.mse_loss(prediction.float(), target)


def _step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, inputs: dict[str, object], seed: int
          ) -> torch.Tensor:
    import torch

    torch.manual_seed(seed)
    optimizer.zero_grad(set_to_none=True)
    loss = _loss(model, inputs, seed)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _trained(ctx: CaseContext, device: str) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    import torch

    from hf_neuron.matrix.scenarios.training import LEARNING_RATE

    model = _load(ctx, device).train()
    return model, torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, foreach=False)


def train(ctx: CaseContext) -> ScenarioResult:
    """One AdamW step on the denoising loss matches the CPU's (loss, every gradient, every updated weight); further
    steps on the device lower the loss."""
    from hf_neuron.matrix.scenarios.training import LEARNING_RATE, STEPS

    reference, reference_optimizer = _trained(ctx, "cpu")
    model, optimizer = _trained(ctx, ctx.device)
    inputs = forward_inputs(reference, seed=ctx.seed)
    on_device = {name: _on(value, ctx.device) for name, value in inputs.items()}
    loss = _step(model, optimizer, on_device, ctx.seed)
    expected = _step(reference, reference_optimizer, inputs, ctx.seed)
    gradients = compare_named({n: p.grad for n, p in model.named_parameters() if p.grad is not None},
                              {n: p.grad for n, p in reference.named_parameters() if p.grad is not None},
                              "gradient of", device=ctx.device)
    for result in (compare(loss, expected, "loss", device=ctx.device), gradients,
                   compare_named({n: p.detach() for n, p in model.named_parameters()},
                                 {n: p.detach() for n, p in reference.named_parameters()},
                                 "weight after one AdamW step", device=ctx.device)):
        if result.outcome != "passed":
            return result
    losses = [float(_step(model, optimizer, on_device, ctx.seed)) for _ in range(STEPS)]
    if not losses[-1] < losses[0]:
        return ScenarioResult.failed(f"the denoising loss did not go down over {STEPS} AdamW steps (lr "
                                     f"{LEARNING_RATE:g}): {', '.join(f'{value:.6g}' for value in losses)}")
    return gradients
