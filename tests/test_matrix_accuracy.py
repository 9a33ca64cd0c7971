"""A 16-bit result beyond the element-by-element bound is held to the CPU's float32 computation instead: as accurate
as the CPU's own 16-bit result passes (two computations that round their intermediate values differently, which
cancellation turns into differences far beyond a small output's bound), less accurate fails (the perturbation the
mutation tests put on every linear layer), a CPU result equal to float32 leaves nothing to compare, and one too far
from it to see a device's error is untested. Masks measure no accuracy. Greedy decoding is held so over the steps
all three decodings decoded from the same tokens, where the device chose the CPU's 16-bit token or float32's."""

from __future__ import annotations

import pytest
import torch

from hf_neuron.matrix.scenarios.contract import TOLERANCES, as_accurate, compare
from hf_neuron.matrix.scenarios.text import decoding_held_to_float32
from hf_neuron.tiny.groups import Decoding


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


STEPS, ROWS, VOCAB = 4, 2, 1024


def _decodings(device: list[list[int]], cpu: list[list[int]], float32: list[list[int]],
               error: float = 0.0) -> tuple[Decoding, Decoding, Decoding]:
    """Greedy decodings with these tokens ``(rows, steps)``; their scores ``(steps, rows, vocab)`` the float64
    computation, the CPU's bfloat16 and an equally accurate other rounding (:func:`_cancelling`), the device's
    ``error`` of a value near 1 off."""
    other, expected, exact = (t[:STEPS * ROWS * VOCAB // 2].repeat(2).reshape(STEPS, ROWS, VOCAB)
                              for t in _cancelling(1))
    return (Decoding("neuron", torch.tensor(device), other + error * exact),
            Decoding("cpu", torch.tensor(cpu), expected), Decoding("cpu", torch.tensor(float32), exact))


def test_a_decoding_as_accurate_passes_where_float32_chose_other_tokens_later() -> None:
    """speecht5: the device chose the CPU's bfloat16 tokens, float32 others from step 2 of row 0 and step 3 of row 1
    (a near tie moved by bfloat16 rounding); the steps up to those are held, the later ones are not."""
    cpus = [[5, 6, 7, 8], [9, 10, 11, 12]]
    result = decoding_held_to_float32(*_decodings(cpus, cpus, [[5, 6, 1, 1], [9, 10, 11, 1]]), "scores")
    assert result is not None and result.outcome == "passed", result
    assert result.parity is not None and result.parity["positions"] == (3 + 4) * VOCAB


def test_a_decoding_that_chose_float32s_token_where_the_cpus_bfloat16_did_not_passes() -> None:
    """chameleon: the device's row 1 is float32's from step 0, the CPU's bfloat16 chose another token there."""
    device = [[5, 6, 7, 8], [1, 2, 3, 4]]
    result = decoding_held_to_float32(*_decodings(device, [[5, 6, 7, 8], [9, 10, 11, 12]], device), "scores")
    assert result is not None and result.outcome == "passed", result
    assert result.parity is not None and result.parity["positions"] == (4 + 1) * VOCAB


def test_a_decoding_less_accurate_than_the_cpus_fails() -> None:
    device = [[5, 6, 7, 8], [1, 2, 3, 4]]
    result = decoding_held_to_float32(*_decodings(device, [[5, 6, 7, 8], [9, 10, 11, 12]], device, 0.01), "scores")
    assert result is not None and result.outcome == "failed", result
    assert "less accurate" in (result.message or ""), result.message


def test_a_token_neither_cpu_computation_chose_keeps_the_failure() -> None:
    cpus = [[5, 6, 7, 8], [9, 10, 11, 12]]
    assert decoding_held_to_float32(*_decodings([[5, 6, 7, 8], [9, 3, 11, 12]], cpus, cpus), "scores") is None
