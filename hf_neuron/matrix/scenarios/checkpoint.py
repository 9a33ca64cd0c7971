"""The scenarios a checkpoint's real-width slice runs besides ``forward``, ``generate`` and ``compile``: ``backward``
(a forward pass with labels and its backward, in float32; a diffusion backbone's is
:func:`hf_neuron.matrix.scenarios.diffusion.backward`) and ``dtype`` (forward, backward and greedy decoding in the
dtype the checkpoint states), declared in :mod:`~hf_neuron.matrix.scenarios.builtin`.

A real-width slice holds up to gigabytes: ``backward`` runs the device first and keeps only its loss and gradients
before the CPU's model is loaded (:data:`hf_neuron.checkpoint.slice.BYTES_PER_PARAMETER` counts on it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult, compare, compare_named
from hf_neuron.matrix.scenarios.training import gradients

if TYPE_CHECKING:
    import torch

__all__ = ["backward", "dtype", "loss_parity"]

#: What a gradient comparison names.
_GRADIENT = "gradient of"


def _text_loss(ctx: CaseContext, device: str, dtype: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]] | str:
    """The loss of one forward pass with labels on ``device`` in ``dtype`` and every parameter's gradient after its
    backward (the model itself dropped); the reason there is none for a model without a training loss."""
    import torch

    from hf_neuron.matrix.scenarios.text_models import (
        load_model,
        model_inputs,
        no_training_loss,
        sample_ids,
        training_inputs,
    )

    model = load_model(ctx, device, dtype=dtype, train=True)
    reason = no_training_loss(model)
    if reason is not None:
        return reason
    torch.manual_seed(ctx.seed)
    inputs = training_inputs(model, model_inputs(model, sample_ids(ctx, model)))
    loss: torch.Tensor = model(**inputs).loss
    loss.backward()
    return loss.detach(), gradients(model)


def _loss_and_gradients(ctx: CaseContext, dtype: str) -> ScenarioResult:
    """The loss and every gradient of a step on the device in ``dtype`` against the CPU's (the device's first)."""
    found = _text_loss(ctx, ctx.device, dtype)
    if isinstance(found, str):
        return ScenarioResult.skipped(found)
    loss, grads = found
    expected = _text_loss(ctx, "cpu", dtype)
    assert not isinstance(expected, str), "the CPU's model has the device's training loss"
    return loss_parity(ctx, loss, grads, *expected, dtype)


def loss_parity(ctx: CaseContext, loss: torch.Tensor, grads: dict[str, torch.Tensor], expected_loss: torch.Tensor,
                expected: dict[str, torch.Tensor], dtype: str) -> ScenarioResult:
    """The device's ``loss`` and gradients ``grads`` against the CPU's, within ``dtype``'s tolerance: the loss first,
    then every gradient (the worst one's parity)."""
    tolerance = ctx.tolerance(dtype)
    found = compare(loss, expected_loss, f"{dtype} loss", tolerance, device=ctx.device)
    if found.outcome != "passed":
        return found
    return compare_named(grads, expected, f"{dtype} {_GRADIENT}", tolerance, device=ctx.device)


def backward(ctx: CaseContext) -> ScenarioResult:
    """A forward pass with labels and its backward on the device give the CPU's loss and gradients, in float32."""
    return _loss_and_gradients(ctx, "float32")


def dtype(ctx: CaseContext) -> ScenarioResult:
    """In the dtype the checkpoint states: the logits, greedy decoding, and a backward's loss and gradients, each
    within that dtype's tolerance of the CPU's; not applicable to a checkpoint that states float32 or no dtype (the
    float32 scenarios test it)."""
    from hf_neuron.checkpoint.facts import prepare
    from hf_neuron.matrix.scenarios.text import in_dtype

    if ctx.slice_request is None:
        return ScenarioResult.skipped("not a checkpoint's slice: a tiny model has no dtype of its own")
    stated = prepare(ctx.slice_request).source.dtype
    if stated in (None, "float32"):
        return ScenarioResult.skipped(f"the checkpoint states {stated or 'no dtype'}: the float32 scenarios test it")
    return ScenarioResult.of_legs([*in_dtype(ctx, stated), ("backward", _loss_and_gradients(ctx, stated))])
