"""The matrix's checks can fail: a device that computes slightly wrong fails forward, train, lora, bf16 and generate.

Every ``F.linear`` output on neuron is scaled by ``1 + eps`` (0.1% for the float32 scenarios, 1% for bfloat16): a
perturbation no real kernel difference should come near, and one the CPU re-run does not see. Each scenario must
pass unperturbed and fail perturbed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from hf_neuron.matrix.scenarios import text, training
from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult

#: scenario -> (its function, the relative error put on every linear layer's output on neuron)
PERTURBED: dict[str, tuple[Callable[[CaseContext], ScenarioResult], float]] = {
    "forward": (text.forward, 1e-3),
    "train": (training.train, 1e-3),
    "lora": (training.lora, 1e-3),
    "bf16": (text.bf16, 1e-2),
    "generate": (text.generate, 1e-3),
}


@contextlib.contextmanager
def linear_off_by(eps: float) -> Iterator[None]:
    """``torch.nn.functional.linear`` scaled by ``1 + eps`` on neuron only (what ``nn.Linear`` calls)."""
    original = torch.nn.functional.linear

    def linear(input: torch.Tensor, weight: torch.Tensor, bias: Any = None) -> torch.Tensor:  # noqa: A002
        out = original(input, weight, bias)
        return out * (1 + eps) if out.device.type == "neuron" else out

    torch.nn.functional.linear = linear
    try:
        yield
    finally:
        torch.nn.functional.linear = original


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mutation")


@pytest.mark.parametrize("scenario", list(PERTURBED))
def test_a_perturbed_device_fails_the_scenario(scenario: str, workdir: Path) -> None:
    run, eps = PERTURBED[scenario]
    ctx = CaseContext("llama", "decoder", scenario, "neuron", workdir)
    clean = run(ctx)
    assert clean.outcome == "passed", clean.message
    with linear_off_by(eps):
        perturbed = run(ctx)
    assert perturbed.outcome == "failed", f"a {eps:.1%} error of every linear layer on neuron passed {scenario}"
    assert "differ from the CPU's" in (perturbed.message or ""), perturbed.message


def test_the_perturbation_touches_neuron_only() -> None:
    x, w = torch.ones(2, 3), torch.ones(4, 3)
    with linear_off_by(0.5):
        assert torch.equal(torch.nn.functional.linear(x, w), torch.full((2, 4), 3.0))
        assert torch.equal(torch.nn.functional.linear(x.to("neuron"), w.to("neuron")).cpu(), torch.full((2, 4), 4.5))
