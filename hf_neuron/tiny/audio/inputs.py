"""Audio inputs for a tiny audio model: sounds through the architecture's feature extractor, text around them.

The inputs are what the architecture's processor would give, built from generic rules instead of per-model code. A
model that *listens* (one loaded through a speech-to-text or audio-text-to-text auto class whose ``forward`` takes a
sound) gets its feature extractor's output for each row's sound, under the names its ``forward`` takes (the features
as ``input_features``, ``input_values``, ``inputs``...; their mask as ``input_features_mask``,
``feature_attention_mask``, ``padding_mask``..., or as an encoder-decoder's ``attention_mask``), and text: an
encoder-decoder's decoder reads the row's transcript prompt (``decoder_input_ids``); a language model reads a chat
prompt in which the sound's placeholder is expanded to as many audio tokens (``config.audio_token_id`` or
``audio_token_index``, between the config's audio start and end tokens when it has them) as the model computes
audio embeddings for it (counted by calling its ``get_audio_features``); a streaming one (``streams`` in
``compat/tiny_audio.toml``), which adds each audio embedding to a prompt position, reads the row's text repeated to
one token per embedding. A model that *speaks* (text-to-waveform,
text-to-spectrogram, or a speech-to-text class whose ``forward`` takes no sound) reads the row's text, and a decoder
that reads codes and has no start frame of its own the code frames of :func:`~.labels.decoder_codes`; a prompt ends
as the model's processor ends it (:func:`~.labels.prompt_end`). A model whose ``input_ids`` hold each position's
text id and audio codes (``text_and_codes``: kyutai_speech_to_text) gets code frames of its codebook shape beside
the row's text, and the row's sound as :data:`GENERATE_ONLY` (``input_values``) for its ``generate``, which encodes
it itself. Rows share one length, so that nothing is padded.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_audio import audio_recipe
from hf_neuron.tiny.audio.labels import code_frames, codebook_shape, decoder_codes, prompt_end
from hf_neuron.tiny.tokenizer import PAD_TOKEN_ID
from hf_neuron.tiny.transformers.inputs import FIRST_ORDINARY_ID

if TYPE_CHECKING:
    import numpy as np
    import torch
    from transformers import PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerBase
    from transformers.feature_extraction_utils import FeatureExtractionMixin

__all__ = ["GENERATE_ONLY", "LISTENING_CLASSES", "TEXTS", "TEXT_TOKENS", "AudioTokens", "Row", "audio_tokens",
           "batch_inputs", "features_per_sound", "forward_model", "has_forward", "listens", "sound_inputs"]

#: The text of each row: a transcript (what a decoder writes) or what a speaking model says.
TEXTS = ("The quick brown fox jumps over the lazy dog.", "Hello, world! Good morning and good night.")
#: Text tokens of each row (all rows have as many: nothing to pad, and any subset of the rows gives the same ids).
TEXT_TOKENS = 8
#: What a listening language model is asked about each row's sound (before the row's text).
QUESTION = "Transcribe the audio."
#: The input a ``text_and_codes`` model's ``generate`` reads its sound from, which its forward pass does not take.
GENERATE_ONLY = "input_values"
#: The auto classes of models that read a sound.
LISTENING_CLASSES = ("AutoModelForSpeechSeq2Seq", "AutoModelForMultimodalLM")

_AUDIO = re.compile(r"^audio_token_(id|index)$")
_START = re.compile(r"^(audio_start|audio_bos|begin_audio|boa|start_of_audio)_token_(id|index)$")
_END = re.compile(r"^(audio_end|audio_eos|end_audio|eoa|end_of_audio)_token_(id|index)$")
#: Forward parameters that take the feature extractor's features, and those that take its mask, in preference order.
_FEATURES = ("input_features", "input_values", "audio_input_features", "inputs", "audio_values")
_MASKS = ("input_features_mask", "feature_attention_mask", "audio_attention_mask", "padding_mask")
#: Feature-extractor outputs that hold a mask.
_OUTPUT_MASKS = ("attention_mask", "padding_mask", "input_features_mask", "audio_attention_mask")


@dataclasses.dataclass(frozen=True)
class Row:
    """One row: its text and its sound (float samples at the feature extractor's rate; None for a speaking model)."""

    text: str
    sound: np.ndarray | None


@dataclasses.dataclass(frozen=True)
class AudioTokens:
    """The token ids a prompt uses around a sound: the placeholder repeated per embedding, optional start and end."""

    audio: int | None
    start: int | None = None
    end: int | None = None

    def block(self, embeddings: int) -> list[int]:
        """The ids that stand for one sound of ``embeddings`` embeddings."""
        if self.audio is None:
            return []
        return [*([self.start] if self.start is not None else []), *[self.audio] * embeddings,
                *([self.end] if self.end is not None else [])]


def _token_field(config: PreTrainedConfig, pattern: re.Pattern[str]) -> int | None:
    parts = [config, *(getattr(config, name, None) for name in getattr(config, "sub_configs", {}))]
    for part in parts:
        if part is None:
            continue
        for name, value in sorted(part.to_dict().items()):
            if pattern.match(name) and isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def audio_tokens(config: PreTrainedConfig) -> AudioTokens:
    """The audio placeholder, start and end token ids of ``config`` (None where it has none)."""
    return AudioTokens(_token_field(config, _AUDIO), _token_field(config, _START), _token_field(config, _END))


def _parameters(function: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    return inspect.signature(function).parameters


def has_forward(model: PreTrainedModel) -> bool:
    """Whether ``model``'s class defines a ``forward`` (a composite whose ``generate`` runs its sub-models one after
    another may not: BarkModel, the Qwen omni models keep ``torch.nn.Module``'s unimplemented one)."""
    import torch

    return type(model).forward is not torch.nn.Module.forward


def forward_model(model: PreTrainedModel) -> PreTrainedModel:
    """The model whose ``forward`` a forward pass of ``model`` runs: ``model`` itself, or for a composite without a
    ``forward`` (:func:`has_forward`) its first sub-model with one that takes ``input_ids``: the one that reads the
    prompt, which the composite's ``generate`` runs first (BarkModel's semantic model, the omni models' thinker)."""
    from transformers import PreTrainedModel

    if has_forward(model):
        return model
    for child in model.children():
        if isinstance(child, PreTrainedModel) and has_forward(child) and "input_ids" in _parameters(child.forward):
            return child
    raise LookupError(f"{type(model).__name__} has no forward, and none of its sub-models has one that reads "
                      "input_ids")


def listens(model: PreTrainedModel, load_class: str) -> bool:
    """Whether ``model`` (loaded through ``load_class``) reads a sound: a speech-to-text or audio-text class whose
    ``forward`` (:func:`forward_model`'s) takes one of the feature parameters."""
    return load_class in LISTENING_CLASSES and any(name in _parameters(forward_model(model).forward)
                                                   for name in _FEATURES)


def _is_encoder_decoder(model: PreTrainedModel) -> bool:
    return bool(model.config.is_encoder_decoder) or "decoder_input_ids" in _parameters(model.forward)


def _main_input(model: PreTrainedModel) -> str | None:
    """The name ``generate`` reads the sound under: an encoder-decoder's encoder's main input, else the model's."""
    encoder = getattr(model, "encoder", None) if model.config.is_encoder_decoder else None
    return getattr(encoder, "main_input_name", None) or getattr(model, "main_input_name", None)


def sound_inputs(model: PreTrainedModel, feature_extractor: FeatureExtractionMixin,
                 sounds: Sequence[np.ndarray]) -> dict[str, torch.Tensor]:
    """The feature extractor's output for ``sounds`` (on the CPU), under the names ``model.forward`` takes (the
    features under the main input name of the model or its encoder when ``forward`` takes it: what ``generate`` reads,
    as SpeechEncoderDecoderModel's wav2vec2 encoder reads ``input_values`` while its ``forward`` also takes
    ``input_features``)."""
    import torch

    rate = getattr(feature_extractor, "sampling_rate", None)
    try:
        output = feature_extractor(list(sounds), sampling_rate=rate, return_tensors="pt",  # type: ignore[operator]
                                   return_attention_mask=True)
    except TypeError:  # a feature extractor without that option
        output = feature_extractor(list(sounds), sampling_rate=rate, return_tensors="pt")  # type: ignore[operator]
    processed = {key: value for key, value in dict(output).items() if isinstance(value, torch.Tensor)}
    model_type = model.config.model_type
    model = forward_model(model)
    parameters = _parameters(model.forward)
    wanted = sorted((name for name in _FEATURES if name in parameters), key=lambda name: name != _main_input(model))
    found = [name for name in _FEATURES if name in processed]
    if not wanted or not found:
        raise LookupError(f"{type(model).__name__}.forward takes none of {_FEATURES} or "
                          f"{type(feature_extractor).__name__} gives none (it gives {sorted(processed)})")
    inputs = {wanted[0]: processed[found[0]].float() if processed[found[0]].is_floating_point()
              else processed[found[0]]}
    if not audio_recipe(model_type).mask:  # the reviewed data says its masks are not the model's
        return inputs
    named = {name: processed[name] for name in _OUTPUT_MASKS if name in processed and name in _MASKS
             and name in parameters}
    if named:  # masks the forward takes under the feature extractor's own names (each of them)
        inputs.update(named)
        return inputs
    mask = next((processed[name] for name in _OUTPUT_MASKS if name in processed), None)
    if mask is not None:
        mask_names = [name for name in _MASKS if name in parameters]
        if mask_names:
            inputs[mask_names[0]] = mask
        elif _is_encoder_decoder(model) and "attention_mask" in parameters:
            inputs["attention_mask"] = mask
    return inputs


def _feature_method(model: PreTrainedModel, given: Sequence[str] = ()) -> Callable[..., Any] | None:
    """The model's ``get_audio_features`` or its base model's: of those that name parameters, the one that names the
    most of ``given`` (the model's first on a tie), as a model's often forwards only some of them by name."""
    found = [method for part in (model, getattr(model, "model", None))
             if callable(method := getattr(part, "get_audio_features", None))]
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = [method for method in found if any(p.kind in kinds for p in _parameters(method).values())]
    if not named:
        return found[0] if found else None
    return max(named, key=lambda method: sum(name in _parameters(method) for name in given))


def _output_lengths(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> list[int] | None:
    """Audio embeddings per row from the audio encoder's ``_get_feat_extract_output_lengths`` of the mask's lengths
    (transformers' Whisper-derived encoders, whose model has no ``get_audio_features``); None without either."""
    import torch

    towers = [getattr(part, "audio_tower", None) for part in (model, getattr(model, "model", None))]
    methods = [method for tower in towers if callable(method := getattr(tower, "_get_feat_extract_output_lengths",
                                                                         None))]
    mask = next((inputs[name] for name in _MASKS if name in inputs), None)
    if not methods or mask is None:
        return None
    lengths = methods[0](mask.sum(-1))
    lengths = lengths[-1] if isinstance(lengths, tuple) else lengths  # (after the convolutions, after the pooling)
    return [int(value) for value in torch.as_tensor(lengths).reshape(-1)]


def _count(features: Any) -> int:
    import torch

    if isinstance(features, torch.Tensor):
        return features.numel()
    return sum(_count(part) for part in features)


def features_per_sound(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> list[int]:
    """How many audio embeddings the model computes for each row's sound in ``inputs`` (its :func:`sound_inputs`):
    its ``get_audio_features`` on each row alone, in units of the language model's width; without the method, its audio
    encoder's output lengths of the mask (:func:`_output_lengths`), else 0."""
    import torch

    model = forward_model(model)
    method = _feature_method(model, list(inputs))
    if method is None:
        counted = _output_lengths(model, inputs)
        return [0] * len(next(iter(inputs.values()))) if counted is None else counted
    accepted = _parameters(method)
    width = model.config.get_text_config(decoder=True).hidden_size
    counts = []
    for row in range(len(next(iter(inputs.values())))):
        given = {key: value[row : row + 1].to(model.device) for key, value in inputs.items() if key in accepted}
        given = {key: value.to(model.dtype) if value.is_floating_point() else value for key, value in given.items()}
        with torch.no_grad():
            output = method(**given)
        features = getattr(output, "pooler_output", output)
        count = _count(features)
        if count % width:
            raise ValueError(f"{type(model).__name__}.get_audio_features gave {count} values, not a whole number of "
                             f"{width}-wide embeddings")
        counts.append(count // width)
    return counts


def _prompt(tokenizer: PreTrainedTokenizerBase, question: str, block: Sequence[int]) -> list[int]:
    """A user turn holding the sound then ``question``, and the assistant's turn opened (the tiny chat format)."""
    head = tokenizer.encode("<|im_start|>user\n", add_special_tokens=False)
    tail = tokenizer.encode(f"{question}<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
    return [*head, *block, *tail]


def _in_vocabulary(model: PreTrainedModel, ids: Sequence[int]) -> list[int]:
    """``ids`` folded into the model's input vocabulary when it is smaller than the tiny tokenizer's (a
    text-to-speech model's character or phoneme table), above the special ids."""
    try:
        embeddings = forward_model(model).get_input_embeddings()
    except (AttributeError, NotImplementedError):  # a model without one input table
        embeddings = None
    size = getattr(embeddings, "num_embeddings", None)
    if not isinstance(size, int) or size <= FIRST_ORDINARY_ID or all(token < size for token in ids):
        return list(ids)
    return [token if token < size else FIRST_ORDINARY_ID + token % (size - FIRST_ORDINARY_ID) for token in ids]


def _padded(sequences: Sequence[Sequence[int]], length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ids and their attention mask, at least ``length`` long."""
    import torch

    length = max(length, *(len(ids) for ids in sequences))
    ids = torch.tensor([[PAD_TOKEN_ID] * (length - len(row)) + list(row) for row in sequences])
    mask = torch.tensor([[0] * (length - len(row)) + [1] * len(row) for row in sequences])
    return ids, mask


def batch_inputs(model: PreTrainedModel, load_class: str, feature_extractor: FeatureExtractionMixin | None,
                 tokenizer: PreTrainedTokenizerBase, rows: Sequence[Row], *, embeddings: Sequence[int] | None = None,
                 length: int = 0) -> dict[str, torch.Tensor]:
    """The forward inputs of ``rows`` for ``model`` (on the CPU; see the module docstring), text left-padded to at
    least ``length``; each row's text is cut to :data:`TEXT_TOKENS` tokens. ``embeddings`` gives each row's
    audio embedding count (default: :func:`features_per_sound`). A composite without a ``forward`` gets the inputs of
    its :func:`forward_model`."""
    model_type = model.config.model_type
    parameters = _parameters(forward_model(model).forward)
    inputs: dict[str, torch.Tensor] = {}
    encoded = [tokenizer.encode(row.text, add_special_tokens=False) for row in rows]
    texts = [_in_vocabulary(model, ids[: min(TEXT_TOKENS, *(len(ids) for ids in encoded))]) for ids in encoded]
    if feature_extractor is None and listens(model, load_class):
        raise LookupError(f"{type(model).__name__} reads a sound, and its feature extractor cannot be built here: "
                          "running it on text alone would test no audio")
    if feature_extractor is not None and listens(model, load_class):
        inputs.update(sound_inputs(model, feature_extractor, [row.sound for row in rows]))  # type: ignore[misc]
        if _is_encoder_decoder(forward_model(model)):
            ids, mask = _padded(texts, length)
            inputs.update(decoder_input_ids=ids, decoder_attention_mask=mask)
        elif audio_recipe(model_type).streams:  # one prompt token per audio embedding: the row's text, repeated
            counts = features_per_sound(model, inputs) if embeddings is None else embeddings
            ids, mask = _padded([[text[index % len(text)] for index in range(count)]
                                 for text, count in zip(texts, counts, strict=True)], length)
            inputs.update(input_ids=ids, attention_mask=mask)
        else:
            tokens = audio_tokens(forward_model(model).config)
            counts = features_per_sound(model, inputs) if embeddings is None else embeddings
            ids, mask = _padded([_prompt(tokenizer, f"{QUESTION} {row.text}", tokens.block(count))
                                 for row, count in zip(rows, counts, strict=True)], length)
            inputs.update(input_ids=ids, attention_mask=mask)
    else:
        layout = audio_recipe(model_type).code_labels
        ids, mask = _padded([[*text, *prompt_end(model, layout)] for text in texts], length)
        inputs.update(input_ids=ids, attention_mask=mask)
        if audio_recipe(model_type).text_and_codes:  # each position's text id, then its audio codes
            import torch

            inputs["input_ids"] = torch.cat([ids[..., None], code_frames(ids, *codebook_shape(model.config))], -1)
            if feature_extractor is None:
                raise LookupError(f"{type(model).__name__} encodes a sound in generate, and its feature extractor "
                                  "cannot be built here")
            rate = getattr(feature_extractor, "sampling_rate", None)
            output = feature_extractor([row.sound for row in rows], sampling_rate=rate,  # type: ignore[operator]
                                       return_tensors="pt")
            inputs[GENERATE_ONLY] = output[GENERATE_ONLY].float()  # its generate reads it; its forward does not
        inputs.update(decoder_codes(model, ids, layout))
    kept = {*parameters, *([GENERATE_ONLY] if audio_recipe(model_type).text_and_codes else [])}
    return {key: value for key, value in inputs.items() if key in kept}
