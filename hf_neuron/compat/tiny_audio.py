"""The reviewed per-architecture data of the audio group: ``compat/tiny_audio.toml``.

Each table is named for a ``model_type`` and holds what the generic rules of :mod:`hf_neuron.tiny.audio` cannot know,
with a ``reason`` (required: why, precise enough to re-check on a transformers update):

- ``feature_extractor``: the transformers feature extractor class to use instead of the architecture's own (when that
  one cannot be built here, e.g. it needs torchaudio or librosa, and another makes the same inputs);
- ``feature_extractor_config``: keyword arguments merged into the tiny feature extractor's;
- ``mask = false``: the model gets no mask from the feature extractor (a substitute's frame mask that is not the mask
  the model's ``forward`` takes under that name: granite_speech's ``input_features_mask`` masks audio embeddings);
- ``speakers_file``: the file name under which the checkpoint holds the model's ``speaker_map`` (``torch.save`` of
  the dict; empty for a tiny model), for a class whose ``from_pretrained`` reads it and whose ``save_pretrained``
  does not write it (qwen2_5_omni's ``spk_dict.pt``);
- ``code_labels``: how a speaking model's training loss takes its target audio codes (the harness builds codes of the
  model's codebook shape, :mod:`hf_neuron.tiny.audio.labels`), one of :data:`CODE_LABELS`: ``"frames"`` (``labels``
  of ``(batch, sequence, codebooks)``, a code frame per prompt position: csm), ``"channels"`` (code frames as
  ``decoder_input_ids`` of ``(batch, steps, codebooks)`` and the next frames as ``labels`` of
  ``(batch * codebooks, steps)``: dia), ``"codebook-rows"`` (code frames as ``decoder_input_ids`` of one row per
  codebook, ``(batch * codebooks, steps)``, in the forward pass too, and the next frames as ``labels`` of
  ``(batch, steps, codebooks)``: musicgen), ``"audio-frames"`` (the prompt ends in audio placeholders whose code frames
  are ``audio_input_ids`` and ``audio_labels``: higgs_audio_v2), ``"latent-frames"`` (every prompt ends at the audio
  start, ``audio_bos_token_id``, in every scenario, as the model's processor ends it; for training, latent positions
  follow it, with target latents of ``(batch, frames, latent_dim)`` as ``labels``: pocket_tts); without it, the
  prompt is the labels;
- ``trains = false``: the model's ``forward`` takes ``labels`` but computes no training loss (the reason quotes what it
  does instead, e.g. raises); its training scenarios do not apply, with that reason;
- ``generation_config``: fields of the checkpoint's generation config (``generation_config.json``) that the model's
  config does not hold and its ``generate`` reads, sized to the tiny model (BarkModel's per-sub-model token layout:
  ``semantic_config``, ``coarse_acoustics_config``, ``fine_acoustics_config``, as the hub's checkpoint ships them);
- ``streams = true``: the model adds its audio embeddings to the prompt's embeddings position by position (a
  streaming transcriber: voxtral_realtime), so its prompt has exactly one token per audio embedding, and its
  ``generate`` reads one more embedding per new token: decoding starts from the prompt's first positions and writes
  one token for each embedding after them;
- ``text_and_codes = true``: the model's ``forward`` reads ``input_ids`` of ``(batch, sequence, 1 + codebooks)``, each
  position's text id then its audio codes, which its ``generate`` makes itself from the sound (``input_values``,
  through its codec, one frame per step: kyutai_speech_to_text); the forward pass and training get codes of the
  model's codebook shape (:func:`hf_neuron.tiny.audio.labels.code_frames`) beside the row's text, the text as
  labels, and greedy decoding reads the row's sound alone;
- ``seconds``: how long each row's synthetic sound is (default :data:`SECONDS`), when the model needs more or less;
- ``runs = false``: the architecture cannot run as a tiny audio model here (the reason says why), and with it an
  optional ``gap`` when the cause is the harness's (``gap = "inputs"``: the model needs an input the harness cannot
  build); the matrix then records the cases that fail the same way on the CPU as untested, with the reason.

Config fixes of the tiny model itself stay in ``compat/tiny_overrides.toml`` (:mod:`~.tiny_overrides`)::

    [whisper]
    reason = "..."
    feature_extractor_config = { chunk_length = 1 }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from hf_neuron.compat.files import COMPAT_DIR
from hf_neuron.compat.reviewed_tables import check_table, load_tables
from hf_neuron.vocabulary.datafiles import DataFileError
from hf_neuron.vocabulary.gaps import Gap

__all__ = ["AUDIO_PATH", "CODE_LABELS", "SECONDS", "AudioRecipe", "CodeLabels", "audio_recipe", "load_audio"]

AUDIO_PATH = COMPAT_DIR / "tiny_audio.toml"
#: Seconds of synthetic sound per row, unless a table says otherwise.
SECONDS = 1.0

#: How a speaking model's loss takes target audio codes (see the module docstring).
CodeLabels = Literal["frames", "channels", "codebook-rows", "audio-frames", "latent-frames"]
CODE_LABELS: tuple[CodeLabels, ...] = get_args(CodeLabels)

_KEYS = {"code_labels", "feature_extractor", "feature_extractor_config", "generation_config", "mask", "seconds",
         "speakers_file", "streams", "text_and_codes", "trains"}


@dataclasses.dataclass(frozen=True)
class AudioRecipe:
    """What the data file says of one architecture (the defaults when it says nothing)."""

    model_type: str
    reason: str = ""
    feature_extractor: str | None = None
    feature_extractor_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    seconds: float = SECONDS
    mask: bool = True
    speakers_file: str | None = None
    runs: bool = True
    gap: Gap | None = None
    code_labels: CodeLabels | None = None
    trains: bool = True
    generation_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    streams: bool = False
    text_and_codes: bool = False


def _parse(path: Path, model_type: str, table: Any) -> AudioRecipe:
    reviewed = check_table(path, model_type, table, _KEYS)
    feature_extractor = table.get("feature_extractor")
    if feature_extractor is not None and (not isinstance(feature_extractor, str) or not feature_extractor):
        raise DataFileError(path, "must be a transformers class name", table=model_type, key="feature_extractor")
    config = table.get("feature_extractor_config", {})
    if not isinstance(config, dict):
        raise DataFileError(path, "must be a table", table=model_type, key="feature_extractor_config")
    seconds = table.get("seconds", SECONDS)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 60:
        raise DataFileError(path, "must be a number of seconds above 0, at most 60", table=model_type,
                              key="seconds")
    mask = table.get("mask", True)
    if not isinstance(mask, bool):
        raise DataFileError(path, "must be true or false", table=model_type, key="mask")
    speakers = table.get("speakers_file")
    if speakers is not None and (not isinstance(speakers, str) or not speakers or "/" in speakers):
        raise DataFileError(path, "must be a file name", table=model_type, key="speakers_file")
    code_labels = table.get("code_labels")
    if code_labels is not None and code_labels not in CODE_LABELS:
        raise DataFileError(path, f"{code_labels!r} is not one of {', '.join(CODE_LABELS)}", table=model_type,
                            key="code_labels")
    trains = table.get("trains", True)
    if not isinstance(trains, bool):
        raise DataFileError(path, "must be true or false", table=model_type, key="trains")
    if not trains and code_labels is not None:
        raise DataFileError(path, "a model that computes no training loss takes no code labels", table=model_type,
                            key="trains")
    generation = table.get("generation_config", {})
    if not isinstance(generation, dict) or ("generation_config" in table and not generation):
        raise DataFileError(path, "must be a non-empty table of generation config fields", table=model_type,
                            key="generation_config")
    streams = table.get("streams", False)
    if not isinstance(streams, bool):
        raise DataFileError(path, "must be true or false", table=model_type, key="streams")
    text_and_codes = table.get("text_and_codes", False)
    if not isinstance(text_and_codes, bool):
        raise DataFileError(path, "must be true or false", table=model_type, key="text_and_codes")
    return AudioRecipe(model_type, reviewed.reason, feature_extractor, config, float(seconds), mask, speakers,
                       reviewed.runs, reviewed.gap, code_labels, trains, generation, streams, text_and_codes)


def load_audio(path: Path | None = None) -> dict[str, AudioRecipe]:
    """The reviewed entries by ``model_type`` (empty when the file does not exist)."""
    return load_tables(AUDIO_PATH if path is None else Path(path), _parse)


def audio_recipe(model_type: str, path: Path | None = None) -> AudioRecipe:
    """The entry of ``model_type``, or the defaults (nothing reviewed) when the file has none."""
    return load_audio(path).get(model_type, AudioRecipe(model_type))
