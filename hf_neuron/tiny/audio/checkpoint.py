"""Write tiny audio checkpoints: config, seeded weights, the tiny tokenizer, and the architecture's feature extractor.

A materialized directory loads offline with the auto class the catalog names for the type
(``AutoModelForSpeechSeq2Seq.from_pretrained(dir)``...), ``AutoTokenizer.from_pretrained(dir)`` and, for a model
with a feature extractor that builds here, ``AutoFeatureExtractor.from_pretrained(dir)`` (what
``pipeline("automatic-speech-recognition", model=dir)`` reads). The stamp says which feature extractor was saved, or
why none was. A reviewed ``speakers_file`` holds the model's speaker map (qwen2_5_omni's ``spk_dict.pt``), and a
reviewed ``generation_config`` adds to the saved generation config what the model's ``generate`` reads there (Bark's
token layout per sub-model, :func:`apply_generation_config`).
Publishing is the text checkpoints' (:func:`hf_neuron.tiny.transformers.checkpoint.publish`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_audio import audio_recipe
from hf_neuron.tiny.audio.feature_extractor import (
    FeatureExtractorUnavailableError,
    feature_extractor_class,
    tiny_feature_extractor,
    tiny_feature_extractor_kwargs,
)
from hf_neuron.tiny.tokenizer import tiny_tokenizer, tokenizer_fingerprint
from hf_neuron.tiny.transformers.checkpoint import publish
from hf_neuron.tiny.transformers.config import DIMS, TinyDims, tiny_config, tiny_config_kwargs
from hf_neuron.tiny.transformers.models import build_model

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel
    from transformers.feature_extraction_utils import FeatureExtractionMixin

__all__ = ["FEATURE_EXTRACTOR_FILE", "apply_generation_config", "content_key", "load_feature_extractor", "materialize"]

_FORMAT = 1
#: The file a saved feature extractor writes.
FEATURE_EXTRACTOR_FILE = "preprocessor_config.json"


def _feature_extractor_recipe(model_type: str, config: PreTrainedConfig) -> Any:
    try:
        return [feature_extractor_class(model_type).__name__, tiny_feature_extractor_kwargs(model_type, config)]
    except (FeatureExtractorUnavailableError, ImportError) as why:
        return str(why)


def content_key(model_type: str, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                dims: TinyDims = DIMS) -> str:
    """A hash of everything the checkpoint's files depend on."""
    import tokenizers
    import torch
    import transformers

    recipe = {
        "format": _FORMAT,
        "model_type": model_type,
        "seed": seed,
        "config": tiny_config_kwargs(model_type, base=base, dims=dims),
        "feature_extractor": _feature_extractor_recipe(model_type, tiny_config(model_type, base=base, dims=dims)),
        "reviewed": repr(audio_recipe(model_type)),
        "tokenizer": tokenizer_fingerprint(),
        "versions": [transformers.__version__, torch.__version__, tokenizers.__version__],
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, default=repr).encode()).hexdigest()


def load_feature_extractor(model_type: str, checkpoint: Path) -> FeatureExtractionMixin | None:
    """The feature extractor saved in ``checkpoint`` (with the class it was built with), or None when none was."""
    if not (Path(checkpoint) / FEATURE_EXTRACTOR_FILE).is_file():
        return None
    return feature_extractor_class(model_type).from_pretrained(checkpoint)


def apply_generation_config(model: PreTrainedModel) -> None:
    """Add the reviewed ``generation_config`` fields of ``model``'s type (``compat/tiny_audio.toml``) to its
    generation config, as its hub checkpoint's ``generation_config.json`` holds them (nothing when none is
    reviewed)."""
    from transformers import GenerationConfig

    fields = audio_recipe(model.config.model_type).generation_config
    if fields:
        current = model.generation_config.to_dict() if model.generation_config is not None else {}
        current.pop("_from_model_config", None)  # a config derived from the model's keeps none of the extra fields
        model.generation_config = GenerationConfig.from_dict({**current, **fields})


def materialize(model_type: str, out_dir: Path, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                dims: TinyDims = DIMS) -> Path:
    """Write the tiny audio ``model_type`` checkpoint to ``out_dir`` (reused when already there); from ``base`` (a
    checkpoint's config) and with ``dims`` where given (a real checkpoint's slice keeps width)."""

    def write(staging: Path) -> dict[str, Any]:
        config = tiny_config(model_type, base=base, dims=dims)
        model = build_model(model_type, seed=seed, config=config)
        apply_generation_config(model)
        model.save_pretrained(staging)
        if model.config is not config:  # the decoder of a composite: keep the model_type the auto classes know
            config.architectures = [type(model).__name__]
            config.save_pretrained(staging)
        tiny_tokenizer().save_pretrained(staging)
        speakers = audio_recipe(model_type).speakers_file
        if speakers is not None:  # a file the class's from_pretrained reads and its save_pretrained does not write
            import torch

            torch.save(dict(getattr(model, "speaker_map", {})), staging / speakers)
        try:
            feature_extractor = tiny_feature_extractor(model_type, config)
        except (FeatureExtractorUnavailableError, ImportError) as why:
            saved = f"none: {why}"
        else:
            feature_extractor.save_pretrained(staging)
            saved = type(feature_extractor).__name__
        return {"model_type": model_type, "seed": seed, "feature_extractor": saved}

    return publish(out_dir, content_key(model_type, seed=seed, base=base, dims=dims), write)
