"""The audio group in the matrix: the shared transformers scenarios run a speech-to-text model with its sounds (the
token ids they pass around carry the sounds behind them), a text-to-speech model with what it makes, pass on the
reference device against the CPU, and fail when the device hears other sounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.matrix.scenarios.contract import CaseContext
from hf_neuron.matrix.scenarios.registry import load_scenarios
from hf_neuron.matrix.scenarios.text_models import load_model, model_inputs, sample_ids
from hf_neuron.tiny.audio import group as audio
from hf_neuron.tiny.audio.checkpoint import materialize

SCENARIOS = load_scenarios()

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run's workdir holding the tiny whisper and fastspeech2_conformer checkpoints where the runner's checkpoint
    cache expects them."""
    workdir = tmp_path_factory.mktemp("workdir")
    for model_type in ("whisper", "fastspeech2_conformer"):
        materialize(model_type, workdir / "checkpoints" / model_type)
    return workdir


def _ctx(workdir: Path, scenario: str, device: str = "neuron", model_type: str = "whisper") -> CaseContext:
    return CaseContext(model_type, "audio", scenario, device, workdir)


@pytest.mark.parametrize(("scenario", "device"), [
    ("forward", "cpu"), ("load", "neuron"), ("forward", "neuron"), ("generate", "neuron"), ("train", "neuron"),
    ("lora", "neuron"), ("bf16", "neuron"), ("save", "neuron"),
])
def test_the_shared_scenarios_pass_on_a_speech_to_text_model(workdir: Path, scenario: str, device: str) -> None:
    result = SCENARIOS[scenario](_ctx(workdir, scenario, device))
    assert result.outcome == "passed", result.message


def test_the_inputs_carry_the_sounds_and_the_transcript(workdir: Path) -> None:
    model = load_model(_ctx(workdir, "forward"), "neuron")
    ids = sample_ids(_ctx(workdir, "forward"), model)
    inputs = model_inputs(model, ids)
    assert {"input_features", "decoder_input_ids"} <= set(inputs)
    assert inputs["input_features"].device.type == "neuron"
    assert inputs["input_features"].shape[:2] == (2, model.config.num_mel_bins)
    assert torch.equal(inputs["decoder_input_ids"].cpu(), ids)
    assert not torch.equal(inputs["input_features"][0], inputs["input_features"][1])  # each row its own sound


def test_a_device_that_hears_other_sounds_fails_forward(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rebuild = audio.model_inputs

    def perturbed(model, input_ids):  # type: ignore[no-untyped-def]
        inputs = rebuild(model, input_ids)
        if model.device.type == "neuron":
            inputs["input_features"] = inputs["input_features"] + 0.5
        return inputs

    monkeypatch.setattr(audio, "model_inputs", perturbed)
    result = SCENARIOS["forward"](_ctx(workdir, "forward"))
    assert result.outcome == "failed" and result.message.startswith("logits differ from the CPU's"), result.message


def test_a_ranks_share_of_the_rows_gets_its_own_sounds(workdir: Path) -> None:
    model = load_model(_ctx(workdir, "ddp"), "cpu")
    ids = sample_ids(_ctx(workdir, "ddp"), model)
    with torch.no_grad():
        whole = model(**model_inputs(model, ids)).logits
        second = model(**model_inputs(model, ids.chunk(2)[1])).logits
    assert second.shape[0] == 1 and torch.allclose(second[0], whole[1], atol=1e-5)


def test_ids_without_sounds_are_refused(workdir: Path) -> None:
    model = load_model(_ctx(workdir, "forward"), "cpu")
    with pytest.raises(LookupError, match="not made by the audio sample_ids of this process"):
        model_inputs(model, torch.tensor([[5, 6, 7]]))


def test_a_text_to_speech_model_compares_its_spectrogram_and_has_no_training_loss(workdir: Path) -> None:
    tts = "fastspeech2_conformer"
    model = load_model(_ctx(workdir, "forward", model_type=tts), "cpu")
    ids = sample_ids(_ctx(workdir, "forward", model_type=tts), model)
    outputs = audio.forward_outputs(model, model_inputs(model, ids))
    assert "spectrogram" in outputs and "logits" not in outputs
    assert audio.no_training_loss(model) == ("FastSpeech2ConformerModel.forward takes no labels: it computes no "
                                             "training loss")
    result = SCENARIOS["forward"](_ctx(workdir, "forward", model_type=tts))
    assert result.outcome == "passed", result.message
    result = SCENARIOS["train"](_ctx(workdir, "train", model_type=tts))
    assert result.outcome == "skipped" and "takes no labels" in result.message


def test_a_speech_to_text_model_has_a_training_loss(workdir: Path) -> None:
    assert audio.no_training_loss(load_model(_ctx(workdir, "train"), "cpu")) is None
