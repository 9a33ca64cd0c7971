"""The tiny config of an image-text architecture: the generic shrinker's, with the vision bookkeeping made consistent.

:func:`~hf_neuron.tiny.text.config.tiny_config_kwargs` already shrinks every sub-config (the vision tower's image size,
patch size, layers, widths) and moves special token ids inside the vocabulary. What it cannot see is a field that
lists image resolutions: ``image_grid_pinpoints``-like lists of ``[height, width]`` pairs, which must stay multiples of
the tiny tower's image size. They are rescaled here, by ``tiny image_size / full image_size``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.tiny.text.config import config_class, tiny_config_kwargs

if TYPE_CHECKING:
    from transformers import PreTrainedConfig

__all__ = ["tiny_multimodal_config", "tiny_multimodal_config_kwargs"]

_RESOLUTIONS = re.compile(r"pinpoints|resolutions")


def _pairs(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(n, int) for n in pair) for pair in value)


def _image_size(config: Any) -> int | None:
    """The vision tower's side length in ``config`` (a config or its ``to_dict``), or None."""
    values = config if isinstance(config, Mapping) else config.to_dict()
    for key, value in values.items():
        if key == "image_size":
            side = value[0] if isinstance(value, (list, tuple)) else value
            if isinstance(side, int):
                return side
        if isinstance(value, Mapping) and "vision" in key and (found := _image_size(value)) is not None:
            return found
    return None


def tiny_multimodal_config_kwargs(model_type: str) -> dict[str, Any]:
    """:func:`~hf_neuron.tiny.text.config.tiny_config_kwargs` with the image resolution lists rescaled."""
    kwargs = tiny_config_kwargs(model_type)
    try:
        full = config_class(model_type)()
    except Exception:  # noqa: BLE001 - a few classes' defaults fail their own validation: nothing to rescale from
        return kwargs
    full_side, tiny = _image_size(full), config_class(model_type)(**kwargs)
    tiny_side = _image_size(tiny)
    if not full_side or not tiny_side:
        return kwargs
    for key, value in full.to_dict().items():
        if _RESOLUTIONS.search(key) and _pairs(value) and key not in kwargs:
            kwargs[key] = [[max(tiny_side, round(n * tiny_side / full_side)) for n in pair] for pair in value]
    return kwargs


def tiny_multimodal_config(model_type: str) -> PreTrainedConfig:
    """The tiny config of ``model_type`` with eager attention."""
    return config_class(model_type)(**{**tiny_multimodal_config_kwargs(model_type), "attn_implementation": "eager"})
