"""Text-to-audio models as their processors feed them: musicgen's decoder codes, pocket_tts's prompt end, vits's
refused training, and a speech encoder-decoder's sound under the name generate reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hf_neuron.compat.tiny_audio import audio_recipe, load_audio
from hf_neuron.tiny.audio.feature_extractor import tiny_feature_extractor
from hf_neuron.tiny.audio.inputs import batch_inputs
from hf_neuron.tiny.audio.outputs import decode, forward_outputs, no_training_loss, training_inputs
from hf_neuron.tiny.audio.rows import sample_rows
from hf_neuron.tiny.tokenizer import tiny_tokenizer
from hf_neuron.tiny.transformers.config import tiny_config
from hf_neuron.tiny.transformers.model_types import generative_types
from hf_neuron.tiny.transformers.models import build_model
from hf_neuron.vocabulary.datafiles import DataFileError

torch = pytest.importorskip("torch")


def _tiny(model_type: str, *, listens: bool = False) -> tuple[Any, dict[str, Any]]:
    """The tiny model of ``model_type`` in eval mode and the inputs of two rows."""
    config = tiny_config(model_type)
    model = build_model(model_type, config=config).eval()
    feature_extractor = tiny_feature_extractor(model_type, config) if listens else None
    rows = sample_rows(model_type, feature_extractor, config, 2)
    inputs = batch_inputs(model, generative_types()[model_type].auto_class, feature_extractor, tiny_tokenizer(), rows)
    return model, inputs


def test_the_trains_key_is_read_and_checked(tmp_path: Path) -> None:
    assert not audio_recipe("vits").trains and audio_recipe("whisper").trains
    bad = tmp_path / "tiny_audio.toml"
    bad.write_text('[vits]\nreason = "r"\ntrains = "no"\n')
    with pytest.raises(DataFileError, match="trains: must be true or false"):
        load_audio(bad)
    bad.write_text('[vits]\nreason = "r"\ntrains = false\ncode_labels = "frames"\n')
    with pytest.raises(DataFileError, match="takes no code labels"):
        load_audio(bad)


def test_vits_runs_and_its_training_does_not_apply_for_the_models_own_reason() -> None:
    model, inputs = _tiny("vits")
    assert all(torch.isfinite(value).all() for value in forward_outputs(model, inputs).values())
    assert no_training_loss(model) == audio_recipe("vits").reason
    with pytest.raises(NotImplementedError, match="Training of VITS is not supported"):  # what the reason says
        model(**inputs, labels=torch.zeros(2, 4, 4))
    fastspeech, _ = _tiny("fastspeech2_conformer")
    assert no_training_loss(fastspeech) is not None and "takes no labels" in str(no_training_loss(fastspeech))


@pytest.mark.parametrize("model_type", ["musicgen", "musicgen_melody"])
def test_musicgen_reads_code_rows_generates_a_waveform_and_trains(model_type: str) -> None:
    model, inputs = _tiny(model_type)
    codebooks = model.config.decoder.num_codebooks
    assert inputs["decoder_input_ids"].shape == (2 * codebooks, inputs["input_ids"].shape[1])
    assert int(inputs["decoder_input_ids"].max()) < model.config.audio_encoder.codebook_size
    with pytest.raises((TypeError, ValueError)):  # without its codes the decoder has nothing to read
        model(**{key: value for key, value in inputs.items() if key != "decoder_input_ids"})
    assert "logits" in forward_outputs(model, inputs)
    waveform = decode(model, inputs, 3).outputs["generated"]
    assert waveform.shape[0] == 2 and torch.isfinite(waveform).all()
    trained = training_inputs(model, inputs)
    assert trained["labels"].shape == (2, inputs["input_ids"].shape[1], codebooks)
    loss = model(**trained).loss
    assert torch.isfinite(loss) and loss > 0


@pytest.mark.parametrize("model_type", ["pocket_tts", "gradium_phonon_tts"])
def test_pocket_tts_prompts_end_at_the_audio_start_and_train_on_latents(model_type: str) -> None:
    model, inputs = _tiny(model_type)
    assert (inputs["input_ids"][:, -1] == model.config.audio_bos_token_id).all()
    with pytest.raises(ValueError, match="Every prompt must end with the first audio position"):
        decode(model, {**inputs, "input_ids": inputs["input_ids"][:, :-1],
                       "attention_mask": inputs["attention_mask"][:, :-1]}, 2)
    assert decode(model, inputs, 2).outputs
    trained = training_inputs(model, inputs)
    assert trained["labels"].shape[::2] == (2, model.config.latent_dim)
    assert (trained["input_ids"][:, -trained["labels"].shape[1]:] == model.config.audio_latent_token_id).all()
    loss = model.train()(**trained).loss
    assert torch.isfinite(loss)


def test_a_speech_encoder_decoder_gets_its_sound_under_the_name_generate_reads() -> None:
    model, inputs = _tiny("speech-encoder-decoder", listens=True)
    assert "input_values" in inputs and "input_features" not in inputs, "wav2vec2's main input, not the first taken"
    tokens = decode(model, inputs, 3).tokens
    assert tokens is not None and tokens.shape == (2, 3)
    renamed = {("input_features" if key == "input_values" else key): value for key, value in inputs.items()}
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        decode(model, renamed, 3)  # generate starts wav2vec2 from a token, not the sound


def test_a_model_that_samples_in_forward_gives_the_same_outputs_each_time() -> None:
    """vibevoice's tokenizer samples its latents: unseeded, two forward passes differ; forward_outputs seeds them."""
    model, inputs = _tiny("vibevoice", listens=True)
    with torch.no_grad():
        assert not torch.equal(model(**inputs).logits, model(**inputs).logits), "it samples: the check can fail"
    assert torch.equal(forward_outputs(model, inputs)["logits"], forward_outputs(model, inputs)["logits"])
    assert sum(p.numel() for p in model.parameters()) < 20_000_000, "the reviewed shrink keeps it tiny"
