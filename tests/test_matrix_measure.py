"""The element-by-element comparison takes three paths — equal bit for bit, every element finite and held, and the
general one that tells masks, infinities and NaN apart — and all three give the same result; each path's input is
here, so a path that drifts from the general one fails."""

from __future__ import annotations

import random

import pytest
import torch

from hf_neuron.matrix.scenarios.contract import EXACT, TOLERANCES, Measured, Tolerance, _measure_everywhere, measure

TOLERANCE_ROWS = [TOLERANCES["float32"], TOLERANCES["bfloat16"], EXACT, Tolerance(0.0, 1e-3)]


def _general(actual: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> Measured:
    """The general path alone, on what :func:`measure` would give it."""
    limit = torch.finfo(expected.dtype).max / 2 if expected.is_floating_point() else float("inf")
    return _measure_everywhere(actual.detach().to("cpu", torch.float64).reshape(-1),
                               expected.detach().to("cpu", torch.float64).reshape(-1), tolerance, limit)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int64])
@pytest.mark.parametrize("tolerance", TOLERANCE_ROWS)
def test_every_path_agrees_with_the_general_one(dtype: torch.dtype, tolerance: Tolerance) -> None:
    chance = random.Random(f"{dtype}{tolerance}")
    generator = torch.Generator().manual_seed(0)
    for trial in range(30):
        size = chance.randint(1, 50)
        if dtype == torch.int64:
            expected = torch.randint(0, 5, (size,), generator=generator)
            actual = expected.clone()
            if trial % 3 == 0:
                actual[0] += 1
        else:
            expected = (torch.randn(size, generator=generator) * chance.choice([1, 100, 1e-3])).to(dtype)
            noise = torch.randn(size, generator=generator) * chance.choice([0, 1e-5, 1e-3, 1e-1])
            actual = (expected.float() + noise).to(dtype)
            if trial % 7 == 0:
                expected[0] = actual[0] = float("inf")
            if trial % 11 == 0:
                actual[-1] = float("nan")
            if trial % 13 == 0:
                expected[size // 2] = 0.0
        assert measure(actual, expected, tolerance) == _general(actual, expected, tolerance)
        assert measure(expected.clone(), expected, tolerance) == _general(expected.clone(), expected, tolerance)


def test_a_difference_in_the_last_place_leaves_the_equal_path() -> None:
    expected = torch.ones(1000)
    actual = expected.clone()
    actual[700] = torch.nextafter(actual[700], torch.tensor(2.0))
    found = measure(actual, expected, EXACT)
    assert (found.outside, found.diff) == (1, float(actual[700] - 1)) and found == _general(actual, expected, EXACT)
