"""The first-step check of the training scenarios (``train``, ``lora``, text and diffusion): the weights after one
AdamW step may differ from the CPU's only by what the gradients' accepted differences move them. A gradient within
tolerance of zero may take either sign (AdamW then moves its weight by +lr or -lr); any other difference fails."""

from __future__ import annotations

import pytest

from hf_neuron.matrix.scenarios.training import LEARNING_RATE, adamw, first_step_parity

torch = pytest.importorskip("torch")


def _stepped(gradient: torch.Tensor, perturb: float = 0.0) -> torch.nn.Module:
    """A linear layer from fixed weights after one AdamW step on ``gradient`` (its weight's), its weight then moved
    by ``perturb`` at element [0, 0]."""
    layer = torch.nn.Linear(4, 2, bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.arange(8, dtype=torch.float32).reshape(2, 4) / 10)
    layer.weight.grad = gradient.clone()
    adamw(layer).step()
    with torch.no_grad():
        layer.weight[0, 0] += perturb
    return layer


GRADIENT = torch.tensor([[1e-6, 0.5, -0.25, 0.125], [2.0, -1.0, 0.75, -0.5]])
LOSS = torch.tensor(1.0)


def _check(device_gradient: torch.Tensor, perturb: float = 0.0) -> str:
    device, cpu = _stepped(device_gradient, perturb), _stepped(GRADIENT)
    return first_step_parity(device, cpu, LOSS, LOSS, "cpu").outcome


def test_the_same_step_passes() -> None:
    assert _check(GRADIENT) == "passed"


def test_a_gradient_within_tolerance_of_zero_may_take_the_other_sign() -> None:
    flipped = GRADIENT.clone()
    flipped[0, 0] = -1e-6  # within the gradient tolerance: AdamW moves this weight by -lr instead of +lr
    stepped, reference = _stepped(flipped).weight.detach(), _stepped(GRADIENT).weight.detach()
    assert abs(float(stepped[0, 0] - reference[0, 0])) == pytest.approx(2 * LEARNING_RATE, rel=2e-2)
    assert _check(flipped) == "passed"


def test_a_weight_moved_past_what_its_gradient_explains_fails() -> None:
    flipped = GRADIENT.clone()
    flipped[0, 0] = -1e-6
    # Past the 2 lr the sign flip explains, at the very element whose gradient is near zero:
    assert _check(flipped, perturb=3 * LEARNING_RATE) == "failed"
    # Where the gradient is clear, half of lr is already too much (the float32 tolerance there is 1e-4):
    assert _check(GRADIENT, perturb=LEARNING_RATE / 2) == "failed"


def test_a_gradient_off_by_more_than_its_tolerance_fails_before_the_weights() -> None:
    off = GRADIENT.clone()
    off[1, 0] = 2.01
    result = first_step_parity(_stepped(off), _stepped(GRADIENT), LOSS, LOSS, "cpu")
    assert result.outcome == "failed" and "gradient of weight" in str(result.message)
