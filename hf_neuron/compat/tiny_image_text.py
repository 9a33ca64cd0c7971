"""The reviewed per-architecture data of the image-text (image-text-to-text) group: ``compat/tiny_image_text.toml``.

Each table is named for a ``model_type`` and holds what the generic rules of :mod:`hf_neuron.tiny.image_text` cannot
know, with a ``reason`` (required: why, precise enough to re-check on a transformers update):

- ``image_processor``: the transformers image processor class to use instead of the architecture's own (when that
  one cannot be built here, e.g. it needs torchvision, and another makes the same inputs);
- ``image_processor_config``: keyword arguments merged into the tiny image processor's;
- ``processor_config``: keyword arguments merged into the architecture's own processor's (the one saved for users'
  pipelines, :mod:`hf_neuron.tiny.image_text.processor`);
- ``images``: the ``[height, width]`` of each row's synthetic image, when the processor accepts only some sizes;
- ``pixel_layout``: how the model reads the image processor's ``pixel_values``, which no signature tells, as a
  rearrangement of named axes, ``"n c h w -> n h w c"`` (:class:`PixelLayout`): a stack of images or video frames
  per row (``"n c h w -> n 1 c h w"``), or a substitute image processor's patches in the layout the architecture's
  own processor writes them;
- ``drawn_inputs``: inputs the model's ``forward`` reads that neither the prompt nor the images give (a policy's
  robot state and action noise, a block-diffusion model's canvas), each drawn per row from the case's seed, as
  ``name = "kind(field, ...)"`` (:class:`Draw`): ``normal`` (standard normal values), ``uniform`` (in [0, 1)) or
  ``tokens`` (token ids of the text vocabulary), of the shape the config fields name after the row axis
  (``"uniform()"``: one value a row);
- ``labels``: the drawn input a training step passes in place of the prompt's ``labels`` (a policy's ``actions``),
  for a ``forward`` that names no ``labels`` parameter; it is not a forward pass's input. A ``forward`` without
  ``labels`` and without such an input has no training loss;
- ``generate_config``: keyword arguments added to ``generate`` (a generation of the model's own that needs a setting
  to be deterministic, e.g. one denoising step from the drawn canvas);
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
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_neuron.compat.files import COMPAT_DIR
from hf_neuron.compat.reviewed_tables import check_table, load_tables
from hf_neuron.vocabulary.datafiles import DataFileError
from hf_neuron.vocabulary.gaps import Gap

__all__ = [
    "DRAWS",
    "IMAGE_TEXT_PATH",
    "Draw",
    "ImageTextRecipe",
    "PixelLayout",
    "image_text_recipe",
    "load_image_text",
    "parse_draw",
    "parse_pixel_layout",
]

IMAGE_TEXT_PATH = COMPAT_DIR / "tiny_image_text.toml"

_KEYS = {"image_processor", "image_processor_config", "processor_config", "images", "pixel_layout", "drawn_inputs",
         "labels", "generate_config"}

#: The kinds of values a drawn input holds.
DRAWS = ("normal", "uniform", "tokens")

_DRAW = re.compile(r"^(\w+)\(\s*([\w\s,]*?)\s*\)$")


@dataclasses.dataclass(frozen=True)
class Draw:
    """A drawn input, written ``"normal(chunk_size, max_action_dim)"``: its ``kind`` (one of :data:`DRAWS`) and the
    config ``fields`` whose values are its shape after the row axis."""

    kind: str
    fields: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(self.fields)})"


def parse_draw(text: str) -> Draw:
    """The :class:`Draw` ``text`` writes; ``ValueError`` saying what is wrong with it."""
    match = _DRAW.match(text.strip())
    if match is None or match.group(1) not in DRAWS:
        raise ValueError(f"{text!r} is no drawn input: write 'kind(field, ...)' with kind one of {', '.join(DRAWS)}")
    fields = tuple(field.strip() for field in match.group(2).split(",")) if match.group(2) else ()
    if not all(re.fullmatch(r"[A-Za-z_]\w*", field) for field in fields):
        raise ValueError(f"{text!r}: the shape is a list of config field names")
    return Draw(match.group(1), fields)

#: One axis of a layout: a name, a number (a new axis of that size, the tensor repeated along it) or a parenthesised
#: group of them (flattened into one axis).
_AXIS = re.compile(r"\(([^()]*)\)|([A-Za-z_]\w*|\d+)")


@dataclasses.dataclass(frozen=True)
class PixelLayout:
    """A rearrangement of a tensor's axes, written ``"n c h w -> n (2 c h w)"``: the ``source`` axes name each axis
    of the tensor; each ``target`` axis is a group of source names (flattened in that order) and numbers (a new axis
    of that size, along which the tensor is repeated; ``1`` adds an axis). Every source name appears once on the
    right."""

    source: tuple[str, ...]
    target: tuple[tuple[str | int, ...], ...]

    def __str__(self) -> str:
        def axis(group: tuple[str | int, ...]) -> str:
            names = " ".join(str(item) for item in group)
            return names if len(group) == 1 else f"({names})"

        return f"{' '.join(self.source)} -> {' '.join(axis(group) for group in self.target)}"


def _axes(side: str) -> list[tuple[str | int, ...]] | None:
    """The axes of one side of a layout, or None where it holds anything else."""
    found: list[tuple[str | int, ...]] = []
    position = 0
    for match in _AXIS.finditer(side):
        if side[position:match.start()].strip():
            return None
        position = match.end()
        items = match.group(1).split() if match.group(1) is not None else [match.group(2)]
        if not items or any(not re.fullmatch(r"[A-Za-z_]\w*|\d+", item) for item in items):
            return None
        found.append(tuple(int(item) if item.isdigit() else item for item in items))
    return found if not side[position:].strip() else None


def parse_pixel_layout(text: str) -> PixelLayout:
    """The :class:`PixelLayout` ``text`` writes; ``ValueError`` saying what is wrong with it."""
    source_text, arrow, target_text = text.partition("->")
    source, target = _axes(source_text), _axes(target_text)
    if not arrow or source is None or target is None or not source or not target:
        raise ValueError(f"{text!r} is no layout: write the axes as 'n c h w -> n h w c' (a group in parentheses "
                         "is flattened, a number is a new axis of that size)")
    if any(len(axis) != 1 or not isinstance(axis[0], str) for axis in source):
        raise ValueError(f"{text!r}: the left side names each axis of the tensor once, without groups or numbers")
    names = [str(axis[0]) for axis in source]
    placed = [item for group in target for item in group if isinstance(item, str)]
    if len(set(names)) != len(names) or sorted(placed) != sorted(names):
        raise ValueError(f"{text!r}: every axis of the left side must appear exactly once on the right")
    if any(isinstance(item, int) and item < 1 for group in target for item in group):
        raise ValueError(f"{text!r}: a new axis needs a size of at least 1")
    return PixelLayout(tuple(names), tuple(target))


@dataclasses.dataclass(frozen=True)
class ImageTextRecipe:
    """What the data file says of one architecture (the defaults when it says nothing)."""

    model_type: str
    reason: str = ""
    image_processor: str | None = None
    image_processor_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    processor_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    images: tuple[tuple[int, int], ...] | None = None
    pixel_layout: PixelLayout | None = None
    runs: bool = True
    gap: Gap | None = None
    drawn_inputs: Mapping[str, Draw] = dataclasses.field(default_factory=dict)
    labels: str | None = None
    generate_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)


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
    for key in ("image_processor_config", "processor_config", "generate_config"):
        tables[key] = table.get(key, {})
        if not isinstance(tables[key], dict):
            raise DataFileError(path, f"[{model_type}] '{key}' must be a table")
    images = _images(path, model_type, table["images"]) if "images" in table else None
    layout = table.get("pixel_layout")
    if layout is not None:
        if not isinstance(layout, str):
            raise DataFileError(path, f"[{model_type}] 'pixel_layout' must be a string such as 'n c h w -> n h w c'")
        try:
            layout = parse_pixel_layout(layout)
        except ValueError as why:
            raise DataFileError(path, f"[{model_type}] 'pixel_layout': {why}") from why
    draws = _draws(path, model_type, table.get("drawn_inputs", {}))
    labels = table.get("labels")
    if labels is not None and labels not in draws:
        raise DataFileError(path, f"[{model_type}] 'labels' must name one of its drawn_inputs")
    return ImageTextRecipe(model_type, reviewed.reason, image_processor, tables["image_processor_config"],
                           tables["processor_config"], images, layout, reviewed.runs, reviewed.gap, draws, labels,
                           tables["generate_config"])


def _draws(path: Path, model_type: str, value: Any) -> dict[str, Draw]:
    if not isinstance(value, dict) or not all(isinstance(spec, str) for spec in value.values()):
        raise DataFileError(path, f"[{model_type}] 'drawn_inputs' must be a table of name = \"kind(field, ...)\"")
    try:
        return {name: parse_draw(spec) for name, spec in value.items()}
    except ValueError as why:
        raise DataFileError(path, f"[{model_type}] 'drawn_inputs': {why}") from why


def load_image_text(path: Path | None = None) -> dict[str, ImageTextRecipe]:
    """The reviewed entries by ``model_type`` (empty when the file does not exist)."""
    return load_tables(IMAGE_TEXT_PATH if path is None else Path(path), _parse)


def image_text_recipe(model_type: str, path: Path | None = None) -> ImageTextRecipe:
    """The entry of ``model_type``, or the defaults (nothing reviewed) when the file has none."""
    return load_image_text(path).get(model_type, ImageTextRecipe(model_type))
