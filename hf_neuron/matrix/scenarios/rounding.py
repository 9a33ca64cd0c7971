"""A float32 comparison judged against the computation's own rounding, where a fixed tolerance cannot judge it.

A device computes in another order than the CPU's kernels: another kernel, a composite in place of a fused one,
another memory layout (under the ``trainium`` profile, ``native_group_norm`` runs ATen's composite and every native
result is laid out contiguously where the CPU's convolution returns channels-last). Its float32 results then differ
from the CPU's by about one rounding at each such operator. A computation that amplifies such differences (a
pipeline's latents over its steps, a gradient through the normalization of a few values) makes them larger than the
float32 tolerance on every device, the CPU included: a failed comparison then cannot tell the device's rounding from
an error.

So a float32 comparison that fails is judged again against the computation's own rounding noise: the CPU computes
the same thing :data:`DRAWS` times with every floating weight moved one unit in the last place up or down (at
random, drawn from the case's seed), and each result tensor's largest movement over those runs is its noise. The
device passes when every element is within the tolerance plus :data:`MULTIPLE` times its tensor's noise: the rule of
PyTorch's own accuracy check of compiled models, which accepts a result whose error is within twice the eager
result's (``torch._dynamo.utils.same`` with a float64 reference, ``multiplier=2.0``). An error the checks exist to
catch moves the result thousands of roundings: a 0.1% error of every linear layer stays far beyond the noise (as
``tests/test_diffusion_rounding.py`` checks). Only dtypes whose tolerance is many roundings wide are judged so
(:func:`resolves_rounding`): the 16-bit tolerances are a few roundings wide, and a multiple of their rounding noise
would hide the 1% error their checks must catch.

A 16-bit mixed-precision comparison that fails is judged again against the float32 computation instead
(:func:`judged_against_float32`). Under autocast the device and the CPU do not compute the same thing: neuron's
autocast (PyTorch's policy for PrivateUse1, CUDA's lists) runs ``softmax``, ``layer_norm`` and the losses in float32
where the CPU's runs them in bfloat16, and each rounds its bfloat16 operators in its own order. Both then stand about
a bfloat16 rounding from the float32 result at every operator, and from each other by as much, which a few layers of
backward make larger than bfloat16's tolerance: the two runs cannot tell which of them is wrong. The float32 run can:
the device passes when each result's root-mean-square error against the CPU's float32 computation is at most
:data:`MIXED_PRECISION_MULTIPLE` times the CPU's own mixed-precision run's, plus a tenth of float32's ``atol`` —
PyTorch's own accuracy rule for compiled models under AMP (``torch._dynamo.utils.same`` with a higher-precision
reference: multiplier 3 for bfloat16 and float16 results, and a tenth of its tolerance, 1e-4, added). A device whose
every linear layer is off by 1% fails it in each TRL scenario on a tiny Llama (``tests/test_matrix_trl.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from hf_neuron.matrix.scenarios.contract import TOLERANCES, ScenarioResult, Tolerance
from hf_neuron.vocabulary.records import FLOAT32_REFERENCE, ROUNDING_NOISE, Parity

if TYPE_CHECKING:
    import torch

__all__ = ["DRAWS", "MIXED_PRECISION_MULTIPLE", "MULTIPLE", "RESOLUTION", "judged_against_float32",
           "judged_with_rounding", "resolves_rounding", "round_weights", "rounding_noise"]

#: How many runs with rounded weights measure the noise (its largest movement over them counts).
DRAWS = 3
#: How many times the noise a device's difference may add to the tolerance (``torch._dynamo.utils.same``'s).
MULTIPLE = 2.0
#: How many times the CPU's mixed-precision error against the float32 computation a device's may be
#: (``torch._dynamo.utils.same``'s multiplier for bfloat16 and float16 results).
MIXED_PRECISION_MULTIPLE = 3.0
#: A dtype's tolerance must be at least this many of its roundings (unit roundoffs) wide to be judged so.
RESOLUTION = 100


def resolves_rounding(dtype: torch.dtype) -> bool:
    """True for a dtype whose tolerance (:data:`~hf_neuron.matrix.scenarios.contract.TOLERANCES`) is at least
    :data:`RESOLUTION` roundings wide: float32's (1e-4 against 6e-8), not bfloat16's or float16's (about 4)."""
    import torch

    row = TOLERANCES.get(str(dtype).removeprefix("torch."))
    return row is not None and row.rtol >= RESOLUTION * torch.finfo(dtype).eps / 2


def round_weights(modules: Iterable[torch.nn.Module], seed: int) -> None:
    """Move every floating parameter of ``modules`` one unit in the last place, up or down at random (from
    ``seed``): the same computation, rounded differently."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in modules:
            for parameter in module.parameters():
                if not parameter.is_floating_point():
                    continue
                up = torch.rand(parameter.shape, generator=generator) < 0.5
                towards = torch.where(up, float("inf"), float("-inf")).to(parameter.device, parameter.dtype)
                parameter.copy_(torch.nextafter(parameter, towards))


def rounding_noise(rerun: Callable[[int], Mapping[str, torch.Tensor]], expected: Mapping[str, torch.Tensor],
                   seed: int) -> dict[str, float]:
    """Each floating tensor of ``expected``'s largest movement (where finite) over :data:`DRAWS` runs of ``rerun``,
    the computation with rounded weights (:func:`round_weights`), called with a seed per draw."""
    import torch

    noise = {name: 0.0 for name, tensor in expected.items() if tensor.is_floating_point()}
    for draw in range(DRAWS):
        again = rerun(seed + 1 + draw)
        for name in noise:
            before = expected[name].detach().to("cpu", torch.float64)
            after = again[name].detach().to("cpu", torch.float64)
            moved = (after - before).abs()
            finite = moved[moved.isfinite()]
            if finite.numel():
                noise[name] = max(noise[name], float(finite.max()))
    return noise


def judged_with_rounding(result: ScenarioResult, expected: Mapping[str, torch.Tensor],
                         rerun: Callable[[int], Mapping[str, torch.Tensor]],
                         judge: Callable[[Mapping[str, Tolerance]], ScenarioResult], seed: int) -> ScenarioResult:
    """``result`` (of comparing a computation's named results with ``expected``, the CPU's) when it did not fail, or
    when a tensor of ``expected`` is of a dtype that does not resolve rounding; else ``judge``'s result with each
    tensor's tolerance widened by :data:`MULTIPLE` times its :func:`rounding_noise` (``rerun``: the CPU's computation
    with rounded weights). Either way a judged result carries the largest noise in its details
    (:data:`~hf_neuron.vocabulary.records.ROUNDING_NOISE`), and a failure says how far beyond the noise it is."""
    floating = {name: tensor for name, tensor in expected.items() if tensor.is_floating_point()}
    if result.outcome != "failed" or not floating or not all(resolves_rounding(t.dtype) for t in floating.values()):
        return result
    noise = rounding_noise(rerun, floating, seed)
    tolerances = {}
    for name, tensor in floating.items():
        row = TOLERANCES[str(tensor.dtype).removeprefix("torch.")]
        tolerances[name] = Tolerance(atol=row.atol + MULTIPLE * noise[name], rtol=row.rtol)
    largest = max(noise, key=lambda name: noise[name])
    details = {ROUNDING_NOISE: {"largest": noise[largest], "of": largest, "draws": DRAWS, "multiple": MULTIPLE}}
    again = judge(tolerances)
    if again.outcome != "failed":
        return again.adding_details(details)
    return dataclasses.replace(again, message=f"{again.message} (the float32 tolerance widened by {MULTIPLE:g} times "
                               f"the CPU's own rounding noise, up to {noise[largest]:.3g} in {largest})"
                               ).adding_details(details)


def _rmse(actual: torch.Tensor, reference: torch.Tensor) -> float:
    import torch

    difference = actual.detach().to("cpu", torch.float64) - reference.detach().to("cpu", torch.float64)
    return float(difference.square().mean().sqrt())


def judged_against_float32(result: ScenarioResult, actual: Mapping[str, torch.Tensor],
                           expected: Mapping[str, torch.Tensor], float32: Callable[[], Mapping[str, torch.Tensor]]
                           ) -> ScenarioResult:
    """``result`` (of comparing the device's mixed-precision named results ``actual`` with ``expected``, the CPU's under
    the same autocast, held to a 16-bit tolerance) when it did not fail; else each floating tensor judged against
    ``float32()``, the CPU's computation without autocast: passed when the device's root-mean-square error against it
    is at most :data:`MIXED_PRECISION_MULTIPLE` times the CPU's plus a tenth of float32's ``atol``, with
    the worst ratio as its parity (metric ``rmse_to_float32_over_cpu``); failed, saying both errors, when one is
    beyond. A tensor whose shape differs, or whose float32 value is not finite everywhere, cannot be judged so: the
    first ``result`` stands. Either way a judged result carries the worst tensor in its details
    (:data:`~hf_neuron.vocabulary.records.FLOAT32_REFERENCE`)."""
    if result.outcome != "failed":
        return result
    reference = float32()
    names = [name for name, tensor in expected.items() if tensor.is_floating_point()]
    if not names or any(name not in actual or name not in reference or actual[name].shape != expected[name].shape
                        or reference[name].shape != expected[name].shape
                        or not bool(reference[name].detach().isfinite().all()) for name in names):
        return result
    slack = TOLERANCES["float32"].atol / 10
    errors = {name: (_rmse(actual[name], reference[name]), _rmse(expected[name], reference[name])) for name in names}
    ratios = {name: device / (cpu + slack / MIXED_PRECISION_MULTIPLE) for name, (device, cpu) in errors.items()}
    worst = max(ratios, key=lambda name: ratios[name])
    device_error, cpu_error = errors[worst]
    details = {FLOAT32_REFERENCE: {"worst": ratios[worst], "of": worst, "device_rmse": device_error,
                                   "cpu_rmse": cpu_error, "multiple": MIXED_PRECISION_MULTIPLE}}
    parity = Parity(metric="rmse_to_float32_over_cpu", value=ratios[worst], tolerance=MIXED_PRECISION_MULTIPLE)
    if device_error <= MIXED_PRECISION_MULTIPLE * cpu_error + slack:
        return ScenarioResult.passed(parity).adding_details(details)
    return ScenarioResult.failed(
        f"{result.message}; against the CPU's float32 run, {worst}'s root-mean-square error is {device_error:.3g} on "
        f"the device, more than {MIXED_PRECISION_MULTIPLE:g} times the CPU's mixed-precision run's {cpu_error:.3g} "
        f"(+ {slack:g})", parity).adding_details(details)
