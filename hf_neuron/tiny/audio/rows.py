"""The audio rows of a case: the inputs the transformers scenarios hand to audio models.

The scenarios pass token ids around (``sample_ids`` -> ``model_inputs``, or a DDP rank's share of them); a model that
listens also needs the sounds behind those ids. :func:`sample_ids` builds the case's rows (a text and a synthetic
sound each, :func:`~.inputs.batch_inputs`) and remembers, for each row's token ids, the row and its audio embedding
count; :func:`inputs_for` rebuilds the full inputs of any of those rows, alone or together, at the length they were
given with, and checks that they give back exactly the given ids. Ids that :func:`sample_ids` did not make are
refused: an audio case never silently runs on text alone.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import TYPE_CHECKING

from hf_neuron.compat.tiny_audio import audio_recipe
from hf_neuron.tiny.audio.checkpoint import load_feature_extractor
from hf_neuron.tiny.audio.feature_extractor import sampling_rate
from hf_neuron.tiny.audio.inputs import TEXTS, Row, batch_inputs, features_per_sound, listens, sound_inputs
from hf_neuron.tiny.audio.sounds import synthetic_sounds
from hf_neuron.tiny.tokenizer import PAD_TOKEN_ID
from hf_neuron.tiny.transformers.inputs import prompt_of
from hf_neuron.tiny.transformers.model_types import generative_types

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerBase
    from transformers.feature_extraction_utils import FeatureExtractionMixin

__all__ = ["inputs_for", "row_texts", "sample_ids", "sample_rows", "text_ids"]

_WORDS = " ".join(TEXTS).split()


@dataclasses.dataclass(frozen=True)
class _Made:
    model_type: str
    checkpoint: Path
    row: Row
    embeddings: int


#: Rows made in this process, by their token ids without the left padding.
_MADE: dict[tuple[int, ...], _Made] = {}


def row_texts(rows: int, seed: int) -> list[str]:
    """One text per row, each a different rotation of the words of :data:`~.inputs.TEXTS` (drawn from ``seed``)."""
    return [" ".join(_WORDS[(seed + row) % len(_WORDS):] + _WORDS[: (seed + row) % len(_WORDS)])
            for row in range(rows)]


def sample_rows(model_type: str, feature_extractor: FeatureExtractionMixin | None, config: PreTrainedConfig,
                rows: int, seed: int = 0) -> list[Row]:
    """``rows`` rows: a text each and, when the model has a feature extractor, a synthetic sound at its rate."""
    texts = row_texts(rows, seed)
    if feature_extractor is None:
        return [Row(text, None) for text in texts]
    rate = sampling_rate(feature_extractor, config)
    sounds = synthetic_sounds([audio_recipe(model_type).seconds] * rows, rate, seed=seed)
    return [Row(text, sound) for text, sound in zip(texts, sounds, strict=True)]


@functools.cache
def _parts(model_type: str, checkpoint: Path) -> tuple[FeatureExtractionMixin | None, PreTrainedTokenizerBase]:
    from transformers import AutoTokenizer

    return load_feature_extractor(model_type, checkpoint), AutoTokenizer.from_pretrained(checkpoint)


def text_ids(input_ids: torch.Tensor) -> torch.Tensor:
    """The text ids of a prompt: ``input_ids`` itself, or its first column when each position also holds audio codes
    (``(batch, sequence, 1 + codebooks)``: ``text_and_codes`` in ``compat/tiny_audio.toml``)."""
    return input_ids[..., 0] if input_ids.dim() == 3 else input_ids


def _unpadded(ids: torch.Tensor) -> tuple[int, ...]:
    values = ids.tolist()
    start = next((index for index, value in enumerate(values) if value != PAD_TOKEN_ID), len(values))
    return tuple(values[start:])


def _embeddings(model: PreTrainedModel, model_type: str, feature_extractor: FeatureExtractionMixin | None,
                rows: list[Row]) -> list[int]:
    load_class = generative_types()[model_type].auto_class
    if feature_extractor is None or not listens(model, load_class) or model.config.is_encoder_decoder:
        return [0] * len(rows)
    return features_per_sound(model, sound_inputs(model, feature_extractor, [row.sound for row in rows]))  # type: ignore[misc]


def sample_ids(model_type: str, checkpoint: Path, model: PreTrainedModel, rows: int, seed: int) -> torch.Tensor:
    """``(rows, length)`` token ids of the case's rows on the CPU (left-padded), remembered for
    :func:`inputs_for`."""
    feature_extractor, tokenizer = _parts(model_type, checkpoint)
    made = sample_rows(model_type, feature_extractor, model.config, rows, seed)
    embeddings = _embeddings(model, model_type, feature_extractor, made)
    load_class = generative_types()[model_type].auto_class
    input_ids = text_ids(prompt_of(batch_inputs(model, load_class, feature_extractor, tokenizer, made,
                                                embeddings=embeddings)))
    for ids, row, count in zip(input_ids, made, embeddings, strict=True):
        _MADE[_unpadded(ids)] = _Made(model_type, checkpoint, row, count)
    return input_ids


def _entries(input_ids: torch.Tensor) -> list[_Made]:
    made = [_MADE.get(_unpadded(ids)) for ids in text_ids(input_ids).cpu()]
    if not made or any(entry is None for entry in made):
        raise LookupError("these token ids were not made by the audio sample_ids of this process: an audio model "
                          "needs the sounds behind its prompts")
    return [entry for entry in made if entry is not None]


def inputs_for(model: PreTrainedModel, input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """The full inputs of rows that :func:`sample_ids` made, on ``model``'s device, floating inputs in its dtype."""
    import torch

    entries = _entries(input_ids)
    feature_extractor, tokenizer = _parts(entries[0].model_type, entries[0].checkpoint)
    load_class = generative_types()[entries[0].model_type].auto_class
    inputs = batch_inputs(model, load_class, feature_extractor, tokenizer, [entry.row for entry in entries],
                          embeddings=[entry.embeddings for entry in entries], length=input_ids.shape[1])
    if not torch.equal(text_ids(prompt_of(inputs)), text_ids(input_ids).cpu()):
        raise AssertionError("the audio inputs rebuilt for these rows do not give back their token ids")
    return {key: value.to(model.device, model.dtype) if value.is_floating_point() else value.to(model.device)
            for key, value in inputs.items()}
