"""A failed comparison with the CPU of a computation that draws random numbers is untested (gap ``checks``) when the
CPU's result moves with nothing but its seed (:func:`hf_neuron.matrix.scenarios.contract.unless_random`); a
deterministic computation keeps its failure.

The random model is the tiny llama whose every ``F.linear`` output gets noise drawn as VITS and VibeVoice draw theirs:
from the CPU's generator (``torch.randn(...).to(device)``) and from the device's (``randn_like`` of a device tensor).
On the CPU both come from one stream; on neuron (the released backend's default generator per device) from two, so
the device cannot draw the CPU's numbers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from test_matrix_mutation import linear_off_by

from hf_neuron.matrix.scenarios import text, text_models
from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult, unless_random

SCENARIOS: dict[str, Callable[[CaseContext], ScenarioResult]] = {
    "forward": text.forward, "bf16": text.bf16, "generate": text.generate}


@contextlib.contextmanager
def linear_drawing(scale: float) -> Iterator[None]:
    """``torch.nn.functional.linear`` plus ``scale`` times noise drawn from the CPU's generator and from that of the
    output's device, on every device."""
    original = torch.nn.functional.linear

    def linear(input: torch.Tensor, weight: torch.Tensor, bias: Any = None) -> torch.Tensor:  # noqa: A002
        out = original(input, weight, bias)
        noise = torch.randn(out.shape, dtype=out.dtype).to(out.device) + torch.randn_like(out)
        return out + scale * noise

    torch.nn.functional.linear = linear
    try:
        yield
    finally:
        torch.nn.functional.linear = original


def _kept(result: ScenarioResult, reseeded: Callable[[int], ScenarioResult], seed: int, what: str,
          consequence: str) -> ScenarioResult:
    """``unless_random`` switched off: the comparison's own result."""
    return result


def test_a_failure_is_untested_only_when_the_cpu_moves_with_the_seed() -> None:
    failed = ScenarioResult.failed("logits differ from the CPU's")
    seeds: list[int] = []

    def moves(seed: int) -> ScenarioResult:
        seeds.append(seed)
        return ScenarioResult.failed("logits under seed 8 differ from the CPU's under seed 7")

    result = unless_random(failed, moves, 7, "forward pass", "the device draws other numbers")
    assert (result.outcome, result.gap, seeds) == ("untested", "checks", [8])
    assert result.message == ("the model's forward pass draws random numbers (logits under seed 8 differ from the "
                              "CPU's under seed 7): the device draws other numbers")
    still = unless_random(failed, lambda seed: ScenarioResult.passed(), 7, "forward pass", "")
    assert still is failed
    passed = ScenarioResult.passed()
    assert unless_random(passed, moves, 7, "forward pass", "") is passed and seeds == [8], "a pass costs no re-run"


def test_every_forward_pass_and_generation_starts_from_the_seed_it_is_given(tiny_llama: Path) -> None:
    ctx = CaseContext("llama", "decoder", "forward", "cpu", tiny_llama)
    model = text_models.load_model(ctx, "cpu")
    input_ids = text_models.sample_ids(ctx, model)
    with linear_drawing(1e-2):
        first, again = (text_models.forward_outputs(model, input_ids, seed=0)["logits"] for _ in range(2))
        other = text_models.forward_outputs(model, input_ids, seed=1)["logits"]
        scores = [text_models.greedy(model, input_ids, seed=seed).scores for seed in (0, 0, 1)]
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert torch.equal(scores[0], scores[1]) and not torch.equal(scores[0], scores[2])  # type: ignore[arg-type]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_model_that_draws_random_numbers_is_untested_where_it_failed(scenario: str, tiny_llama: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = CaseContext("llama", "decoder", scenario, "neuron", tiny_llama)
    with linear_drawing(1e-2):
        result = SCENARIOS[scenario](ctx)
        assert result.outcome == "untested" and result.gap == "checks", result.message
        assert "draws random numbers" in (result.message or "") and "under seed 1" in (result.message or "")
        monkeypatch.setattr(text, "unless_random", _kept)
        assert SCENARIOS[scenario](ctx).outcome == "failed", "without the rule the device fails the comparison"


@pytest.mark.parametrize(("model_type", "group", "scenario"), [
    *(("llama", "decoder", scenario) for scenario in SCENARIOS), ("whisper", "audio", "forward")])
def test_a_deterministic_model_on_a_perturbed_device_still_fails(model_type: str, group: str, scenario: str,
                                                                tiny_llama: Path, tmp_path: Path) -> None:
    workdir = tiny_llama if model_type == "llama" else tmp_path  # the session's llama workdir: built once
    ctx = CaseContext(model_type, group, scenario, "neuron", workdir)
    assert SCENARIOS[scenario](ctx).outcome == "passed"
    with linear_off_by(1e-2):
        result = SCENARIOS[scenario](ctx)
    assert result.outcome == "failed", result.message
    assert "draws random numbers" not in (result.message or "")
