"""The scenario set the matrix runs by default (``SCENARIOS``, in run order).

Each scenario follows :mod:`hf_neuron.matrix.scenarios`: one job, the device compared with the CPU, torch and
transformers imported inside the function. Add a scenario by writing its function and listing it in
:data:`SCENARIOS` under its name from :data:`~hf_neuron.matrix.scenarios.SCENARIO_NAMES`.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from hf_neuron.matrix.scenarios import CaseContext, Scenario, ScenarioResult, compare

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["SCENARIOS", "forward", "load"]


def _from_pretrained(ctx: CaseContext, device: str) -> PreTrainedModel:
    import torch
    from transformers import AutoModelForCausalLM

    model: PreTrainedModel = AutoModelForCausalLM.from_pretrained(
        ctx.checkpoint, device_map=device, dtype=torch.float32
    )
    model.eval()  # type: ignore[no-untyped-call]
    return model


def load(ctx: CaseContext) -> ScenarioResult:
    """``from_pretrained(checkpoint, device_map=device)`` puts every parameter and buffer on the device."""
    import torch

    model = _from_pretrained(ctx, ctx.device)
    expected = torch.device(ctx.device).type
    elsewhere = [
        f"{name} ({tensor.device})"
        for name, tensor in itertools.chain(model.named_parameters(), model.named_buffers())
        if tensor.device.type != expected
    ]
    if elsewhere:
        return ScenarioResult.failed(
            f"{len(elsewhere)} tensors not on the expected device {ctx.device} after "
            f"from_pretrained(device_map={ctx.device!r}): {', '.join(elsewhere[:5])}"
        )
    return ScenarioResult.passed()


def forward(ctx: CaseContext) -> ScenarioResult:
    """The logits of one forward pass on the device equal the CPU's, within the float32 tolerance."""
    import torch

    reference = _from_pretrained(ctx, "cpu")
    model = _from_pretrained(ctx, ctx.device)
    embeddings: torch.nn.Embedding = reference.get_input_embeddings()  # type: ignore[assignment]
    vocab = embeddings.num_embeddings
    input_ids = torch.randint(0, vocab, (2, 8), generator=torch.Generator().manual_seed(ctx.seed))
    with torch.no_grad():
        expected = reference(input_ids=input_ids).logits
        actual = model(input_ids=input_ids.to(ctx.device)).logits
    return compare(actual, expected, "logits")


SCENARIOS: dict[str, Scenario] = {"load": load, "forward": forward}
