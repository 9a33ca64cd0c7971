"""The training scenarios of transformers models: ``train`` (full fine-tuning) and ``lora`` (a PEFT LoRA adapter).

Both train in train mode with training-time randomness off (dropout, layer drop, router jitter), on one fixed
batch with the labels the model's group gives it (a language model's: its inputs), with AdamW whose ``foreach`` is
pinned (AdamW picks the multi-tensor path on a device and the per-tensor one on the CPU by itself, and the two round
differently). Every step starts from ``torch.manual_seed(seed)``, so that randomness the switches miss is at least
drawn the same way on both sides. The first step's loss, gradients and updated weights are compared with the CPU's;
further steps on the device must lower the loss. Neither applies to a model that has no training loss (its group says
why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hf_neuron.matrix.scenarios.contract import (
    CaseContext,
    ScenarioResult,
    Tolerance,
    compare,
    compare_named,
)
from hf_neuron.matrix.scenarios.text_models import (
    load_model,
    lora_targets,
    model_inputs,
    no_training_loss,
    sample_ids,
    training_inputs,
)
from hf_neuron.vocabulary.records import DEVICE_STEPS

if TYPE_CHECKING:
    from collections.abc import Mapping

    import torch

__all__ = ["ADAM_EPS", "LEARNING_RATE", "LORA_RANK", "STEPS", "adamw", "adapter_outside", "adapter_step_changes",
           "first_step_parity", "gradients", "lora", "lora_config", "lora_refused", "start_adapter_as", "train",
           "train_aux_loss", "trainable", "untrainable", "updated_weights"]

#: Optimizer steps on the device; the loss after the last must be below the first.
STEPS = 3
LEARNING_RATE = 1e-3
#: AdamW's epsilon (torch's default). AdamW's first step moves each weight by ``lr * g / (|g| + eps)``: by about
#: ``lr`` whatever the size of its gradient ``g``, so the sign of a gradient within tolerance of zero decides it.
ADAM_EPS = 1e-8
#: The rank (and half the alpha) of every LoRA adapter the scenarios add.
LORA_RANK = 4


def _step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, input_ids: torch.Tensor, seed: int
          ) -> torch.Tensor:
    """One optimizer step on the batch, from ``torch.manual_seed(seed)``; returns the loss (detached) and leaves
    the gradients in place."""
    import torch

    torch.manual_seed(seed)
    optimizer.zero_grad(set_to_none=True)
    inputs = training_inputs(model, model_inputs(model, input_ids))  # type: ignore[arg-type]
    loss: torch.Tensor = model(**inputs).loss
    loss.backward()
    optimizer.step()
    return loss.detach()


def adamw(model: torch.nn.Module) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters of ``model``: :data:`LEARNING_RATE`, :data:`ADAM_EPS`, ``foreach``
    pinned."""
    import torch

    trainable = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(trainable, lr=LEARNING_RATE, eps=ADAM_EPS, foreach=False)


def gradients(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The gradient of every parameter of ``model`` that has one, by name."""
    return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


def trainable(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every trainable parameter of ``model`` (detached), by name."""
    return {name: p.detach() for name, p in model.named_parameters() if p.requires_grad}


def _first_update(gradient: torch.Tensor) -> torch.Tensor:
    """AdamW's first move of each weight, in units of the learning rate: ``m̂ / (√v̂ + ε) = g / (|g| + ε)``."""
    return gradient / (gradient.abs() + ADAM_EPS)


def updated_weights(weights: dict[str, torch.Tensor], grads: dict[str, torch.Tensor],
                    expected: dict[str, torch.Tensor], expected_grads: dict[str, torch.Tensor], device: str
                    ) -> ScenarioResult:
    """Trainable ``weights`` after one AdamW step (:data:`LEARNING_RATE`, :data:`ADAM_EPS`) from the gradients
    ``grads``, against the CPU's ``expected`` weights after its step from ``expected_grads``, tensor by tensor.

    Each element may differ, beyond the tolerance, by the move AdamW made of the two gradients' difference,
    ``lr * |u(g_device) - u(g_cpu)|`` with ``u`` = :func:`_first_update`: the gradient check accepted that difference,
    and where a gradient is within tolerance of zero (the bias before a normalization has none) its sign, which the
    check leaves open, moves the weight by ``+lr`` or ``-lr``. A step that does anything else still fails."""
    import torch

    actual = {}
    for name, weight in weights.items():
        gradient, expected_gradient = grads.get(name), expected_grads.get(name)
        if (gradient is None or expected_gradient is None or name not in expected
                or gradient.shape != expected_gradient.shape or weight.shape != expected[name].shape):
            actual[name] = weight
            continue
        allowed = LEARNING_RATE * (_first_update(gradient.to("cpu", torch.float32))
                                   - _first_update(expected_gradient.to("cpu", torch.float32))).abs()
        on_cpu = weight.to("cpu", expected[name].dtype)
        explained = torch.clamp(on_cpu - expected[name].cpu(), min=-allowed, max=allowed).to(expected[name].dtype)
        actual[name] = (on_cpu - explained).to(weight.device)
    return compare_named(actual, {name: weight.cpu() for name, weight in expected.items()},
                         "weight after one AdamW step", device=device)


def first_step_parity(model: torch.nn.Module, reference: torch.nn.Module, loss: torch.Tensor,
                      expected_loss: torch.Tensor, device: str, tolerances: Mapping[str, Tolerance] | None = None
                      ) -> ScenarioResult:
    """After one AdamW step (:func:`adamw`) on ``model`` (on ``device``) and on ``reference`` (CPU) from the same
    weights, with the gradients left in place: the loss, every gradient and every updated trainable weight
    (:func:`updated_weights`) against the CPU's. Passed with the gradients' parity (the worst parameter), or the
    first comparison that failed. ``tolerances`` gives the loss (``"loss"``) and a parameter's gradient (its name) a
    tolerance of their own in place of their dtype's (:mod:`~hf_neuron.matrix.scenarios.rounding`)."""
    own = tolerances or {}
    gradient_parity = compare_named(gradients(model), gradients(reference), "gradient of", device=device,
                                    tolerances=own)
    for result in (compare(loss, expected_loss, "loss", own.get("loss"), device=device), gradient_parity,
                   updated_weights(trainable(model), gradients(model), trainable(reference), gradients(reference),
                                   device)):
        if result.outcome != "passed":
            return result
    return gradient_parity


def _first_step_parity(model: torch.nn.Module, reference: torch.nn.Module, input_ids: torch.Tensor, seed: int,
                       device: str) -> ScenarioResult:
    """:func:`first_step_parity` of one step on the batch."""
    loss = _step(model, adamw(model), input_ids, seed)
    expected_loss = _step(reference, adamw(reference), input_ids, seed)
    return first_step_parity(model, reference, loss, expected_loss, device)


def _loss_goes_down(model: torch.nn.Module, input_ids: torch.Tensor, seed: int, parity: ScenarioResult
                    ) -> ScenarioResult:
    """``parity`` (passed) if :data:`STEPS` more steps lower the loss, else failed."""
    optimizer = adamw(model)
    losses = [float(_step(model, optimizer, input_ids, seed)) for _ in range(STEPS)]
    if not losses[-1] < losses[0]:
        parity = ScenarioResult.failed(f"the loss did not go down over {STEPS} AdamW steps (lr {LEARNING_RATE:g}): "
                                       f"{', '.join(f'{loss:.6g}' for loss in losses)}")
    return parity.adding_details({DEVICE_STEPS: 1 + STEPS})


def untrainable(model: torch.nn.Module) -> ScenarioResult | None:
    """Skipped when the model has no training loss (with its group's reason), else None."""
    reason = no_training_loss(model)  # type: ignore[arg-type]
    return None if reason is None else ScenarioResult.skipped(reason)


def train(ctx: CaseContext) -> ScenarioResult:
    """One AdamW step matches the CPU's (loss, every gradient, every updated weight); the loss goes down."""
    reference = load_model(ctx, "cpu", train=True)
    if (skipped := untrainable(reference)) is not None:
        return skipped
    model = load_model(ctx, ctx.device, train=True)
    input_ids = sample_ids(ctx, reference)
    parity = _first_step_parity(model, reference, input_ids, ctx.seed, ctx.device)
    if parity.outcome != "passed":
        return parity.adding_details({DEVICE_STEPS: 1})
    return _loss_goes_down(model, input_ids, ctx.seed, parity)


def train_aux_loss(ctx: CaseContext) -> ScenarioResult:
    """A mixture of experts trained as it is fine-tuned, with ``output_router_logits=True`` (the loss includes the
    router's load-balancing auxiliary loss): one AdamW step matches the CPU's, the loss goes down."""
    import torch
    from transformers import AutoConfig

    if not hasattr(AutoConfig.from_pretrained(ctx.checkpoint), "output_router_logits"):
        return ScenarioResult.skipped("not a mixture of experts: its config has no output_router_logits")
    reference = load_model(ctx, "cpu", train=True, output_router_logits=True)
    if (skipped := untrainable(reference)) is not None:
        return skipped
    input_ids = sample_ids(ctx, reference)
    with torch.no_grad():
        inputs = training_inputs(reference, model_inputs(reference, input_ids))
        aux_loss = getattr(reference(**inputs), "aux_loss", None)
    if aux_loss is None:
        return ScenarioResult.skipped("the model computes no router auxiliary loss with output_router_logits=True")
    model = load_model(ctx, ctx.device, train=True, output_router_logits=True)
    parity = _first_step_parity(model, reference, input_ids, ctx.seed, ctx.device)
    if parity.outcome != "passed":
        return parity.adding_details({DEVICE_STEPS: 1})
    return _loss_goes_down(model, input_ids, ctx.seed, parity)


def lora_config(model: torch.nn.Module) -> Any:
    """The LoRA adapter the scenarios add to ``model``: rank :data:`LORA_RANK` on all its linear layers (PEFT's
    ``"all-linear"``, the head excluded; a vision-language model's language model only), no dropout."""
    from peft import LoraConfig

    return LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, lora_dropout=0.0,
                      target_modules=lora_targets(model))  # type: ignore[arg-type]


def _with_lora(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` with the adapter of :func:`lora_config`."""
    from peft import get_peft_model

    return get_peft_model(model, lora_config(model))


def _refusal(refusal: ValueError) -> ScenarioResult:
    """Untested (gap ``lora-targets``): PEFT refuses the harness's choice of target modules, for ``refusal``'s
    reason."""
    first_line = (str(refusal).strip().splitlines() or [""])[0]
    return ScenarioResult.untested(f"PEFT refuses a LoRA adapter on the modules 'all-linear' picks: {first_line}",
                                   "lora-targets")


def lora_refused(model: torch.nn.Module) -> ScenarioResult | None:
    """Untested (gap ``lora-targets``) when PEFT refuses the adapter of :func:`lora_config` on ``model`` (which this
    wraps: pass one of no further use), with PEFT's reason; None when it accepts it."""
    try:
        _with_lora(model)
    except ValueError as refusal:
        return _refusal(refusal)
    return None


def lora(ctx: CaseContext) -> ScenarioResult:
    """A LoRA adapter on all linear layers, added on the device, trains like the CPU's; only its weights change.

    The device's adapter starts from the CPU's initial adapter weights (their initialization is random), copied
    parameter by parameter (PEFT's own state-dict round trip drops the adapters of modules under
    ``shared_experts``, peft 0.21).
    """
    import torch

    torch.manual_seed(ctx.seed)
    base = load_model(ctx, "cpu", train=True)
    if (skipped := untrainable(base)) is not None:
        return skipped
    input_ids = sample_ids(ctx, base)
    try:
        reference = _with_lora(base)
    except ValueError as refusal:  # PEFT refuses the harness's choice of target modules, on the CPU model
        return _refusal(refusal)
    model = _with_lora(load_model(ctx, ctx.device, train=True))
    start_adapter_as(model, reference)
    if (outside := adapter_outside(model)) is not None:
        return outside
    before = {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters()}
    parity = _first_step_parity(model, reference, input_ids, ctx.seed, ctx.device)
    if parity.outcome != "passed":
        return parity
    if (changes := adapter_step_changes(before, model)) is not None:
        return changes
    return _loss_goes_down(model, input_ids, ctx.seed, parity)


def start_adapter_as(model: torch.nn.Module, reference: torch.nn.Module) -> None:
    """Give ``model``'s LoRA adapter ``reference``'s initial adapter weights (their initialization is random),
    parameter by parameter."""
    import torch

    initial = dict(reference.named_parameters())
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_" in name:
                parameter.copy_(initial[name])


def adapter_outside(model: torch.nn.Module) -> ScenarioResult | None:
    """Failed when a parameter of ``model`` outside its LoRA adapter is trainable, or when no adapter weight is (a
    frozen adapter: nothing to train); None when only the adapter trains."""
    trained = trainable(model)
    not_adapter = [name for name in trained if "lora_" not in name]
    if not_adapter:
        return ScenarioResult.failed(f"{len(not_adapter)} trainable parameters outside the adapter: "
                                     f"{', '.join(not_adapter[:5])}")
    if not trained:
        return ScenarioResult.failed("the LoRA adapter has no trainable weight")
    return None


def adapter_step_changes(before: dict[str, torch.Tensor], model: torch.nn.Module) -> ScenarioResult | None:
    """Failed when a LoRA step changed a frozen base weight of ``model`` (``before``: every parameter's value before
    the step, on the CPU) or no adapter weight; None when it changed adapter weights only."""
    import torch

    after = {name: p.detach().to("cpu") for name, p in model.named_parameters()}
    changed = {name for name in before if not torch.equal(before[name], after[name])}
    frozen_changed = sorted(name for name in changed if "lora_" not in name)
    if frozen_changed:
        return ScenarioResult.failed(f"a LoRA step changed {len(frozen_changed)} frozen base weights: "
                                     f"{', '.join(frozen_changed[:5])}")
    if not changed:
        return ScenarioResult.failed("a LoRA step changed no adapter weight")
    return None
