"""The scenarios of diffusion backbones: ``load`` (``from_pretrained`` with a device map), ``forward`` (one denoiser
call), ``generate`` (a two-step pipeline), ``train`` (denoising-loss AdamW steps), ``lora`` (the same steps on a PEFT
adapter of the attention projections), ``bf16``, ``compile`` and ``save`` (one denoiser call in bfloat16, compiled,
and after a save and reload), ``ddp`` (a two-rank DDP step on the denoising loss, through
:mod:`~hf_neuron.matrix.scenarios.ddp` with :data:`DDP_PARTS`) and ``tp`` (the denoiser sharded by diffusers'
tensor parallelism on two ranks), declared in :mod:`~hf_neuron.matrix.scenarios.builtin`.

The tiny backbone is loaded from the case's checkpoint the way users load one
(``<Class>.from_pretrained(checkpoint)``, then ``.to(device)``); its inputs and the pipeline's noise are drawn on the
CPU from the case's seed, so the device and the CPU compute the same thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hf_neuron.compat.tiny_diffusion import presets, recipe
from hf_neuron.matrix.case.observe import device_graphs, fresh_dynamo
from hf_neuron.matrix.scenarios.contract import (
    EXACT,
    CaseContext,
    ScenarioResult,
    as_accurate,
    beyond_tolerance,
    compare,
    compare_named,
    worst_of,
)
from hf_neuron.matrix.scenarios.ddp import WORLD, data_parallel, fewer_devices, on_ranks, rank_context
from hf_neuron.matrix.scenarios.rounding import judged_with_rounding, round_weights
from hf_neuron.tiny import UnbuildableInputError
from hf_neuron.tiny.diffusion.backbones import BATCH, backbone_class
from hf_neuron.tiny.diffusion.inputs import denoise, forward_inputs, predict
from hf_neuron.tiny.diffusion.pipelines import build_pipeline, run_pipeline, shipped_pipelines, unmet_requirement
from hf_neuron.vocabulary.records import DEVICE_STEPS

if TYPE_CHECKING:
    from collections.abc import Callable

    import torch

__all__ = ["ATTENTION_PROJECTIONS", "DDP_PARTS", "backward", "batch_of", "batched", "bf16", "compile_forward", "ddp",
           "forward",
           "generate", "load", "lora", "lora_targets", "rows", "save", "tensor_parallel", "tp", "tp_plan",
           "tp_rank_step", "train"]


#: The attention projections ``lora`` adapts, by the module names diffusers gives them (its LoRA training examples'
#: ``target_modules``): those a backbone has are targeted.
ATTENTION_PROJECTIONS = ("to_q", "to_k", "to_v", "to_out.0")
#: The names :func:`forward` and the training step's judgement give the denoiser's output and the loss.
OUTPUT, LOSS = "output", "loss"


def _load(ctx: CaseContext, device: str, **kwargs: Any) -> torch.nn.Module:
    cls = backbone_class(ctx.model_type)
    model: torch.nn.Module = cls.from_pretrained(ctx.checkpoint, **kwargs)  # type: ignore[attr-defined]
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
    """One denoiser call on the device predicts what the CPU's does, within the float32 tolerance (widened by the
    call's own rounding noise where it fails it: :mod:`~hf_neuron.matrix.scenarios.rounding`)."""
    reference = _load(ctx, "cpu")
    inputs = forward_inputs(reference, seed=ctx.seed)
    model = _load(ctx, ctx.device)
    actual = denoise(model, {name: _on(value, ctx.device) for name, value in inputs.items()})
    expected = denoise(reference, inputs)

    def rounded(seed: int) -> dict[str, torch.Tensor]:
        again = _load(ctx, "cpu")
        round_weights([again], seed)
        return {OUTPUT: denoise(again, inputs)}

    return judged_with_rounding(
        compare(actual, expected, "denoiser output", device=ctx.device), {OUTPUT: expected}, rounded,
        lambda tolerances: compare(actual, expected, "denoiser output", tolerances[OUTPUT], device=ctx.device),
        ctx.seed)


def generate(ctx: CaseContext) -> ScenarioResult:
    """A two-step pipeline run on the device (backbone, text encoders, VAE) makes the CPU's images, video frames or
    audio; not applicable where diffusers ships no pipeline for the backbone, nor to a checkpoint's slice (a
    real-width pipeline needs the checkpoint's own text encoders and VAE)."""
    if ctx.slice_request is not None:
        return ScenarioResult.skipped("a checkpoint's real-width pipeline needs its own text encoders and VAE: its "
                                      "slice is tested as the denoiser (forward, backward, compile)")
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
    if (unmet := unmet_requirement(backbone_recipe)) is not None:
        return ScenarioResult.untested(unmet, "pipeline-recipe")

    def on_cpu(rounding: int | None = None) -> dict[str, torch.Tensor]:
        pipeline = build_pipeline(_load(ctx, "cpu"), backbone_recipe, seed=ctx.seed, presets=presets())
        if rounding is not None:
            round_weights(_modules(pipeline), rounding)
        return run_pipeline(pipeline, backbone_recipe, seed=ctx.seed)

    expected = on_cpu()
    pipeline = build_pipeline(_load(ctx, "cpu"), backbone_recipe, seed=ctx.seed, presets=presets()).to(ctx.device)
    if pipeline.device.type != ctx.device.split(":")[0]:
        return ScenarioResult.failed(f"the pipeline runs on {pipeline.device}, not on {ctx.device}")
    actual = run_pipeline(pipeline, backbone_recipe, seed=ctx.seed)
    return judged_with_rounding(
        compare_named(actual, expected, "pipeline"), expected, on_cpu,
        lambda tolerances: compare_named(actual, expected, "pipeline", tolerances=tolerances), ctx.seed)


def _modules(pipeline: Any) -> list[torch.nn.Module]:
    """The pipeline's components that are modules (denoiser, text encoders, VAE, ...)."""
    import torch

    return [component for component in pipeline.components.values() if isinstance(component, torch.nn.Module)]


def _target(shape: torch.Size, seed: int) -> torch.Tensor:
    """The fixed target of a denoising loss (the noise or velocity a training step regresses to), drawn from ``seed``
    on the CPU."""
    import torch

    return torch.randn(shape, generator=torch.Generator().manual_seed(seed + 1))


def _loss(model: torch.nn.Module, inputs: dict[str, object], seed: int) -> torch.Tensor:
    """The denoising loss of one call: the mean squared error of the prediction against :func:`_target`."""
    import torch

    prediction = predict(model, inputs)
    return torch.nn.functional.mse_loss(prediction.float(), _target(prediction.shape, seed).to(prediction.device))


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
    from hf_neuron.matrix.scenarios.training import adamw

    model = _load(ctx, device).train()
    return model, adamw(model)


def _first_step(ctx: CaseContext, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                reference: torch.nn.Module, reference_optimizer: torch.optim.Optimizer, inputs: dict[str, object]
                ) -> ScenarioResult:
    """One AdamW step on ``model`` (on the device) against ``reference`` (CPU) on the denoising loss: the training
    scenarios' :func:`~hf_neuron.matrix.scenarios.training.first_step_parity`."""
    import copy

    from hf_neuron.matrix.scenarios.training import adamw, first_step_parity, gradients

    initial = copy.deepcopy(reference)
    on_device = {name: _on(value, ctx.device) for name, value in inputs.items()}
    loss = _step(model, optimizer, on_device, ctx.seed)
    expected = _step(reference, reference_optimizer, inputs, ctx.seed)

    def rounded(seed: int) -> dict[str, torch.Tensor]:
        again = copy.deepcopy(initial)
        round_weights([again], seed)
        return {LOSS: _step(again, adamw(again), inputs, ctx.seed), **gradients(again)}

    result = judged_with_rounding(
        first_step_parity(model, reference, loss, expected, ctx.device), {LOSS: expected, **gradients(reference)},
        rounded, lambda tolerances: first_step_parity(model, reference, loss, expected, ctx.device, tolerances),
        ctx.seed)
    return result if result.outcome == "passed" else result.adding_details({DEVICE_STEPS: 1})


def _loss_goes_down(ctx: CaseContext, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    inputs: dict[str, object], parity: ScenarioResult) -> ScenarioResult:
    """``parity`` (the first step's, passed) when further steps on the device lower the loss, else failed; with the
    steps the case ran on the device."""
    from hf_neuron.matrix.scenarios.training import LEARNING_RATE, STEPS

    on_device = {name: _on(value, ctx.device) for name, value in inputs.items()}
    losses = [float(_step(model, optimizer, on_device, ctx.seed)) for _ in range(STEPS)]
    if not losses[-1] < losses[0]:
        parity = ScenarioResult.failed(f"the denoising loss did not go down over {STEPS} AdamW steps (lr "
                                       f"{LEARNING_RATE:g}): {', '.join(f'{value:.6g}' for value in losses)}")
    return parity.adding_details({DEVICE_STEPS: 1 + STEPS})


def train(ctx: CaseContext) -> ScenarioResult:
    """One AdamW step on the denoising loss matches the CPU's (loss, every gradient, every updated weight); further
    steps on the device lower the loss."""
    reference, reference_optimizer = _trained(ctx, "cpu")
    model, optimizer = _trained(ctx, ctx.device)
    inputs = forward_inputs(reference, seed=ctx.seed)
    parity = _first_step(ctx, model, optimizer, reference, reference_optimizer, inputs)
    if parity.outcome != "passed":
        return parity
    return _loss_goes_down(ctx, model, optimizer, inputs, parity)


def lora_targets(model: torch.nn.Module) -> list[str]:
    """The :data:`ATTENTION_PROJECTIONS` ``model`` has as linear layers (a module name ending in one), in that
    order."""
    import torch

    linear = [name for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)]
    return [target for target in ATTENTION_PROJECTIONS
            if any(name == target or name.endswith(f".{target}") for name in linear)]


def _with_lora(model: torch.nn.Module, targets: list[str]) -> torch.nn.Module:
    """``model`` frozen, with a LoRA adapter on ``targets`` through diffusers' adapter API (``add_adapter``, as
    diffusers' LoRA training examples add one)."""
    from peft import LoraConfig

    from hf_neuron.matrix.scenarios.training import LORA_RANK

    model.requires_grad_(False)
    config = LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, lora_dropout=0.0, init_lora_weights="gaussian",
                        target_modules=targets)
    model.add_adapter(config)  # type: ignore[operator]
    return model


def lora(ctx: CaseContext) -> ScenarioResult:
    """A LoRA adapter on the attention projections, added on the device, trains like the CPU's on the denoising loss
    (loss, gradients, updated adapter weights); only adapter weights change; further steps lower the loss. A backbone
    without such projections is untested (gap ``lora-targets``); one whose class has no ``add_adapter`` (diffusers
    gives it no adapter API) is not applicable.

    The device's adapter starts from the CPU's initial adapter weights (their initialization is random)."""
    import torch

    from hf_neuron.matrix.scenarios.training import adamw, adapter_outside, adapter_step_changes, start_adapter_as

    torch.manual_seed(ctx.seed)
    base = _load(ctx, "cpu").train()
    if not callable(getattr(base, "add_adapter", None)):
        return ScenarioResult.skipped(f"diffusers gives {ctx.model_type} no adapter API (it is no PeftAdapterMixin): "
                                      "LoRA through add_adapter does not apply to it")
    targets = lora_targets(base)
    if not targets:
        return ScenarioResult.untested(f"{ctx.model_type} has no linear attention projection named "
                                       f"{', '.join(ATTENTION_PROJECTIONS)} for a LoRA adapter", "lora-targets")
    try:
        reference = _with_lora(base, targets)
    except ValueError as refusal:  # PEFT refuses a target module, on the CPU model
        first_line = (str(refusal).strip().splitlines() or [""])[0]
        return ScenarioResult.untested(f"PEFT refuses a LoRA adapter on {', '.join(targets)}: {first_line}",
                                       "lora-targets")
    model = _with_lora(_load(ctx, ctx.device).train(), targets)
    start_adapter_as(model, reference)
    if (outside := adapter_outside(model)) is not None:
        return outside
    inputs = forward_inputs(reference, seed=ctx.seed)
    before = {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters()}
    optimizer = adamw(model)
    parity = _first_step(ctx, model, optimizer, reference, adamw(reference), inputs)
    if parity.outcome != "passed":
        return parity
    if (changes := adapter_step_changes(before, model)) is not None:
        return changes.adding_details({DEVICE_STEPS: 1})
    return _loss_goes_down(ctx, model, optimizer, inputs, parity)


def _in_dtype(value: object, dtype: torch.dtype, source: torch.dtype | None = None) -> object:
    """``value`` with its ``source`` tensors (default float32; also inside dicts, lists and tuples) in ``dtype``, as a
    pipeline hands a backbone of that dtype its latents, text states and timesteps; integer and complex tensors as
    they are."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.dtype == (source or torch.float32) else value
    if isinstance(value, dict):
        return {key: _in_dtype(item, dtype, source) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_in_dtype(item, dtype, source) for item in value)
    return value


def bf16(ctx: CaseContext) -> ScenarioResult:
    """The backbone loaded in bfloat16 (``torch_dtype=torch.bfloat16``), its float inputs in bfloat16: one denoiser
    call on the device predicts the CPU's, in the CPU's dtype (bfloat16, or what the backbone upcasts it to), within
    the bfloat16 tolerance, or where it goes beyond it, as accurately as the CPU's against the float32 backbone's
    prediction of the same inputs (:func:`~hf_neuron.matrix.scenarios.contract.as_accurate`)."""
    import torch

    reference = _load(ctx, "cpu", torch_dtype=torch.bfloat16)
    inputs = _in_dtype(forward_inputs(reference, seed=ctx.seed), torch.bfloat16)
    assert isinstance(inputs, dict)
    model = _load(ctx, ctx.device, torch_dtype=torch.bfloat16)
    actual = denoise(model, {name: _on(value, ctx.device) for name, value in inputs.items()})
    expected = denoise(reference, inputs)
    if actual.dtype != expected.dtype:  # a backbone may upcast its prediction by design: the CPU's says so
        return ScenarioResult.failed(f"the bfloat16 backbone predicted in {actual.dtype} on the device, the CPU's in "
                                     f"{expected.dtype}")
    result = compare(actual, expected, "bfloat16 denoiser output", ctx.tolerance("bfloat16"), device=ctx.device)
    if not beyond_tolerance(result):
        return result
    exact_inputs = _in_dtype(inputs, torch.float32, torch.bfloat16)  # the same (rounded) inputs, in float32
    assert isinstance(exact_inputs, dict)
    exact = denoise(_load(ctx, "cpu"), exact_inputs)
    return as_accurate(actual, expected, exact, "bfloat16 denoiser output")


def compile_forward(ctx: CaseContext) -> ScenarioResult:
    """``torch.compile(model, backend=<the device's>)`` (``neuron`` on a neuron device) predicts what the eager
    backbone does on the same device, with at least one graph compiled for it; the case's observer records the graphs
    and graph breaks."""
    import torch

    from hf_neuron.matrix.scenarios.text import compile_backend, graphs_compiled, nothing_compiled

    fresh_dynamo()
    model = _load(ctx, ctx.device)
    inputs = {name: _on(value, ctx.device) for name, value in forward_inputs(model, seed=ctx.seed).items()}
    eager = denoise(model, inputs)
    compiled = torch.compile(model, backend=compile_backend(ctx.device), dynamic=False)
    before = device_graphs()
    result = compare(denoise(compiled, inputs), eager, "compiled denoiser output",  # type: ignore[arg-type]
                     reference="eager's", device=ctx.device)
    return graphs_compiled(result, device_graphs() - before, nothing_compiled("the denoiser"))


def save(ctx: CaseContext) -> ScenarioResult:
    """``save_pretrained`` from the device, ``<Class>.from_pretrained(saved, device_map=device)`` back onto it: exactly
    the saved model's prediction, and the CPU's within tolerance."""
    reference = _load(ctx, "cpu")
    inputs = forward_inputs(reference, seed=ctx.seed)
    model = _load(ctx, ctx.device)
    on_device = {name: _on(value, ctx.device) for name, value in inputs.items()}
    expected = denoise(model, on_device)
    with ctx.scratch() as directory:
        model.save_pretrained(directory)  # type: ignore[operator]
        reloaded = type(model).from_pretrained(directory, device_map=ctx.device)  # type: ignore[attr-defined]
        actual = denoise(reloaded.eval(), on_device)
    same = compare(actual, expected, "denoiser output after save and reload", EXACT, reference="the saved model's",
                   device=ctx.device)
    if same.outcome != "passed":
        return same
    return compare(actual, denoise(reference, inputs), "denoiser output after save and reload",
                   device=ctx.device)


def batched(value: object, probe: object) -> object:
    """Which parts of a backbone's inputs ``value`` hold the batch, by ``probe``, the same inputs built for another
    batch size: a tensor whose leading size, or a list or tuple whose length, differs between them (True, or False);
    a dict or a list of the same length, part by part; anything else False."""
    import torch

    if isinstance(value, torch.Tensor):
        return (isinstance(probe, torch.Tensor) and value.dim() > 0 and probe.dim() > 0
                and value.shape[0] != probe.shape[0])
    if isinstance(value, dict) and isinstance(probe, dict):
        return {key: batched(item, probe.get(key)) for key, item in value.items()}
    if isinstance(value, (list, tuple)) and isinstance(probe, (list, tuple)):
        if len(value) != len(probe):
            return True
        return [batched(item, other) for item, other in zip(value, probe, strict=True)]
    return False


def batch_of(model: torch.nn.Module) -> object:
    """:func:`batched` for ``model``'s inputs (:func:`~hf_neuron.tiny.diffusion.inputs.forward_inputs`), probed with
    them built for twice the harness's ``BATCH`` (the input rules' ``batch``). Raises
    :class:`~hf_neuron.tiny.UnbuildableInputError` when nothing follows the batch size (inputs of a fixed batch,
    from ``compat/tiny_diffusion.toml``)."""
    probe = forward_inputs(model, seed=0, batch=2 * BATCH)
    mask = batched(forward_inputs(model, seed=0), probe)

    def any_true(item: object) -> bool:
        if isinstance(item, dict):
            return any(any_true(part) for part in item.values())
        if isinstance(item, list):
            return any(any_true(part) for part in item)
        return item is True

    if not any_true(mask):
        raise UnbuildableInputError(f"no input of {type(model).__name__} follows the batch size: ddp cannot give "
                                    "each rank its rows")
    return mask


def rows(value: object, mask: object, rank: int, world: int) -> object:
    """Rank ``rank``'s equal share (of ``world``) of a backbone's inputs: the rows of every part ``mask``
    (:func:`batched`) marks as holding the batch, the rest (positions, grids, frame numbers the batch shares) as
    it is."""
    import torch

    if mask is True:
        if isinstance(value, torch.Tensor):
            return value.chunk(world)[rank]
        assert isinstance(value, (list, tuple))
        share = len(value) // world
        return type(value)(value[rank * share:(rank + 1) * share])
    if isinstance(value, dict) and isinstance(mask, dict):
        return {key: rows(item, mask[key], rank, world) for key, item in value.items()}
    if isinstance(value, (list, tuple)) and isinstance(mask, list):
        return type(value)(rows(item, part, rank, world) for item, part in zip(value, mask, strict=True))
    return value


class _DdpParts:
    """The ``ddp`` scenario's parts for diffusion backbones (:class:`~hf_neuron.matrix.scenarios.ddp.DdpParts`): the
    backbone in train mode without training-time randomness (dropout, DiT's class-label dropout), the case's inputs
    and the denoising loss's target (:func:`_target`, for the whole batch's prediction), one row of each a rank
    (:func:`rows` of the parts that hold the batch, :func:`batch_of`), and the loss :func:`train` steps on."""

    def model(self, ctx: CaseContext, device: str) -> torch.nn.Module:
        from hf_neuron.matrix.scenarios.text_models import disable_dropout

        model = _load(ctx, device).train()
        disable_dropout(model)  # each rank draws its own masks: a dropped row or class label would differ
        return model

    def no_training_loss(self, model: torch.nn.Module) -> str | None:
        return None  # every backbone predicts what a denoising loss regresses

    def batch(self, ctx: CaseContext, model: torch.nn.Module) -> dict[str, Any]:
        inputs = forward_inputs(model, seed=ctx.seed)
        device = next(model.parameters()).device
        shape = denoise(model, {name: _on(value, str(device)) for name, value in inputs.items()}).shape
        return {"inputs": inputs, "batched": batch_of(model), "target": _target(shape, ctx.seed)}

    def rows(self, batch: dict[str, Any], rank: int, world: int) -> dict[str, Any]:
        target = batch["target"]
        return {"inputs": rows(batch["inputs"], batch["batched"], rank, world),
                "target": rows(target, target.dim() > 0 and target.shape[0] == BATCH, rank, world)}

    def loss(self, replica: torch.nn.Module, model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        import torch

        device = str(next(model.parameters()).device)
        through = cast("torch.nn.Module", _Through(replica, model))
        prediction = predict(through, {name: _on(value, device) for name, value in batch["inputs"].items()})
        return torch.nn.functional.mse_loss(prediction.float(), batch["target"].to(device))


class _Through:
    """``replica`` (a DDP wrapper, whose ``forward`` takes anything) called as the backbone ``model`` is: with its
    ``forward``'s signature, so :func:`~hf_neuron.tiny.diffusion.inputs.predict` passes ``return_dict=False`` where
    the backbone takes it and reads the prediction from what it returns."""

    def __init__(self, replica: torch.nn.Module, model: torch.nn.Module) -> None:
        self._replica, self.forward = replica, model.forward

    def __call__(self, **inputs: Any) -> Any:
        return self._replica(**inputs)


#: What the ``ddp`` scenario asks of diffusion backbones.
DDP_PARTS = _DdpParts()


def ddp(ctx: CaseContext) -> ScenarioResult:
    """A two-rank DDP step on the denoising loss, one row each, gives every rank a single process's gradients on the
    whole batch (:func:`~hf_neuron.matrix.scenarios.ddp.data_parallel` with :data:`DDP_PARTS`)."""
    return data_parallel(ctx, __name__)


def tp_plan(model_type: str) -> dict[str, Any] | None:
    """The tensor-parallel plan diffusers ships for the backbone (its class's ``_tp_plan``), or None."""
    plan: dict[str, Any] | None = getattr(backbone_class(model_type), "_tp_plan", None)
    return plan


def tensor_parallel(ctx: CaseContext, step: str) -> ScenarioResult:
    """:func:`tp` with the rank step ``step`` (``"module:function"``, :func:`tp_rank_step` or one that wraps it)."""
    import diffusers
    import torch

    if tp_plan(ctx.model_type) is None:
        return ScenarioResult.skipped(f"diffusers {diffusers.__version__} ships no tensor-parallel plan for "
                                      f"{ctx.model_type} (its class has no _tp_plan)")
    if torch.device(ctx.device).type != "neuron":
        return ScenarioResult.skipped(f"diffusers' tensor parallelism runs on an accelerator mesh, not on "
                                      f"{ctx.device}: the scenario is the neuron backend's")
    if (fewer := fewer_devices(ctx, "tp")) is not None:
        return fewer
    reference = _load(ctx, "cpu")
    inputs = forward_inputs(reference, seed=ctx.seed)
    expected = denoise(reference, inputs)
    inputs_path = ctx.workdir / ctx.scenario / f"{ctx.model_type}-inputs.pt"
    inputs_path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(inputs, inputs_path)
    out, reports = on_ranks(ctx, step, "tensor-parallel", inputs=str(inputs_path))
    results = [compare(torch.load(out / f"rank{rank}.pt"), expected, f"rank {rank}'s tensor-parallel denoiser output",
                       reference="a single process's on the CPU") for rank in range(WORLD)]
    return worst_of(results).with_details({"ranks": reports})


def tp(ctx: CaseContext) -> ScenarioResult:
    """The backbone sharded over two neuron ranks by diffusers' tensor parallelism (``enable_parallelism`` with a
    ``TensorParallelConfig``, which on a neuron mesh pre-shards each planned weight on the CPU,
    ``diffusers/hooks/tensor_parallel_neuron.py``) predicts on every rank what one process does on the CPU; not
    applicable to a backbone whose class has no tensor-parallel plan."""
    return tensor_parallel(ctx, f"{__name__}:tp_rank_step")


def tp_rank_step(request: dict[str, Any], device: str,
                 change_shard: Callable[[torch.nn.Module, int], None] | None = None) -> dict[str, Any]:
    """One rank of ``tp``: the backbone loaded on the CPU, sharded with ``enable_parallelism`` over every rank, moved
    to the rank's device (the parameters the plan leaves whole); its prediction on the request's inputs saved (on the
    CPU); reports the rank, its device and how many of its parameters are shards. ``change_shard`` (the model and the
    rank) alters the sharded model before it predicts (a test's perturbed shard)."""
    import torch
    import torch.distributed as dist
    from diffusers.models._modeling_parallel import TensorParallelConfig
    from torch.distributed.tensor import DTensor

    from hf_neuron.backends import neuron_module

    neuron_module().set_device(device)  # diffusers places the shards on the current device
    ctx = rank_context(request, device)
    model = backbone_class(ctx.model_type).from_pretrained(ctx.checkpoint).eval()  # type: ignore[attr-defined]
    model.enable_parallelism(config=TensorParallelConfig(tp_degree=dist.get_world_size()))
    model.to(device)
    rank = dist.get_rank()
    if change_shard is not None:
        change_shard(model, rank)
    inputs = torch.load(request["inputs"])
    output = denoise(model, {name: _on(value, device) for name, value in inputs.items()})
    if isinstance(output, DTensor):
        output = output.full_tensor()
    torch.save(output.cpu(), Path(request["out"]) / f"rank{rank}.pt")
    shards = sum(isinstance(p, DTensor) for p in model.parameters())
    return {"rank": rank, "device": str(output.device), "sharded_parameters": shards}


def _loss_and_gradients(ctx: CaseContext, device: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The denoising loss of one call of the backbone on ``device`` and every parameter's gradient after its backward
    (the backbone itself dropped)."""
    import torch

    from hf_neuron.matrix.scenarios.training import gradients

    model = _load(ctx, device).train()
    inputs = _on(forward_inputs(model, seed=ctx.seed), device)
    assert isinstance(inputs, dict)
    torch.manual_seed(ctx.seed)
    loss = _loss(model, inputs, ctx.seed)
    loss.backward()
    return loss.detach(), gradients(model)


def backward(ctx: CaseContext) -> ScenarioResult:
    """One denoiser call on the denoising loss and its backward on the device give the CPU's loss and gradients, in
    float32 (a checkpoint's slice; the device runs first, and only its loss and gradients are kept)."""
    from hf_neuron.matrix.scenarios.checkpoint import loss_parity

    loss, grads = _loss_and_gradients(ctx, ctx.device)
    return loss_parity(ctx, loss, grads, *_loss_and_gradients(ctx, "cpu"), "float32")
