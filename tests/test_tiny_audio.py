"""Tiny audio models: the group's types, the reviewed data's reader, synthetic sounds, feature extractors sized to
the tiny model, and a listening model that is never run on text alone."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from hf_neuron.compat.tiny_audio import SECONDS, audio_recipe, load_audio
from hf_neuron.tiny.audio.feature_extractor import tiny_feature_extractor
from hf_neuron.tiny.audio.inputs import batch_inputs
from hf_neuron.tiny.audio.rows import row_texts, sample_rows
from hf_neuron.tiny.audio.sounds import synthetic_sound
from hf_neuron.tiny.tokenizer import tiny_tokenizer
from hf_neuron.tiny.transformers.model_types import generative_types
from hf_neuron.tiny.transformers.models import build_model
from hf_neuron.vocabulary.datafiles import DataFileError

torch = pytest.importorskip("torch")


def test_the_audio_group_claims_the_speech_types_and_leaves_image_text_its_own() -> None:
    types = generative_types()
    audio = {name for name, found in types.items() if found.group == "audio"}
    assert len(audio) == 39
    assert types["whisper"].auto_class == "AutoModelForSpeechSeq2Seq"
    assert types["seamless_m4t"].model_class == "SeamlessM4TForSpeechToText", "speech-to-text first"
    assert types["qwen2_audio"].auto_class == "AutoModelForMultimodalLM"
    assert types["vits"].auto_class == "AutoModelForTextToWaveform"
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    assert not audio & set(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES), "image-text models that also hear stay out"


def test_the_reviewed_data_is_read_and_checked(tmp_path: Path) -> None:
    assert audio_recipe("speech-encoder-decoder").feature_extractor == "Wav2Vec2FeatureExtractor"
    assert audio_recipe("pop2piano").feature_extractor == "Speech2TextFeatureExtractor"
    reviewed = tmp_path / "reviewed.toml"
    reviewed.write_text('[pop2piano]\nreason = "r"\nruns = false\ngap = "inputs"\n')
    assert not load_audio(reviewed)["pop2piano"].runs and load_audio(reviewed)["pop2piano"].gap == "inputs"
    assert audio_recipe("whisper").seconds == SECONDS and audio_recipe("whisper").runs
    bad = tmp_path / "tiny_audio.toml"
    bad.write_text('[whisper]\nreason = "r"\nseconds = 0\n')
    with pytest.raises(DataFileError, match="seconds"):
        load_audio(bad)
    bad.write_text('[whisper]\nreason = "r"\nsounds = 2\n')
    with pytest.raises(DataFileError, match="unknown keys"):
        load_audio(bad)
    good = tmp_path / "good.toml"
    good.write_text('[whisper]\nreason = "r"\nseconds = 2.5\nfeature_extractor_config = { chunk_length = 3 }\n')
    assert load_audio(good)["whisper"].seconds == 2.5


def test_synthetic_sounds_are_deterministic_and_not_silence() -> None:
    sound = synthetic_sound(0.5, 16000, seed=3)
    assert sound.shape == (8000,) and sound.dtype.name == "float32"
    assert (synthetic_sound(0.5, 16000, seed=3) == sound).all()
    assert not (synthetic_sound(0.5, 16000, seed=4) == sound).all()
    assert 0.01 < float(abs(sound).mean()) < 1.0


def test_each_row_has_its_own_text() -> None:
    texts = row_texts(4, seed=0)
    assert len(set(texts)) == 4 and row_texts(4, seed=0) == texts


def test_the_feature_extractor_reads_as_many_mel_bins_as_the_tiny_encoder() -> None:
    model = build_model("whisper")
    extractor = tiny_feature_extractor("whisper", model.config)
    assert extractor.feature_size == model.config.num_mel_bins


def test_a_listening_model_without_its_feature_extractor_is_refused() -> None:
    model = build_model("whisper")
    rows = sample_rows("whisper", None, model.config, 2)
    with pytest.raises(LookupError, match="running it on text alone would test no audio"):
        batch_inputs(model, "AutoModelForSpeechSeq2Seq", None, tiny_tokenizer(), rows)


def _listening_inputs(model_type: str) -> tuple[Any, dict[str, torch.Tensor]]:
    from hf_neuron.tiny.audio.inputs import sound_inputs
    from hf_neuron.tiny.transformers.config import tiny_config

    config = tiny_config(model_type)
    model = build_model(model_type, config=config)
    extractor = tiny_feature_extractor(model_type, config)
    rows = sample_rows(model_type, extractor, config, 2)
    return model, sound_inputs(model, extractor, [row.sound for row in rows])  # type: ignore[misc,unused-ignore]


def test_every_mask_the_forward_takes_is_given_under_its_own_name() -> None:
    _, inputs = _listening_inputs("moss_transcribe_diarize")  # its audio path reads both masks
    assert {"input_features", "input_features_mask", "padding_mask"} <= set(inputs)
    assert inputs["padding_mask"].shape != inputs["input_features_mask"].shape  # samples, not frames


def test_audio_embeddings_are_counted_from_the_encoder_without_get_audio_features() -> None:
    from hf_neuron.tiny.audio.inputs import features_per_sound

    model, inputs = _listening_inputs("qwen2_audio")
    assert not callable(getattr(model, "get_audio_features", None))
    counts = features_per_sound(model, inputs)
    frames = int(inputs["feature_attention_mask"][0].sum())
    assert counts[0] == ((frames - 1) // 2 + 1 - 2) // 2 + 1  # the encoder's convolution then its pooling
    with torch.no_grad():
        model(**batch_inputs(model, "AutoModelForMultimodalLM", tiny_feature_extractor("qwen2_audio", model.config),
                             tiny_tokenizer(), sample_rows("qwen2_audio", tiny_feature_extractor(
                                 "qwen2_audio", model.config), model.config, 2)))
    inputs.pop("feature_attention_mask")
    assert features_per_sound(model, inputs) == [0, 0]  # nothing to count from


def test_a_feature_extractor_parameter_the_tiny_config_has_takes_its_value() -> None:
    from hf_neuron.tiny.audio.feature_extractor import tiny_feature_extractor_kwargs
    from hf_neuron.tiny.transformers.config import tiny_config

    config = tiny_config("qwen3_asr")
    assert config.audio_config.n_window == 50  # reviewed: the encoder's output lengths assume the hub's
    assert "n_window" not in tiny_feature_extractor_kwargs("qwen3_asr", config)  # the class's default
    config.audio_config.n_window = 16
    assert tiny_feature_extractor_kwargs("qwen3_asr", config)["n_window"] == 16


def test_a_substitute_feature_extractor_whose_mask_is_not_the_models_gives_none(tmp_path: Path) -> None:
    # granite_speech's own feature extractor needs torchaudio; the reviewed substitute makes its 160-wide stacked
    # frames, and its frame mask is not the model's input_features_mask (over audio embeddings)
    model, inputs = _listening_inputs("granite_speech")
    assert audio_recipe("granite_speech").feature_extractor == "SeamlessM4TFeatureExtractor"
    assert set(inputs) == {"input_features"} and inputs["input_features"].shape[-1] == 160
    assert model.config.encoder_config.input_dim == 160
    _, with_mask = _listening_inputs("seamless_m4t")  # the same feature extractor, whose mask its model takes
    assert "attention_mask" in with_mask
    bad = tmp_path / "tiny_audio.toml"
    bad.write_text('[granite_speech]\nreason = "r"\nmask = "no"\n')
    with pytest.raises(DataFileError, match="mask"):
        load_audio(bad)


def test_the_mel_bins_are_found_in_a_sub_config_of_a_sub_config() -> None:
    from hf_neuron.tiny.audio.feature_extractor import find_field, tiny_feature_extractor_kwargs
    from hf_neuron.tiny.transformers.config import tiny_config

    config = tiny_config("nemo_speechlm")  # audio_config holds asr_config and diarization_config
    assert getattr(config.audio_config, "num_mel_bins", None) is None
    bins = config.audio_config.asr_config.num_mel_bins
    assert find_field(config, "num_mel_bins") == bins
    assert tiny_feature_extractor_kwargs("nemo_speechlm", config)["feature_size"] == bins
    assert find_field(config, "no_such_field") is None


@pytest.mark.slow
def test_a_checkpoint_holds_the_speaker_map_its_class_loads(tmp_path: Path) -> None:
    import transformers

    from hf_neuron.tiny.audio.checkpoint import materialize

    assert audio_recipe("qwen2_5_omni").speakers_file == "spk_dict.pt"
    checkpoint = materialize("qwen2_5_omni", tmp_path / "omni")
    model_class = getattr(transformers, generative_types()["qwen2_5_omni"].model_class)
    assert model_class.from_pretrained(checkpoint).speaker_map == {}
    (checkpoint / "spk_dict.pt").unlink()  # what save_pretrained alone leaves: the class cannot load it
    with pytest.raises(OSError, match=r"spk_dict\.pt"):
        model_class.from_pretrained(checkpoint)
    bad = tmp_path / "tiny_audio.toml"
    bad.write_text('[qwen2_5_omni]\nreason = "r"\nspeakers_file = "a/b.pt"\n')
    with pytest.raises(DataFileError, match="speakers_file"):
        load_audio(bad)


@pytest.mark.slow
def test_the_tiny_vibevoice_asr_is_small_and_its_forward_draws_no_noise() -> None:
    from hf_neuron.tiny.audio.outputs import forward_outputs
    from hf_neuron.tiny.transformers.config import tiny_config

    config = tiny_config("vibevoice_asr")
    model = build_model("vibevoice_asr", config=config)
    assert sum(p.numel() for p in model.parameters()) < 2_000_000  # 690M with the hub's encoder widths
    extractor = tiny_feature_extractor("vibevoice_asr", config)
    inputs = batch_inputs(model, "AutoModelForMultimodalLM", extractor, tiny_tokenizer(),
                          sample_rows("vibevoice_asr", extractor, config, 2))
    first, second = forward_outputs(model, inputs)["logits"], forward_outputs(model, inputs)["logits"]
    assert torch.equal(first, second)
    model.config.acoustic_tokenizer_encoder_config.vae_std = 0.625  # the class's default: sampled latents
    assert not torch.equal(forward_outputs(model, inputs)["logits"], first)


def _bark() -> Any:
    from hf_neuron.tiny.transformers.config import tiny_config

    return build_model("bark", config=tiny_config("bark")).eval()


def test_a_composite_without_forward_runs_the_sub_model_that_reads_the_prompt() -> None:
    from hf_neuron.tiny.audio.inputs import forward_model, has_forward
    from hf_neuron.tiny.audio.outputs import forward_outputs

    model = _bark()
    assert not has_forward(model) and forward_model(model) is model.semantic  # the first one generate runs
    whisper = build_model("whisper")
    assert has_forward(whisper) and forward_model(whisper) is whisper
    rows = sample_rows("bark", None, model.config, 2)
    inputs = batch_inputs(model, "AutoModelForTextToWaveform", None, tiny_tokenizer(), rows)
    assert set(inputs) == {"input_ids", "attention_mask"}  # what the semantic model's forward takes
    with pytest.raises(TypeError, match="_forward_unimplemented"):  # what calling the composite itself does
        model(**inputs)
    with torch.no_grad():
        expected = model.semantic(**inputs).logits
    assert torch.equal(forward_outputs(model, inputs)["logits"], expected)
    with pytest.raises(TypeError, match="no forward to compile"):  # a compiled composite compiles nothing that runs
        forward_outputs(torch.compile(model), inputs)


def test_bark_generates_a_waveform_with_its_reviewed_generation_config(tmp_path: Path) -> None:
    from hf_neuron.tiny.audio.checkpoint import apply_generation_config
    from hf_neuron.tiny.audio.outputs import decode

    model = _bark()
    rows = sample_rows("bark", None, model.config, 2)
    inputs = batch_inputs(model, "AutoModelForTextToWaveform", None, tiny_tokenizer(), rows)
    with pytest.raises(AttributeError, match="semantic_config"):  # the model's config holds no token layout
        decode(model, inputs, 6)
    apply_generation_config(model)
    assert model.generation_config.semantic_config["max_input_semantic_length"] == inputs["input_ids"].shape[1]
    waveform = decode(model, inputs, 6).outputs["generated"]
    assert waveform.shape[0] == 2 and waveform.shape[1] > 0 and torch.isfinite(waveform).all()
    bad = tmp_path / "tiny_audio.toml"
    bad.write_text('[bark]\nreason = "r"\ngeneration_config = 3\n')
    with pytest.raises(DataFileError, match="generation_config"):
        load_audio(bad)


@pytest.mark.slow
def test_an_omni_model_hears_through_its_thinker() -> None:
    from hf_neuron.tiny.audio.inputs import features_per_sound, forward_model, sound_inputs
    from hf_neuron.tiny.audio.outputs import decode, forward_outputs
    from hf_neuron.tiny.transformers.config import tiny_config

    config = tiny_config("qwen3_omni_moe")
    model = build_model("qwen3_omni_moe", config=config).eval()
    assert forward_model(model) is model.thinker
    extractor = tiny_feature_extractor("qwen3_omni_moe", config)
    rows = sample_rows("qwen3_omni_moe", extractor, config, 2)
    inputs = batch_inputs(model, "AutoModelForMultimodalLM", extractor, tiny_tokenizer(), rows)
    assert {"input_features", "feature_attention_mask", "input_ids"} <= set(inputs)
    counts = features_per_sound(model, sound_inputs(model, extractor, [row.sound for row in rows]))  # type: ignore[misc,unused-ignore]
    audio = config.thinker_config.audio_token_id
    assert counts[0] > 0 and int((inputs["input_ids"][0] == audio).sum()) == counts[0]
    assert forward_outputs(model, inputs)["logits"].shape[:2] == inputs["input_ids"].shape
    decoded = decode(model, inputs, 4)  # the thinker's greedy decoding: what generate runs for a text answer
    assert decoded.tokens is not None and decoded.tokens.shape == (2, 4)
    config.thinker_config.audio_config.n_window = 16  # the shrinker's, without the reviewed fix
    config.thinker_config.audio_config.n_window_infer = 16
    unfixed = build_model("qwen3_omni_moe", config=config).eval()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        forward_outputs(unfixed, inputs)


def test_a_streaming_model_reads_one_prompt_token_per_audio_embedding(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    import dataclasses

    from hf_neuron.tiny.audio import inputs as audio_inputs
    from hf_neuron.tiny.audio.inputs import features_per_sound, sound_inputs
    from hf_neuron.tiny.audio.outputs import decode, forward_outputs
    from hf_neuron.tiny.transformers.config import tiny_config

    config = tiny_config("voxtral_realtime")
    model = build_model("voxtral_realtime", config=config).eval()
    extractor = tiny_feature_extractor("voxtral_realtime", config)
    rows = sample_rows("voxtral_realtime", extractor, config, 2)
    assert audio_recipe("voxtral_realtime").streams
    inputs = batch_inputs(model, "AutoModelForSpeechSeq2Seq", extractor, tiny_tokenizer(), rows)
    counts = features_per_sound(model, sound_inputs(model, extractor, [row.sound for row in rows]))  # type: ignore[misc,unused-ignore]
    assert inputs["input_ids"].shape == (2, counts[0]) and counts[0] > 6
    assert forward_outputs(model, inputs)["logits"].shape[1] == counts[0]
    decoded = decode(model, inputs, 6)  # from the first counts - 6 positions, one token per further embedding
    assert decoded.tokens is not None and decoded.tokens.shape == (2, 6)
    chat = dataclasses.replace(audio_recipe("voxtral_realtime"), streams=False)
    monkeypatch.setattr(audio_inputs, "audio_recipe", lambda model_type: chat)
    unfit = batch_inputs(model, "AutoModelForSpeechSeq2Seq", extractor, tiny_tokenizer(), rows)
    with pytest.raises(RuntimeError, match="must match"):  # a chat prompt longer than the sound's embeddings
        forward_outputs(model, unfit)
    bad = tmp_path / "tiny_audio.toml"
    bad.write_text('[voxtral_realtime]\nreason = "r"\nstreams = "yes"\n')
    with pytest.raises(DataFileError, match="streams"):
        load_audio(bad)


@pytest.mark.slow
def test_a_model_that_reads_text_and_codes_gets_both_and_generates_from_its_sound(monkeypatch: pytest.MonkeyPatch,
                                                                                   tmp_path: Path) -> None:
    import dataclasses

    from hf_neuron.tiny.audio import inputs as audio_inputs
    from hf_neuron.tiny.audio.inputs import GENERATE_ONLY
    from hf_neuron.tiny.audio.outputs import decode, forward_outputs, training_inputs
    from hf_neuron.tiny.transformers.config import tiny_config

    name = "kyutai_speech_to_text"
    config = tiny_config(name)
    assert config.codec_config.num_quantizers == config.num_codebooks  # reviewed: its generate copies one per code
    model = build_model(name, config=config).eval()
    extractor = tiny_feature_extractor(name, config)
    rows = sample_rows(name, extractor, config, 2)
    inputs = batch_inputs(model, "AutoModelForSpeechSeq2Seq", extractor, tiny_tokenizer(), rows)
    assert inputs["input_ids"].shape[::2] == (2, 1 + config.num_codebooks) and GENERATE_ONLY in inputs
    assert forward_outputs(model, inputs)["logits"].shape[:2] == inputs["input_ids"].shape[:2]
    assert torch.equal(training_inputs(model, inputs)["labels"], inputs["input_ids"][..., 0])
    assert GENERATE_ONLY not in training_inputs(model, inputs)
    decoded = decode(model, inputs, 4)  # from the sound alone, through its codec
    assert decoded.tokens is not None and decoded.tokens.shape == (2, 4)
    text_only = dataclasses.replace(audio_recipe(name), text_and_codes=False)
    monkeypatch.setattr(audio_inputs, "audio_recipe", lambda model_type: text_only)
    with pytest.raises(RuntimeError, match="must match"):  # text ids alone: its embeddings add a codes axis
        forward_outputs(model, batch_inputs(model, "AutoModelForSpeechSeq2Seq", extractor, tiny_tokenizer(), rows))
    bad = tmp_path / "tiny_audio.toml"
    bad.write_text(f'[{name}]\nreason = "r"\ntext_and_codes = 1\n')
    with pytest.raises(DataFileError, match="text_and_codes"):
        load_audio(bad)


def test_pop2piano_hears_log_mel_features_of_its_width_and_conditions_on_a_composer() -> None:
    from hf_neuron.tiny.audio.checkpoint import apply_generation_config
    from hf_neuron.tiny.audio.outputs import decode, forward_outputs
    from hf_neuron.tiny.transformers.config import tiny_config

    config = tiny_config("pop2piano")
    model = build_model("pop2piano", config=config)
    extractor = tiny_feature_extractor("pop2piano", config)
    rows = sample_rows("pop2piano", extractor, config, 2)
    inputs = batch_inputs(model, "AutoModelForSpeechSeq2Seq", extractor, tiny_tokenizer(), rows)
    features = inputs["input_features"]
    assert features.shape[0] == 2 and features.shape[2] == config.d_model, "its encoder reads them as embeddings"
    assert torch.isfinite(forward_outputs(model, inputs)["logits"]).all()
    reversed_rows = [dataclasses.replace(row, sound=row.sound[::-1].copy()) for row in rows]  # another sound
    assert not torch.equal(batch_inputs(model, "AutoModelForSpeechSeq2Seq", extractor, tiny_tokenizer(),
                                        reversed_rows)["input_features"], features), "the features are the sound's"
    with pytest.raises(ValueError, match="composer_to_feature_token"):  # the model's config maps no composer
        decode(model, inputs, 4)
    apply_generation_config(model)
    assert decode(model, inputs, 4).tokens.shape == (2, 4)
