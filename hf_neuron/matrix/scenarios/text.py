"""The inference scenarios of text models: ``load``, ``forward``, ``generate``, ``bf16``, ``compile``, ``save``.

Each runs on ``ctx.device`` and compares with the same computation on the CPU (``compile`` and ``save`` with the
eager / original model on the same device, which ``forward`` has already compared with the CPU). Greedy tokens are
compared exactly, except after a step where the CPU itself saw a tie: when the device picks a token whose CPU score
is within the dtype's tolerance of the CPU's choice, both are right and the rest of that row is not compared.
"""

from __future__ import annotations

import itertools
import tempfile
from typing import TYPE_CHECKING

from hf_neuron.matrix.records import Parity
from hf_neuron.matrix.scenarios.contract import (
    EXACT,
    CaseContext,
    ScenarioResult,
    Tolerance,
    compare,
    compare_named,
)
from hf_neuron.matrix.scenarios.text_models import (
    Greedy,
    greedy,
    load_model,
    model_inputs,
    sample_ids,
)

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

__all__ = ["CACHES", "bf16", "compile_forward", "forward", "generate", "load", "save"]

#: The caches ``generate`` decodes with: the model's default, and a static cache (which transformers compiles
#: with the device's ``torch.compile`` backend on ``neuron``).
CACHES: tuple[str | None, ...] = (None, "static")


def _named_tensors(model: PreTrainedModel) -> dict[str, torch.Tensor]:
    return dict(itertools.chain(model.named_parameters(), model.named_buffers()))


def load(ctx: CaseContext) -> ScenarioResult:
    """``from_pretrained(checkpoint, device_map=device)`` puts every parameter and buffer on the device, holding
    the values a CPU load holds."""
    model = load_model(ctx, ctx.device)
    expected_type = model.device.type
    tensors = _named_tensors(model)
    elsewhere = [f"{name} ({tensor.device})" for name, tensor in tensors.items() if tensor.device.type != expected_type]
    if model.device.type != ctx.device.split(":")[0] or elsewhere:
        return ScenarioResult.failed(
            f"{len(elsewhere)} of {len(tensors)} tensors not on {ctx.device} after from_pretrained(device_map="
            f"{ctx.device!r}) (model.device {model.device}): {', '.join(elsewhere[:5])}"
        )
    return compare_named(tensors, _named_tensors(load_model(ctx, "cpu")), "tensor")


def _logits(model: PreTrainedModel, input_ids: torch.Tensor) -> torch.Tensor:
    import torch

    with torch.no_grad():
        logits: torch.Tensor = model(**model_inputs(model, input_ids)).logits
    return logits


def forward(ctx: CaseContext) -> ScenarioResult:
    """The logits of one forward pass on the device equal the CPU's, within the float32 tolerance."""
    reference = load_model(ctx, "cpu")
    input_ids = sample_ids(ctx, reference)
    return compare(_logits(load_model(ctx, ctx.device), input_ids), _logits(reference, input_ids), "logits")


def _agree(actual: Greedy, expected: Greedy, tolerance: Tolerance, what: str) -> ScenarioResult:
    """Greedy tokens equal, or differing first where the CPU's scores of both tokens tie within ``tolerance``."""
    if actual.tokens.shape != expected.tokens.shape:
        return ScenarioResult.failed(f"{what}: shape {tuple(actual.tokens.shape)}, the CPU's "
                                     f"{tuple(expected.tokens.shape)}")
    mismatches = []
    for row in range(expected.tokens.shape[0]):
        differing = (actual.tokens[row] != expected.tokens[row]).nonzero()
        if not len(differing):
            continue
        step = int(differing[0])
        scores = expected.scores[step, row]
        chosen, other = int(expected.tokens[row, step]), int(actual.tokens[row, step])
        margin = float(scores[chosen] - scores[other])
        bound = tolerance.bound(float(scores[scores.isfinite()].abs().max()))
        if not margin <= bound:
            mismatches.append(f"row {row} step {step}: token {other}, the CPU's {chosen} (CPU score margin "
                              f"{margin:.3g} > tolerance {bound:.3g})")
    parity = Parity(metric="token_mismatches", value=float(len(mismatches)), tolerance=0.0)
    if mismatches:
        return ScenarioResult.failed(f"{what} differ from the CPU's: {'; '.join(mismatches)}", parity)
    return ScenarioResult.passed(parity)


def _greedy_agrees(ctx: CaseContext, model: PreTrainedModel, reference: PreTrainedModel,
                   caches: tuple[str | None, ...]) -> ScenarioResult:
    """Greedy decoding with each of ``caches`` agrees between ``model`` (device) and ``reference`` (CPU)."""
    input_ids = sample_ids(ctx, reference)
    dtype = str(reference.dtype).removeprefix("torch.")
    result = ScenarioResult.passed()
    for cache in caches:
        kwargs = {} if cache is None else {"cache_implementation": cache}
        result = _agree(greedy(model, input_ids, **kwargs), greedy(reference, input_ids, **kwargs),
                        ctx.tolerance(dtype), f"greedy tokens ({cache or 'default'} cache, {dtype})")
        if result.outcome != "passed":
            return result
    return result


def generate(ctx: CaseContext) -> ScenarioResult:
    """Greedy decoding on the device picks the CPU's tokens, with the default cache and with a static cache."""
    return _greedy_agrees(ctx, load_model(ctx, ctx.device), load_model(ctx, "cpu"), CACHES)


def bf16(ctx: CaseContext) -> ScenarioResult:
    """In bfloat16, the logits equal the CPU's within the bfloat16 tolerance, and greedy decoding agrees."""
    reference = load_model(ctx, "cpu", dtype="bfloat16")
    model = load_model(ctx, ctx.device, dtype="bfloat16")
    input_ids = sample_ids(ctx, reference)
    logits = compare(_logits(model, input_ids), _logits(reference, input_ids), "bfloat16 logits")
    if logits.outcome != "passed":
        return logits
    tokens = _greedy_agrees(ctx, model, reference, (None,))
    return logits if tokens.outcome == "passed" else tokens


def compile_backend(device: str) -> str:
    """The ``torch.compile`` backend of ``device``: the one registered under its type (``neuron``), else
    ``aot_eager`` (AOTAutograd without Inductor, the CPU's closest match to the neuron backend)."""
    import torch._dynamo

    device_type = device.split(":")[0]
    return device_type if device_type in torch._dynamo.list_backends(exclude_tags=()) else "aot_eager"


def compile_forward(ctx: CaseContext) -> ScenarioResult:
    """``torch.compile(model, backend=<the device's>)`` computes the eager model's logits on the device."""
    import torch
    import torch._dynamo

    torch._dynamo.reset()  # each case compiles afresh: no cache entries or recompile counts left by another case
    model = load_model(ctx, ctx.device)
    input_ids = sample_ids(ctx, model)
    eager = _logits(model, input_ids)
    compiled = torch.compile(model, backend=compile_backend(ctx.device), dynamic=False)
    return compare(_logits(compiled, input_ids), eager, "compiled logits", reference="eager's")  # type: ignore[arg-type]


def save(ctx: CaseContext) -> ScenarioResult:
    """``save_pretrained`` from the device, then ``from_pretrained`` onto it again (with the model's own class):
    the same logits, exactly."""
    model = load_model(ctx, ctx.device)
    input_ids = sample_ids(ctx, model)
    expected = _logits(model, input_ids)
    with tempfile.TemporaryDirectory(dir=ctx.workdir, prefix="save-") as directory:
        model.save_pretrained(directory)
        reloaded = type(model).from_pretrained(directory, device_map=ctx.device, dtype=model.dtype).eval()
        return compare(_logits(reloaded, input_ids), expected, "logits after save and reload", EXACT,
                       reference="the saved model's")
