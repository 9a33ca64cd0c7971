"""The image-text group in the matrix: the shared transformers scenarios run a vision-language model with its images
(the token ids they pass around carry the images behind them), pass on the reference device against the CPU, and
fail when the device sees different pixels."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.matrix.scenarios.contract import CaseContext
from hf_neuron.matrix.scenarios.registry import load_scenarios
from hf_neuron.matrix.scenarios.text_models import load_model, lora_targets, model_inputs, sample_ids
from hf_neuron.tiny.image_text import group as image_text
from hf_neuron.tiny.image_text.checkpoint import materialize

SCENARIOS = load_scenarios()

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run's workdir holding the tiny llava checkpoint where the runner's checkpoint cache expects it."""
    workdir = tmp_path_factory.mktemp("workdir")
    materialize("llava", workdir / "checkpoints" / "llava")
    return workdir


def _ctx(workdir: Path, scenario: str, device: str = "neuron") -> CaseContext:
    return CaseContext("llava", "image-text", scenario, device, workdir)


@pytest.mark.parametrize(("scenario", "device"), [
    ("forward", "cpu"), ("load", "neuron"), ("forward", "neuron"), ("generate", "neuron"), ("train", "neuron"),
    ("lora", "neuron"), ("bf16", "neuron"), ("save", "neuron"),
    pytest.param("compile", "neuron", marks=pytest.mark.slow),
])
def test_the_shared_scenarios_pass_on_a_vision_language_model(workdir: Path, scenario: str, device: str) -> None:
    result = SCENARIOS[scenario](_ctx(workdir, scenario, device))
    assert result.outcome == "passed", result.message
    assert result.parity is None or result.parity["value"] == 0.0, result.parity  # the CPU's kernels: exact


def test_the_inputs_carry_the_images_and_their_tokens(workdir: Path) -> None:
    model = load_model(_ctx(workdir, "forward"), "neuron")
    ids = sample_ids(_ctx(workdir, "forward"), model)
    inputs = model_inputs(model, ids)
    assert set(inputs) == {"input_ids", "attention_mask", "pixel_values"}
    assert inputs["pixel_values"].shape == (2, 3, 32, 32) and inputs["pixel_values"].device.type == "neuron"
    assert (ids == model.config.image_token_index).sum(1).tolist() == [64, 64]


def test_a_device_that_sees_other_pixels_fails_forward(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rebuild = image_text.model_inputs

    def perturbed(model, input_ids):  # type: ignore[no-untyped-def]
        inputs = rebuild(model, input_ids)
        if model.device.type == "neuron":
            inputs["pixel_values"] = inputs["pixel_values"] + 0.5
        return inputs

    monkeypatch.setattr(image_text, "model_inputs", perturbed)
    result = SCENARIOS["forward"](_ctx(workdir, "forward"))
    assert result.outcome == "failed" and result.message.startswith("logits differ from the CPU's")


def test_a_ranks_share_of_the_rows_gets_its_own_images(workdir: Path) -> None:
    model = load_model(_ctx(workdir, "ddp"), "cpu")
    ids = sample_ids(_ctx(workdir, "ddp"), model)
    with torch.no_grad():
        whole = model(**model_inputs(model, ids)).logits
        second = model(**model_inputs(model, ids.chunk(2)[1])).logits
    assert second.shape[0] == 1 and torch.equal(second[0], whole[1])


def test_ids_without_images_are_refused(workdir: Path) -> None:
    model = load_model(_ctx(workdir, "forward"), "cpu")
    with pytest.raises(LookupError, match="not made by the image-text sample_ids of this process"):
        model_inputs(model, torch.tensor([[5, 6, 7]]))


def test_lora_goes_on_the_language_model_only(workdir: Path) -> None:
    model = load_model(_ctx(workdir, "lora"), "cpu")
    targets = lora_targets(model)
    assert isinstance(targets, list) and targets
    assert all(name.startswith("model.language_model.") for name in targets)
    assert {"model.language_model.layers.0.self_attn.q_proj", "model.language_model.layers.1.mlp.down_proj"} <= set(
        targets)
