"""The tiny feature extractor of an audio architecture: its own class, sized to the tiny model.

The class comes from transformers' feature-extractor mapping, else from the architecture's processor (the class it
names for its ``feature_extractor`` or ``audio_processor``), or from ``compat/tiny_audio.toml``. Its defaults stay but
for what the tiny config also says: the number of mel bins (or other features per frame) the audio encoder reads
(``num_mel_bins``, ``n_mels``, ``input_feat_per_channel``... of the config or its audio sub-config), and the sampling
rate where the config has one, and any other whole-number parameter that the config also has under its name (a
window the encoder chunks its features by, such as qwen3_asr's ``n_window``). The reviewed
``feature_extractor_config`` is merged last.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_audio import audio_recipe

if TYPE_CHECKING:
    from transformers import PreTrainedConfig
    from transformers.feature_extraction_utils import FeatureExtractionMixin

__all__ = ["FeatureExtractorUnavailableError", "feature_extractor_class", "find_field", "sampling_rate",
           "tiny_feature_extractor", "tiny_feature_extractor_kwargs"]

#: Sampling rate of a model without a feature extractor (a text-to-speech model that reads no sound).
DEFAULT_SAMPLING_RATE = 16000
#: Config fields that say how many features per frame the audio encoder reads, in order of preference.
_FEATURE_FIELDS = ("num_mel_bins", "n_mels", "input_feat_per_channel", "mel_bins", "num_mels", "feature_size",
                   "input_dim")
#: Feature-extractor parameters that hold the features per frame.
_SIZE_PARAMETERS = ("feature_size", "num_mel_bins", "n_mels")
_AUDIO_CONFIG = re.compile(r"audio|encoder|speech|acoustic|codec")


class FeatureExtractorUnavailableError(LookupError):
    """The architecture has no feature extractor that can be built here; the message says why."""


def _configs(config: Any) -> Iterator[Any]:
    """The audio-like sub-configs first, then the others, then the config itself; each sub-config after its own
    sub-configs, in the same order (nemo_speechlm's audio_config holds its encoders' configs)."""
    subs = [(name, getattr(config, name, None)) for name in getattr(config, "sub_configs", {})]
    subs = [(name, sub) for name, sub in subs if sub is not None]
    for sub in [sub for name, sub in subs if _AUDIO_CONFIG.search(name)] + [
            sub for name, sub in subs if not _AUDIO_CONFIG.search(name)]:
        yield from _configs(sub)
    yield config


def find_field(config: PreTrainedConfig, name: str) -> Any:
    """The first value of field ``name`` in the audio sub-configs, the other sub-configs, then the config."""
    for part in _configs(config):
        value = getattr(part, name, None)
        if value is not None:
            return value
    return None


def feature_extractor_class(model_type: str) -> type[FeatureExtractionMixin]:
    """The feature extractor class of ``model_type``: the reviewed one, else transformers' (its mapping's, else its
    processor's); :class:`FeatureExtractorUnavailableError` when it has none or it needs a library this machine
    lacks."""
    import transformers
    from transformers.models.auto.feature_extraction_auto import FEATURE_EXTRACTOR_MAPPING_NAMES
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    from transformers.utils.import_utils import DummyObject

    name = audio_recipe(model_type).feature_extractor or FEATURE_EXTRACTOR_MAPPING_NAMES.get(model_type)
    if name is None and (processor := PROCESSOR_MAPPING_NAMES.get(model_type)) is not None:
        cls = getattr(transformers, processor, None)
        if cls is not None and not isinstance(cls, DummyObject):
            name = getattr(cls, "feature_extractor_class", None) or getattr(cls, "audio_processor_class", None)
    if not isinstance(name, str):
        raise FeatureExtractorUnavailableError(f"transformers {transformers.__version__} maps {model_type} to no "
                                               "feature extractor")
    found = getattr(transformers, name, None)
    if found is None or isinstance(found, DummyObject):
        backends = ", ".join(sorted(getattr(found, "_backends", ()))) or "a library this machine lacks"
        raise FeatureExtractorUnavailableError(f"{name} cannot be built here: it needs {backends}")
    return found  # type: ignore[no-any-return,unused-ignore]


def _parameters(cls: type) -> Mapping[str, inspect.Parameter]:
    return inspect.signature(cls).parameters


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def tiny_feature_extractor_kwargs(model_type: str, config: PreTrainedConfig) -> dict[str, Any]:
    """The keyword arguments of the tiny feature extractor (see the module docstring)."""
    cls = feature_extractor_class(model_type)
    parameters = _parameters(cls)
    kwargs: dict[str, Any] = {}
    features = next((value for name in _FEATURE_FIELDS if isinstance(value := find_field(config, name), int)
                     and not isinstance(value, bool)), None)
    for name in _SIZE_PARAMETERS:
        default = parameters[name].default if name in parameters else None
        if isinstance(default, int) and default > 1 and features is not None and features > 1:
            kwargs[name] = features  # 1 is a raw waveform: its one channel is no mel bin
    rate = find_field(config, "sampling_rate")
    if "sampling_rate" in parameters and isinstance(rate, int) and rate > 0:
        kwargs["sampling_rate"] = rate
    for name, parameter in parameters.items():  # a whole-number parameter the tiny config also has (qwen3_asr's
        value = find_field(config, name)         # n_window): the encoder's value, which the shrinker may have cut
        if (name not in kwargs and _whole(parameter.default) and _whole(value) and value > 0
                and value != parameter.default):
            kwargs[name] = value
    return {**kwargs, **audio_recipe(model_type).feature_extractor_config}


def tiny_feature_extractor(model_type: str, config: PreTrainedConfig) -> FeatureExtractionMixin:
    """The architecture's feature extractor, sized to ``config`` (the tiny config)."""
    return feature_extractor_class(model_type)(**tiny_feature_extractor_kwargs(model_type, config))


def sampling_rate(feature_extractor: FeatureExtractionMixin | None, config: PreTrainedConfig) -> int:
    """The sampling rate of the sounds a model reads or writes: its feature extractor's, else its config's, else
    :data:`DEFAULT_SAMPLING_RATE`."""
    for value in (getattr(feature_extractor, "sampling_rate", None), find_field(config, "sampling_rate")):
        if isinstance(value, int) and value > 0:
            return value
    return DEFAULT_SAMPLING_RATE
