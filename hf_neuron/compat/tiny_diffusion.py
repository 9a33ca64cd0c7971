"""The reviewed per-backbone data of the diffusion group: ``compat/tiny_diffusion.toml``.

``[backbones.<Class>]`` tables hold what the generic shrinker and input rules of
:mod:`~hf_neuron.tiny.diffusion.backbones` cannot know: ``config`` (merged into the tiny config) and ``layout`` (of
the latents: ``image``, ``video``, ``sequence`` or ``tokens``), each with a ``reason``; and the two-step pipeline
that ``generate`` runs: ``pipeline`` (a diffusers pipeline class) with ``components`` naming, per argument of the
pipeline, a ``[components.<name>]`` preset or ``"none"``, and optional ``call`` arguments. A preset is a
``class`` (``diffusers.X``, ``transformers.X``, or ``tiny-tokenizer``) and its ``config``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from hf_neuron.compat.files import COMPAT_DIR, read_toml
from hf_neuron.vocabulary.datafiles import DataFileError, check_sorted

__all__ = ["LAYOUTS", "RECIPES_FILE", "Component", "Layout", "Recipe", "load_recipes", "recipe"]

RECIPES_FILE = COMPAT_DIR / "tiny_diffusion.toml"
Layout = Literal["image", "video", "video-frames-first", "sequence", "tokens"]
#: The layouts of a backbone's latents, the one home of the set (:mod:`hf_neuron.tiny.diffusion.inputs` shapes each):
#: ``(batch, channels, height, width)``, ``(batch, channels, frames, height, width)``, ``(batch, frames, channels,
#: height, width)``, ``(batch, channels, length)``, ``(batch, tokens, channels)``.
LAYOUTS: tuple[Layout, ...] = get_args(Layout)
NONE = "none"
_BACKBONE_KEYS = {"reason", "config", "layout", "pipeline", "components", "call"}
_COMPONENT_KEYS = {"class", "config"}


@dataclasses.dataclass(frozen=True)
class Component:
    """A pipeline component preset: ``class_name`` (``diffusers.X``, ``transformers.X``, ``tiny-tokenizer``)."""

    name: str
    class_name: str
    config: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Recipe:
    """What the data file says of one backbone (everything empty when it says nothing)."""

    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    layout: Layout | None = None
    pipeline: str | None = None
    components: Mapping[str, Component | None] = dataclasses.field(default_factory=dict)
    call: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _table(path: Path, where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataFileError(path, "must be a table", table=where.strip("[]"))
    return value


def _component(path: Path, name: str, raw: Any) -> Component:
    table = _table(path, f"[components.{name}]", raw)
    if set(table) - _COMPONENT_KEYS or not isinstance(table.get("class"), str):
        raise DataFileError(path, "holds a 'class' string and an optional 'config' table", table=f"components.{name}")
    return Component(name, table["class"], _table(path, f"[components.{name}].config", table.get("config", {})))


def _recipe(path: Path, name: str, raw: Any, presets: Mapping[str, Component]) -> Recipe:
    where = f"[backbones.{name}]"
    table = _table(path, where, raw)
    unknown = sorted(set(table) - _BACKBONE_KEYS)
    if unknown:
        raise DataFileError(path, f"unknown keys {unknown}; allowed: {sorted(_BACKBONE_KEYS)}",
                              table=f"backbones.{name}")
    if ("config" in table or "layout" in table) and not str(table.get("reason", "")).strip():
        raise DataFileError(path, "changes the config or layout: say why", table=f"backbones.{name}", key="reason")
    if table.get("layout", LAYOUTS[0]) not in LAYOUTS:
        raise DataFileError(path, f"must be one of {', '.join(LAYOUTS)}", table=f"backbones.{name}", key="layout")
    components: dict[str, Component | None] = {}
    for argument, preset in _table(path, f"{where}.components", table.get("components", {})).items():
        if preset != NONE and preset not in presets:
            raise DataFileError(path, f"= {preset!r} names no [components.*] preset; known: "
                                        f"{', '.join(sorted(presets))}, or {NONE!r}", table=f"backbones.{name}",
                                  key=f"components.{argument}")
        components[argument] = None if preset == NONE else presets[preset]
    if components and not isinstance(table.get("pipeline"), str):
        raise DataFileError(path, "has components but no 'pipeline' class", table=f"backbones.{name}")
    return Recipe(
        config=_table(path, f"{where}.config", table.get("config", {})),
        layout=table.get("layout"),
        pipeline=table.get("pipeline"),
        components=components,
        call=_table(path, f"{where}.call", table.get("call", {})),
    )


def load_recipes(path: Path = RECIPES_FILE) -> dict[str, Recipe]:
    """Read and validate the data file: backbone class name -> :class:`Recipe`."""
    document = read_toml(path)
    extra = sorted(set(document) - {"components", "backbones"})
    if extra:
        raise DataFileError(path, f"unknown top-level tables {extra}; use [components.*] and [backbones.*]")
    presets = {name: _component(path, name, raw)
               for name, raw in _table(path, "[components]", document.get("components", {})).items()}
    backbones = _table(path, "[backbones]", document.get("backbones", {}))
    check_sorted(path, [f"backbones.{name}" for name in backbones], "the [backbones.*] tables")
    return {name: _recipe(path, name, raw, presets) for name, raw in backbones.items()}


@functools.cache
def _recipes() -> dict[str, Recipe]:
    return load_recipes()


def recipe(name: str) -> Recipe:
    """The recipe of backbone ``name`` (empty when the data file does not name it)."""
    return _recipes().get(name, Recipe())
