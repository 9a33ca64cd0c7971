"""Which generative model types the installed transformers has, and the model class that builds each one.

The class of a ``model_type`` comes from transformers' auto mappings, first match in :data:`AUTO_MAPPINGS` order:
causal LM (group ``decoder``), then sequence-to-sequence LM (``encoder-decoder``), then image-text-to-text
(``image-text``). A mapping holds a type only when its auto class loads the type's config: the auto class finds a
config class's model type by its class name (``_LazyAutoMapping.__contains__``), and where two model types share a
config class (transformers 5.24 maps both ``evolla`` and ``EvollaModel`` to ``EvollaConfig``), it finds the last one,
so ``AutoModelForImageTextToText`` refuses ``EvollaConfig`` although its mapping lists ``evolla``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from hf_neuron.compat.catalog import Group

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel

__all__ = ["AUTO_MAPPINGS", "generative_types", "model_class", "model_config"]

#: The transformers auto mapping each catalog group is read from, in priority order.
AUTO_MAPPINGS: dict[Group, str] = {
    "decoder": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "encoder-decoder": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "image-text": "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
}


@functools.cache
def generative_types() -> Mapping[str, tuple[str, str]]:
    """Every generative ``model_type`` of the installed transformers whose group's auto class loads it -> ``(group,
    model class name)``, sorted."""
    from transformers.models.auto import modeling_auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    looked_up = {config_name: model_type for model_type, config_name in CONFIG_MAPPING_NAMES.items()}
    found: dict[str, tuple[str, str]] = {}
    for group, mapping_name in AUTO_MAPPINGS.items():
        mapping = getattr(modeling_auto, mapping_name)
        for model_type, class_name in mapping.items():
            if looked_up.get(CONFIG_MAPPING_NAMES.get(model_type, "")) in mapping:
                found.setdefault(model_type, (group, class_name))
    return MappingProxyType(dict(sorted(found.items())))


def model_class(model_type: str) -> type[PreTrainedModel]:
    """The generative model class of ``model_type`` (see :data:`AUTO_MAPPINGS`)."""
    import transformers

    types = generative_types()
    if model_type not in types:
        raise KeyError(f"{model_type!r} is not a generative model type of transformers {transformers.__version__}")
    return getattr(transformers, types[model_type][1])


def model_config(model_type: str, config: PreTrainedConfig) -> PreTrainedConfig:
    """The config the model class takes: the decoder's text config when the class is the decoder of a composite."""
    wanted = getattr(model_class(model_type), "config_class", None)
    text_config = config.get_text_config(decoder=True)
    if wanted is not None and not isinstance(config, wanted) and isinstance(text_config, wanted):
        return text_config
    return config
