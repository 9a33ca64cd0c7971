"""Which generative model types the installed transformers has, the group each belongs to, the model class that
builds it and the auto class users load it through.

The groups whose library is transformers declare the auto mappings that list their types
(:data:`hf_neuron.vocabulary.groups.REGISTRY`); a type listed by two belongs to the group declared first, and within a
group to its first mapping, unless the group leaves that type's mapping to others (its ``leaves``). A mapping holds a
type only when its auto class loads the type's config: the auto class finds a config class's model type by its class
name (``_LazyAutoMapping.__contains__``), and where two model types share a config class (transformers 5.24 maps both
``evolla`` and ``EvollaModel`` to ``EvollaConfig``), it finds the last one, so ``AutoModelForImageTextToText`` refuses
``EvollaConfig`` although its mapping lists ``evolla``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from hf_neuron.vocabulary.groups import REGISTRY, Group, GroupDeclaration

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel

__all__ = ["GenerativeType", "generative_type_of", "generative_types", "model_class", "model_config", "types_of"]


class GenerativeType(NamedTuple):
    """Where a model type belongs: its group, its generative model class, and the auto class that loads it."""

    group: Group
    model_class: str
    auto_class: str


@functools.cache
def generative_types() -> Mapping[str, GenerativeType]:
    """Every generative ``model_type`` of the installed transformers whose group's auto class loads it, sorted."""
    return MappingProxyType(types_of(REGISTRY))


def types_of(registry: Sequence[GroupDeclaration]) -> dict[str, GenerativeType]:
    """The generative types the transformers groups of ``registry`` hold, walked in its order (see the module
    docstring), sorted."""
    from transformers.models.auto import modeling_auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    looked_up = {config_name: model_type for model_type, config_name in CONFIG_MAPPING_NAMES.items()}
    found: dict[str, GenerativeType] = {}
    for declared in registry:
        if declared.library != "transformers":
            continue
        left = {model_type for name in declared.leaves for model_type in getattr(modeling_auto, name)}
        for mapping_name, auto_class in declared.auto_classes:
            mapping = getattr(modeling_auto, mapping_name)
            for model_type, class_name in mapping.items():
                if model_type not in left and looked_up.get(CONFIG_MAPPING_NAMES.get(model_type, "")) in mapping:
                    found.setdefault(model_type, GenerativeType(declared.name, class_name, auto_class))
    return dict(sorted(found.items()))


def model_class(model_type: str) -> type[PreTrainedModel]:
    """The generative model class of ``model_type`` (see :func:`generative_types`)."""
    import transformers

    types = generative_types()
    if model_type not in types:
        raise KeyError(f"{model_type!r} is not a generative model type of transformers {transformers.__version__}")
    return getattr(transformers, types[model_type].model_class)


def generative_type_of(config: PreTrainedConfig) -> GenerativeType | None:
    """Where a loaded model's ``config`` belongs: its own ``model_type``'s entry, or, for the decoder of a composite
    that its auto class loads with the decoder's text config (``AutoModelForCausalLM`` loads an ``emu3`` checkpoint as
    ``Emu3ForCausalLM`` with an ``Emu3TextConfig``, whose model type ``emu3_text_model`` no auto mapping lists), the
    entry of the type whose model class takes that config class. None when neither is a generative type."""
    types = generative_types()
    if (found := types.get(config.model_type)) is not None:
        return found
    return _types_by_config_class().get(type(config).__name__)


@functools.cache
def _types_by_config_class() -> dict[str, GenerativeType]:
    import transformers

    found: dict[str, GenerativeType] = {}
    for entry in generative_types().values():
        config_class = getattr(getattr(transformers, entry.model_class), "config_class", None)
        if config_class is not None:
            found.setdefault(config_class.__name__, entry)
    return found


def model_config(model_type: str, config: PreTrainedConfig) -> PreTrainedConfig:
    """The config the model class takes: the decoder's text config when the class is the decoder of a composite."""
    wanted = getattr(model_class(model_type), "config_class", None)
    text_config = config.get_text_config(decoder=True)
    if wanted is not None and not isinstance(config, wanted) and isinstance(text_config, wanted):
        return text_config
    return config
