"""A 16-bit result beyond the element-by-element bound is held to the CPU's float32 computation instead: as accurate
as the CPU's own 16-bit result passes (two computations that round their intermediate values differently, which
cancellation turns into differences far beyond a small output's bound), less accurate fails (the perturbation the
mutation tests put on every linear layer), a CPU result equal to float32 leaves nothing to compare, and one too far
from it to see a device's error is untested. Masks measure no accuracy."""

from __future__ import annotations

import pytest
import torch

from hf_neuron.matrix.scenarios.contract import TOLERANCES, as_accurate, compare


def _cancelling(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Outputs near 1 and small ones computed as the difference of values near 1, as a float64 computation and as two
    bfloat16 computations that round at different scales (the second rounds three times the values): equally
    accurate, their small outputs far apart."""
    generator = torch.Generator().manual_seed(seed)
    x = 1 + torch.rand(4096, generator=generator, dtype=torch.float64)
    y = x - torch.rand(4096, generator=generator, dtype=torch.float64) * 0.01

    def rounded(value: torch.Tensor) -> torch.Tensor:
        return value.to(torch.bfloat16).double()

    exact = torch.cat([x, x - y])
    expected = torch.cat([rounded(x), rounded(x) - rounded(y)])
    other = torch.cat([rounded(3 * x) / 3, rounded(3 * x) / 3 - rounded(3 * y) / 3])
    return other, expected, exact


def test_a_16_bit_result_as_accurate_as_the_cpus_passes_where_the_elementwise_bound_fails() -> None:
    actual, expected, exact = _cancelling(0)
    assert compare(actual, expected, "outputs", TOLERANCES["bfloat16"]).outcome == "failed"
    result = as_accurate(actual, expected, exact, "outputs")
    assert result.outcome == "passed", result.message
    assert result.parity is not None and result.parity["value"] <= 1.0


@pytest.mark.parametrize("error", [0.01, 0.005])
def test_a_16_bit_result_less_accurate_than_the_cpus_fails(error: float) -> None:
    """Every value off by ``error`` of a value near 1 (the perturbation tests/test_matrix_mutation.py puts on every
    linear layer) is beyond the accuracy of the CPU's bfloat16."""
    actual, expected, exact = _cancelling(0)
    result = as_accurate(actual + error * exact, expected, exact, "outputs")
    assert result.outcome == "failed" and "less accurate" in (result.message or ""), result.message


def test_no_accuracy_to_compare_where_the_cpu_is_exact() -> None:
    exact = torch.arange(8.0)
    result = as_accurate(exact + 2 ** -8, exact.clone(), exact, "outputs")
    assert result.outcome == "failed" and "no accuracy of its own" in (result.message or "")


def test_a_model_whose_own_16_bit_result_is_far_from_float32_is_untested() -> None:
    """The small outputs alone: the CPU's bfloat16 is more than 1% from float64 there, so no device error could be
    told from rounding (a random tiny Flux backbone is 7.4% away)."""
    actual, expected, exact = (tensor[4096:] for tensor in _cancelling(0))
    result = as_accurate(actual, expected, exact, "outputs")
    assert result.outcome == "untested" and result.gap == "checks", result.message


def _with_masks(tensors: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The three results with a model's masks beside them (Chameleon's logits of image tokens are ``finfo.min`` of
    the model's dtype): 16-bit masks on the device and the CPU, float32's in the float32 computation. The CPU's
    results in their dtypes (whose largest value tells a mask), the device's in float64 as :func:`_cancelling` made
    it (its values are not bfloat16's)."""
    masks = torch.ones(4096, dtype=torch.float64)
    limits = (torch.bfloat16, torch.bfloat16, torch.float32)
    dtypes = (torch.float64, torch.bfloat16, torch.float32)
    return tuple(torch.cat([tensor, masks * torch.finfo(limit).min]).to(dtype)
                 for tensor, limit, dtype in zip(tensors, limits, dtypes, strict=True))


@pytest.mark.parametrize("error", [0.0, 0.01])
def test_masks_measure_no_accuracy(error: float) -> None:
    """A 16-bit mask is 1.3e36 from float32's: counted, it made every ratio 1, and chameleon's bf16 logits passed with
    every linear layer 1% off. Left out, the values beside the masks are judged alone."""
    actual, expected, exact = _cancelling(0)
    actual, expected, exact = _with_masks((actual + error * exact, expected, exact))
    result = as_accurate(actual, expected, exact, "outputs")
    assert result.outcome == ("passed" if not error else "failed"), result.message
    assert result.parity is not None and result.parity["compared"] == 8192


def test_a_mask_that_differs_on_the_device_fails() -> None:
    actual, expected, exact = _with_masks(_cancelling(0))
    actual[-1] = 0.0
    result = as_accurate(actual, expected, exact, "outputs")
    assert result.outcome == "failed" and "1 of the 4096 masked" in (result.message or ""), result.message


def test_a_value_not_finite_on_the_device_fails() -> None:
    actual, expected, exact = _cancelling(0)
    actual[3] = float("nan")
    result = as_accurate(actual, expected, exact, "outputs")
    assert result.outcome == "failed" and "infinite or NaN on the device" in (result.message or ""), result.message
