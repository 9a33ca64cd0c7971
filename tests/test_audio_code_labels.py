"""Training a model that speaks in codes: target code frames of its codebook shape, laid out as its loss reads them
(``code_labels`` in compat/tiny_audio.toml); the prompt as labels is what each loss refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hf_neuron.compat.tiny_audio import audio_recipe, load_audio
from hf_neuron.tiny.audio.labels import AUDIO_FRAMES, IGNORE, code_frames, code_labels, codebook_shape
from hf_neuron.tiny.audio.outputs import training_inputs
from hf_neuron.tiny.transformers import outputs as text_outputs
from hf_neuron.tiny.transformers.models import build_model
from hf_neuron.vocabulary.datafiles import DataFileError

torch = pytest.importorskip("torch")


def _prompt() -> dict[str, Any]:
    return {"input_ids": torch.tensor([[0, 40, 41, 42, 43, 44, 45, 46], [50, 51, 52, 53, 54, 55, 56, 57]]),
            "attention_mask": torch.tensor([[0, 1, 1, 1, 1, 1, 1, 1], [1] * 8])}


def test_the_code_labels_key_is_read_and_checked(tmp_path: Path) -> None:
    assert (audio_recipe("csm").code_labels, audio_recipe("dia").code_labels) == ("frames", "channels")
    assert audio_recipe("higgs_audio_v2").code_labels == "audio-frames"
    assert audio_recipe("whisper").code_labels is None
    bad = tmp_path / "tiny_audio.toml"
    bad.write_text('[csm]\nreason = "r"\ncode_labels = "codes"\n')
    with pytest.raises(DataFileError, match="'codes' is not one of frames, channels, codebook-rows, audio-frames"):
        load_audio(bad)


def test_code_frames_depend_on_each_rows_ids_alone() -> None:
    ids = _prompt()["input_ids"]
    codes = code_frames(ids, 3, 16)
    assert codes.shape == (2, 8, 3) and int(codes.max()) < 16 and int(codes.min()) >= 0
    assert torch.equal(code_frames(ids[1:], 3, 16), codes[1:]), "a row's codes do not depend on the other rows"
    assert not torch.equal(codes[0], codes[1])
    assert code_frames(ids, 3, 16, 11).shape == (2, 11, 3)


@pytest.mark.parametrize("model_type", ["csm", "dia", "higgs_audio_v2"])
def test_a_code_speaking_model_trains_on_code_frames_and_not_on_the_prompt(model_type: str) -> None:
    model = build_model(model_type)
    count, size = codebook_shape(model.config)
    inputs = _prompt()
    try:  # the prompt as labels: csm's and dia's losses refuse its shape
        untrained = model(**text_outputs.training_inputs(model, inputs)).loss
    except (IndexError, ValueError):
        untrained = None
    assert untrained is None, "the prompt as labels gives no loss (higgs_audio_v2 ignores text labels)"
    trained = training_inputs(model, inputs)
    loss = model(**trained).loss
    assert loss is not None and torch.isfinite(loss)
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    codes = [value for key, value in trained.items() if key in ("labels", "audio_labels")]
    assert int(codes[0].max()) < size and count > 1


def test_each_layout_places_the_codes_where_its_loss_reads_them() -> None:
    from types import SimpleNamespace

    model = SimpleNamespace(config=SimpleNamespace(num_codebooks=3, codebook_size=16, audio_token_id=99,
                                                   sub_configs={}))
    frames = code_labels(model, _prompt(), "frames")["labels"]
    assert frames.shape == (2, 8, 3) and (frames[0, :2] == IGNORE).all() and (frames[1, 1:] != IGNORE).all()
    channels = code_labels(model, _prompt(), "channels")
    assert channels["decoder_input_ids"].shape == (2, 8, 3) and channels["labels"].shape == (6, 8)
    assert torch.equal(channels["labels"][3:6, :-1], channels["decoder_input_ids"][1, 1:].T), "the next frames"
    audio = code_labels(model, _prompt(), "audio-frames")
    assert (audio["input_ids"][:, -AUDIO_FRAMES:] == 99).all() and audio["audio_input_ids"].shape == (2, 4, 3)
    assert torch.equal(audio["audio_labels"], audio["audio_input_ids"])
    with pytest.raises(LookupError, match="names no codebooks"):
        codebook_shape(SimpleNamespace(vocab_size=16, sub_configs={}))  # type: ignore[arg-type]
