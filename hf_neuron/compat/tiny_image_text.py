"""The reviewed per-architecture data of the image-text (image-text-to-text) group: ``compat/tiny_image_text.toml``.

Each table is named for a ``model_type`` and holds what the generic rules of :mod:`hf_neuron.tiny.image_text` cannot
know, with a ``reason`` (required: why, precise enough to re-check on a transformers update):

- ``image_processor``: the transformers image processor class to use instead of the architecture's own (when that
  one cannot be built here, e.g. it needs torchvision, and another makes the same inputs);
- ``image_processor_config``: keyword arguments merged into the tiny image processor's;
- ``processor_config``: keyword arguments merged into the architecture's own processor's (the one saved for users'
  pipelines, :mod:`hf_neuron.tiny.image_text.processor`);
- ``images``: the ``[height, width]`` of each row's synthetic image, when the processor accepts only some sizes;
- ``image_axis = true``: the forward reads the pixel values with an axis of images (or video frames) per row,
  ``(batch, images, channels, height, width)``, which no signature tells; each row's image goes on that axis;
- ``runs = false``: the architecture cannot run as a tiny image-text model here (the reason says why), and with it
  an optional ``gap`` when the cause is the harness's (e.g. ``gap = "inputs"``: the model needs an input the harness
  cannot build); the matrix then records the cases that fail the same way on the CPU as untested, with the reason.

Config fixes of the tiny model itself stay in ``compat/tiny_overrides.toml`` (:mod:`~.tiny_overrides`)::

    [mistral3]
    reason = "..."
    image_processor_config = { size = { longest_edge = 32 } }
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_neuron.compat.files import COMPAT_DIR
from hf_neuron.compat.reviewed_tables import check_table, load_tables
from hf_neuron.vocabulary.datafiles import DataFileError
from hf_neuron.vocabulary.gaps import Gap

__all__ = ["IMAGE_TEXT_PATH", "ImageTextRecipe", "image_text_recipe", "load_image_text"]

IMAGE_TEXT_PATH = COMPAT_DIR / "tiny_image_text.toml"

_KEYS = {"image_processor", "image_processor_config", "processor_config", "images", "image_axis"}


@dataclasses.dataclass(frozen=True)
class ImageTextRecipe:
    """What the data file says of one architecture (the defaults when it says nothing)."""

    model_type: str
    reason: str = ""
    image_processor: str | None = None
    image_processor_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    processor_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    images: tuple[tuple[int, int], ...] | None = None
    image_axis: bool = False
    runs: bool = True
    gap: Gap | None = None


def _images(path: Path, model_type: str, value: Any) -> tuple[tuple[int, int], ...]:
    pairs = value if isinstance(value, list) else None
    if not pairs or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                                                          for n in pair)
        for pair in pairs
    ):
        raise DataFileError(path, f"[{model_type}] 'images' must be a non-empty list of [height, width] pairs of "
                                    "positive integers")
    return tuple((height, width) for height, width in pairs)


def _parse(path: Path, model_type: str, table: Any) -> ImageTextRecipe:
    reviewed = check_table(path, model_type, table, _KEYS)
    image_processor = table.get("image_processor")
    if image_processor is not None and (not isinstance(image_processor, str) or not image_processor):
        raise DataFileError(path, f"[{model_type}] 'image_processor' must be a transformers class name")
    tables = {}
    for key in ("image_processor_config", "processor_config"):
        tables[key] = table.get(key, {})
        if not isinstance(tables[key], dict):
            raise DataFileError(path, f"[{model_type}] '{key}' must be a table")
    images = _images(path, model_type, table["images"]) if "images" in table else None
    image_axis = table.get("image_axis", False)
    if not isinstance(image_axis, bool):
        raise DataFileError(path, f"[{model_type}] 'image_axis' must be true or false")
    return ImageTextRecipe(model_type, reviewed.reason, image_processor, tables["image_processor_config"],
                            tables["processor_config"], images, image_axis, reviewed.runs, reviewed.gap)


def load_image_text(path: Path | None = None) -> dict[str, ImageTextRecipe]:
    """The reviewed entries by ``model_type`` (empty when the file does not exist)."""
    return load_tables(IMAGE_TEXT_PATH if path is None else Path(path), _parse)


def image_text_recipe(model_type: str, path: Path | None = None) -> ImageTextRecipe:
    """The entry of ``model_type``, or the defaults (nothing reviewed) when the file has none."""
    return load_image_text(path).get(model_type, ImageTextRecipe(model_type))
