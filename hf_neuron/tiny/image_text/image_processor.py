"""The tiny image processor of an image-text architecture: its own class (PIL backend), sized to the tiny vision tower.

The class comes from transformers' image-processor mapping (the ``pil`` backend, which needs no torchvision), or from
``compat/tiny_image_text.toml``. Its defaults are shrunk generically, by what each field means:

- a field the tiny config also has (``patch_size``, ``temporal_patch_size``, ``image_grid_pinpoints``, ``merge_size``
  as ``spatial_merge_size``...) takes the config's value, so that the processor and the model agree;
- sizes (``size``, ``crop_size``, ``max_image_size``, ``scale_resolution``, lists of ``[height, width]``
  resolutions...): the processor's smallest side length becomes the tiny image size and the others scale with it,
  at least one patch unit and at most twice the tiny image size; a pixel count (a size field with a value above
  :data:`_AREA`, or a ``*pixels`` field) becomes one patch unit squared for a minimum and ``(2 x tiny image size)^2``
  for a maximum; a patch budget (``max_patches`` above :data:`_PATCHES`) becomes that many.

The patch unit is the vision tower's ``patch_size x spatial_merge_size``; the tiny image size is the vision config's
``image_size``, or :data:`~hf_neuron.tiny.transformers.config.DIMS`'s for towers of any resolution.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_image_text import image_text_recipe
from hf_neuron.compat.tiny_overrides import deep_merge
from hf_neuron.tiny.transformers.config import DIMS

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel
    from transformers.image_processing_utils import BaseImageProcessor

__all__ = ["CONFIG_ALIASES", "VisionSizes", "find_field", "image_processor_class", "processor_side", "takes_images",
           "tiny_image_processor",
           "tiny_image_processor_kwargs", "vision_sizes"]

#: A size value above this many pixels is a pixel count (an area), not a side length.
_AREA = 8192
#: A patch budget above this is counted in patches (not in tiles), and becomes this.
_PATCHES = 64
#: Integer fields that hold one side length.
_SIDE = re.compile(r"image_size$|resolution$|^max_size$")
#: Image-processor and processor fields named differently from the config field that holds the same value.
CONFIG_ALIASES = {"merge_size": "spatial_merge_size", "img_size": "image_size"}
_MIN_KEYS = ("shortest_edge", "min_pixels", "min")
#: Names of forward parameters that hold an image.
_IMAGE_INPUT = re.compile(r"pixel|^flattened_patches$")


@dataclasses.dataclass(frozen=True)
class VisionSizes:
    """The tiny vision tower's sizes: image side, patch, patch unit (patch x spatial merge)."""

    image_size: int
    patch_size: int
    unit: int

    def side(self, value: int, reference: int) -> int:
        """A side length of the full-size processor whose smallest side is ``reference``, for the tiny tower."""
        scaled = round(value * self.image_size / reference)
        return max(self.unit, min(scaled, 2 * self.image_size))

    def area(self, key: str, value: int) -> int:
        """A pixel count of the full-size processor: one patch unit for a minimum, else a square of twice the side."""
        return self.unit**2 if key in _MIN_KEYS else (2 * self.image_size) ** 2


def _configs(config: PreTrainedConfig) -> Iterator[Any]:
    """The config and its sub-configs, the vision ones first."""
    subs = [getattr(config, name, None) for name in getattr(config, "sub_configs", {})]
    subs = [sub for sub in subs if sub is not None and hasattr(sub, "to_dict")]
    yield from sorted(subs, key=lambda sub: "vision" not in str(getattr(sub, "model_type", "")) + str(type(sub)))
    yield config


def find_field(config: PreTrainedConfig, name: str) -> Any:
    """The first value of field ``name`` in the vision sub-configs, the other sub-configs, then the config."""
    for part in _configs(config):
        value = getattr(part, name, None)
        if value is not None:
            return value
    return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def vision_sizes(config: PreTrainedConfig) -> VisionSizes:
    """The sizes of ``config``'s (tiny) vision tower."""
    image_size = _as_int(find_field(config, "image_size")) or DIMS.image_size
    patch_size = _as_int(find_field(config, "patch_size")) or DIMS.patch_size
    merge = _as_int(find_field(config, "spatial_merge_size")) or 1
    return VisionSizes(image_size, patch_size, patch_size * merge)


def image_processor_class(model_type: str) -> type[BaseImageProcessor]:
    """The image processor class of ``model_type``: the reviewed one, else transformers' ``pil`` backend class."""
    import transformers
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES
    from transformers.utils.import_utils import DummyObject

    reviewed = image_text_recipe(model_type).image_processor
    backends = IMAGE_PROCESSOR_MAPPING_NAMES.get(model_type) or {}
    name = reviewed or backends.get("pil")
    if name is None:
        have = ", ".join(f"{backend}: {cls}" for backend, cls in backends.items()) or "none"
        raise LookupError(f"{model_type} has no image processor that runs without torchvision (transformers "
                          f"{transformers.__version__} maps it to {have}); name one in compat/tiny_image_text.toml")
    cls = getattr(transformers, name, None)
    if cls is None or isinstance(cls, DummyObject):
        raise LookupError(f"{model_type}: image processor {name} cannot be built here (missing class or backend)")
    return cls


def is_size_field(key: str, value: Any) -> bool:
    """An image size field (``size``, ``crop_size``, ``max_image_size``...; not ``patch_size``)."""
    return "size" in key and key != "patch_size" and isinstance(value, dict)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_side(key: str, value: Any) -> bool:
    return _is_int(value) and value > 0 and _SIDE.search(key) is not None


def _is_resolutions(key: str, value: Any) -> bool:
    return "resolution" in key and isinstance(value, list) and bool(value) and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2 and all(_is_int(n) for n in pair) for pair in value)


def _sides(defaults: Mapping[str, Any]) -> list[int]:
    """The side lengths of the processor's size fields (those that are not pixel counts)."""
    sides = []
    for key, value in defaults.items():
        if is_size_field(key, value):
            ints = [v for v in value.values() if _is_int(v) and v > 0]
            sides += ints if all(v <= _AREA for v in ints) else []
        elif _is_side(key, value):
            sides.append(value)
    return sides


def _shrunk(key: str, value: Any, config: PreTrainedConfig, sizes: VisionSizes, reference: int) -> Any:
    """The tiny value of one image-processor field (unchanged when no rule applies)."""
    from_config = find_field(config, CONFIG_ALIASES.get(key, key))
    if from_config is not None and not isinstance(value, dict):
        return from_config
    if key == "patch_size" and isinstance(value, dict):
        return dict.fromkeys(value, sizes.patch_size)
    if is_size_field(key, value):
        counts = any(isinstance(v, int) and v > _AREA for v in value.values())  # min/max pixel counts
        return {side: (sizes.area(side, v) if counts else sizes.side(v, reference)) if isinstance(v, int) else v
                for side, v in value.items()}
    if _is_int(value) and "pixels" in key:
        return sizes.area(key, value)
    if _is_side(key, value):
        return sizes.side(value, reference)
    if _is_resolutions(key, value):
        return [[sizes.side(n, reference) for n in pair] for pair in value]
    if key == "max_patches" and _is_int(value) and value > _PATCHES:
        return _PATCHES
    return value


def tiny_image_processor_kwargs(model_type: str, config: PreTrainedConfig) -> dict[str, Any]:
    """The keyword arguments of ``model_type``'s tiny image processor (changed fields only), reviewed data merged."""
    cls = image_processor_class(model_type)
    sizes = vision_sizes(config)
    defaults = cls().to_dict()
    reference = min(_sides(defaults), default=sizes.image_size)
    result = {}
    for key, value in defaults.items():
        new = _shrunk(key, value, config, sizes, reference)
        if new != value:
            result[key] = new
    return deep_merge(result, image_text_recipe(model_type).image_processor_config)


def tiny_image_processor(model_type: str, config: PreTrainedConfig) -> BaseImageProcessor:
    """``model_type``'s image processor, sized for the tiny model of ``config``."""
    return image_processor_class(model_type)(**tiny_image_processor_kwargs(model_type, config))


def processor_side(image_processor: BaseImageProcessor) -> int:
    """A side length the tiny image processor works at: its smallest configured side, at most the tiny image size
    (a pixel-count minimum reads as a side too, hence the bound)."""
    sides = [v for key, value in image_processor.to_dict().items() if is_size_field(key, value)
             for v in value.values() if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return min([*sides, DIMS.image_size])


def takes_images(model: PreTrainedModel | type[PreTrainedModel]) -> bool:
    """Whether ``model``'s (or its class's) forward takes pixel inputs (a few image-text-to-text classes are text
    models): pixels (``pixel_values``...) or the image's patches already cut and flattened (``flattened_patches``)."""
    return any(_IMAGE_INPUT.search(name) for name in inspect.signature(model.forward).parameters)
