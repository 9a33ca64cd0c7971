"""The tiny config of an image-text architecture: the generic shrinker's, with the vision bookkeeping made consistent.

:func:`~hf_neuron.tiny.transformers.config.tiny_config_kwargs` already shrinks every sub-config (the vision tower's
image size, patch size, layers, widths) and moves special token ids inside the vocabulary. What it cannot see is a
field that lists image resolutions: ``image_grid_pinpoints``-like lists of ``[height, width]`` pairs, which must
stay multiples of the tiny tower's image size. They are rescaled here, by ``tiny image_size / full image_size`` (or,
when they are no multiples of the full image size, by ``tiny image_size /`` their greatest common divisor). The
hidden states a projector reads (``vision_feature_layer(s)``, e.g. ``[-2, -5, -8, -11, 6]``) are pointed inside the
tiny tower. And an image token id the config class leaves unset (``image_token_index = None``: real checkpoints set
it) gets a reserved id, as every set one does. """

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.tiny.tokenizer import RESERVED_TOKEN_IDS
from hf_neuron.tiny.transformers.config import (
    DIMS,
    TinyDims,
    checkpoint_base,
    config_class,
    model_fields,
    tiny_config_kwargs,
)

if TYPE_CHECKING:
    from transformers import PreTrainedConfig

__all__ = ["tiny_image_text_config", "tiny_image_text_config_kwargs"]

_RESOLUTIONS = re.compile(r"pinpoints|resolutions")
_IMAGE_TOKEN = re.compile(r"^image_token_(id|index)$")
_FEATURE_LAYER = re.compile(r"^vision_feature_layers?$")


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


def _unset_image_token(model_type: str, kwargs: dict[str, Any]) -> None:
    """Give an unset top-level ``image_token_id``/``image_token_index`` a reserved id no other field uses."""
    cls = config_class(model_type)
    names = [field.name for field in dataclasses.fields(cls) if _IMAGE_TOKEN.match(field.name)]
    config = cls(**kwargs)
    for name in names:
        if getattr(config, name, None) is None and name not in kwargs:
            used = {value for value in config.to_dict().values() if isinstance(value, int)}
            kwargs[name] = next(token_id for token_id in RESERVED_TOKEN_IDS if token_id not in used)


def _vision_layers(kwargs: Mapping[str, Any]) -> int | None:
    """The tiny vision tower's layer count in ``kwargs`` (the first ``vision`` sub-config that sets one)."""
    for key, value in kwargs.items():
        if "vision" in key and isinstance(value, Mapping):
            for name in ("num_hidden_layers", "depth", "num_layers"):
                if isinstance(value.get(name), int):
                    return int(value[name])
    return None


def _clamp_feature_layers(kwargs: dict[str, Any], full: Mapping[str, Any], layers: int) -> None:
    """Point ``vision_feature_layer(s)`` (in the config or a sub-config) inside the tiny tower's hidden states:
    indices ``-layers .. layers - 1``; a list keeps its length, so the projector keeps its input width."""
    for key, value in full.items():
        if isinstance(value, Mapping) and str(key).endswith("_config"):
            sub = kwargs.setdefault(key, {})
            if isinstance(sub, dict):
                _clamp_feature_layers(sub, value, layers)
                if not sub:
                    kwargs.pop(key)
        elif isinstance(key, str) and _FEATURE_LAYER.match(key):
            value = kwargs.get(key, value)
            clamp = lambda index: max(-layers, min(layers - 1, index))  # noqa: E731
            if isinstance(value, int) and not isinstance(value, bool) and clamp(value) != value:
                kwargs[key] = clamp(value)
            elif isinstance(value, (list, tuple)) and any(clamp(index) != index for index in value):
                kwargs[key] = [clamp(index) for index in value]


def tiny_image_text_config_kwargs(model_type: str, *, base: Mapping[str, Any] | None = None,
                                  dims: TinyDims = DIMS) -> dict[str, Any]:
    """:func:`~hf_neuron.tiny.transformers.config.tiny_config_kwargs` (from ``base``, a checkpoint's config, and
    with ``dims`` where given) with the vision feature layers inside the cut tower, an unset image token id set and,
    where the tower shrank, the image resolution lists rescaled."""
    base = checkpoint_base(model_type, base, dims)
    kwargs = tiny_config_kwargs(model_type, base=base, dims=dims)
    given = {key: value for key, value in model_fields(base or {}).items() if key != "model_type"}
    try:
        full = config_class(model_type)(**given)
    except Exception:  # noqa: BLE001 - a few classes' defaults fail their own validation: nothing to adjust from
        return kwargs
    layers = _vision_layers(kwargs)
    if layers is not None:
        _clamp_feature_layers(kwargs, full.to_dict(), layers)
    _unset_image_token(model_type, kwargs)
    if dims.keep_width:  # the tower keeps its image size: its resolutions stand
        return kwargs
    full_side, tiny = _image_size(full), config_class(model_type)(**kwargs)
    tiny_side = _image_size(tiny)
    if not full_side or not tiny_side:
        return kwargs
    for key, value in full.to_dict().items():
        if _RESOLUTIONS.search(key) and _pairs(value) and key not in kwargs:
            unit = _tile(value, full_side)
            kwargs[key] = [[max(tiny_side, round(n * tiny_side / unit)) for n in pair] for pair in value]
    return kwargs


def _tile(resolutions: list[list[int]], side: int) -> int:
    """The tile side the ``resolutions`` are multiples of: the tower's ``side``, else (defaults sized for another
    tower, e.g. 336-pixel pinpoints with a 224-pixel CLIP default) their greatest common divisor."""
    values = [n for pair in resolutions for n in pair]
    return side if all(n % side == 0 for n in values) else math.gcd(*values)


def tiny_image_text_config(model_type: str, *, base: Mapping[str, Any] | None = None,
                           dims: TinyDims = DIMS) -> PreTrainedConfig:
    """The tiny config of ``model_type`` (from ``base`` and with ``dims`` where given) with eager attention."""
    kwargs = tiny_image_text_config_kwargs(model_type, base=base, dims=dims)
    return config_class(model_type)(**{**kwargs, "attn_implementation": "eager"})
