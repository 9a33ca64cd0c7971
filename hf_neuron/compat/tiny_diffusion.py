"""The reviewed per-backbone data of the diffusion group: ``compat/tiny_diffusion.toml``.

``[backbones.<Class>]`` tables hold what the generic shrinker and input rules of
:mod:`~hf_neuron.tiny.diffusion.backbones` cannot know: ``config`` (merged into the tiny config) and ``layout`` (of
the latents: one of :data:`LAYOUTS`), each with a ``reason``; and the two-step pipeline
that ``generate`` runs: ``pipeline`` (a diffusers pipeline class) with ``components`` naming, per argument of the
pipeline, a ``[components.<name>]`` preset or ``"none"``, and optional ``call`` arguments. A preset is a
``class`` (``diffusers.X``, ``transformers.X``, ``tiny-tokenizer`` or ``tiny-guardrail``) and its ``config``, and the
``methods`` a user calls on it once it is built (``enable_tiling`` of a VAE that decodes only in tiles), and
``requires``: the optional packages of :data:`REQUIREMENTS` the pipeline needs.

``inputs`` (with the ``reason``) says how to build a ``forward`` parameter the generic rules of
:mod:`~hf_neuron.tiny.diffusion.inputs` cannot, one :class:`InputSpec` per parameter: a ``shape`` whose sizes are
integers or expressions (:data:`EXPRESSION_NAMES`, the config's arguments, ``+ - * //``, ``len()``, ``sum()``,
``max()``, ``min()``), filled by exactly one of :data:`INPUT_KINDS` (random normal by default); ``dtype``, ``count``
(a list of that many) and ``dim`` (of a ``concat``) optional.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from hf_neuron.compat.files import COMPAT_DIR, read_toml
from hf_neuron.vocabulary.datafiles import DataFileError, check_sorted

__all__ = [
    "BACKBONE",
    "DTYPES",
    "EXPRESSION_NAMES",
    "INPUT_KINDS",
    "LAYOUTS",
    "RECIPES_FILE",
    "REQUIREMENTS",
    "Component",
    "InputSpec",
    "Layout",
    "Recipe",
    "check_expression",
    "load_presets",
    "load_recipes",
    "presets",
    "recipe",
]

RECIPES_FILE = COMPAT_DIR / "tiny_diffusion.toml"
Layout = Literal["image", "video", "video-frames-first", "video-channels-last", "sequence", "tokens"]
#: The layouts of a backbone's latents, the one home of the set (:mod:`hf_neuron.tiny.diffusion.inputs` shapes each):
#: ``(batch, channels, height, width)``, ``(batch, channels, frames, height, width)``, ``(batch, frames, channels,
#: height, width)``, ``(batch, frames, height, width, channels)``, ``(batch, channels, length)``, ``(batch, tokens,
#: channels)``.
LAYOUTS: tuple[Layout, ...] = get_args(Layout)
NONE = "none"
#: A component name that passes the backbone itself (a pipeline that takes the same denoiser twice, e.g. for its
#: unconditional branch).
BACKBONE = "backbone"
_BACKBONE_KEYS = {"reason", "config", "layout", "inputs", "pipeline", "slot", "components", "init", "call",
                  "pipeline_gap", "requires"}
#: The optional packages a pipeline recipe may require (``requires``), each with its extra of hf-neuron and what to do
#: where it does not import: ``generate`` is then untested (gap ``pipeline-recipe``) with that reason.
REQUIREMENTS: Mapping[str, str] = {
    "torchvision": "hf-neuron[vision]: PyPI's torchvision wheels for x86_64 are CUDA builds, which do not import "
                   "beside torch's CPU build, and PyPI has no CPU build; install the torchvision built for the "
                   "installed torch from the index torch came from (./scripts/setup.sh does with TORCH_INDEX_URL, "
                   "PyTorch's CPU index)",
}
_COMPONENT_KEYS = {"class", "config", "model_type", "subconfig", "parts", "methods"}
#: How an input spec builds its value (exactly one per spec): random normal, a constant, random integers in
#: ``[low, high)``, ``arange(start, stop)``, a literal tensor (with a shape: broadcast to it), a plain Python value, an
#: integer expression, another parameter's generic rule, a list of values each built by its own spec (``items``), the
#: values of a list of specs concatenated along ``dim`` (``concat``), a dict of values each built by its own spec
#: (``fields``), or nothing (an optional parameter left to its default).
INPUT_KINDS = ("randn", "fill", "randint", "arange", "tensor", "value", "int", "rule", "items", "concat", "fields",
               "omit")
DTYPES = ("float32", "long", "int32", "bool")
_SPEC_KEYS = {*INPUT_KINDS, "shape", "dtype", "count", "dim"}
#: The sizes an input expression may name besides the config's arguments: the batch, the frames, the latent side,
#: the text length, the latent channels, the image tokens (side / patch squared) and the text width.
EXPRESSION_NAMES = ("batch", "frames", "size", "text", "channels", "tokens", "text_width")
_FUNCTIONS = {"len", "sum", "max", "min"}


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """How to build one ``forward`` parameter: ``kind`` (one of :data:`INPUT_KINDS`) with its ``argument``, the
    ``shape`` (sizes as ints or expressions), ``dtype``, ``count`` (None: one value; else a list of that many) and
    ``dim`` (of a ``concat``). The argument of ``items`` and ``concat`` is a tuple of specs, of ``fields`` a mapping
    of them."""

    kind: str
    argument: Any = None
    shape: tuple[int | str, ...] | None = None
    dtype: str = "float32"
    count: int | str | None = None
    dim: int = 0


@dataclasses.dataclass(frozen=True)
class Component:
    """A pipeline component preset: ``class_name`` (``diffusers.X``, ``transformers.X``, ``tiny-tokenizer``,
    ``tiny-guardrail``), its ``config`` (over the project's tiny config of ``model_type``, when given), ``parts``:
    argument -> the name of another preset built first and passed to it (a processor's tokenizer and image processor),
    and ``methods``: the names of methods called without arguments on the built component, in order."""

    name: str
    class_name: str
    config: Mapping[str, Any]
    model_type: str | None = None
    parts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: The attribute of the ``model_type``'s tiny config the class is built from (an encoder of an encoder-decoder).
    subconfig: str | None = None
    methods: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Recipe:
    """What the data file says of one backbone (everything empty when it says nothing)."""

    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    layout: Layout | None = None
    pipeline: str | None = None
    slot: str | None = None
    components: Mapping[str, Component | None] = dataclasses.field(default_factory=dict)
    #: Other arguments of the pipeline's constructor (settings, not components).
    init: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    call: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    inputs: Mapping[str, InputSpec] = dataclasses.field(default_factory=dict)
    #: Why the harness cannot run the pipeline diffusers ships for the backbone (``generate`` is then untested).
    pipeline_gap: str | None = None
    #: The optional packages (of :data:`REQUIREMENTS`) the pipeline needs besides hf-neuron's matrix extra.
    requires: tuple[str, ...] = ()

    @property
    def pipeline_name(self) -> str | None:
        """The class name of the pipeline (without the module a ``diffusers.<module>.X`` path gives)."""
        return None if self.pipeline is None else self.pipeline.rpartition(".")[2]


def _error(path: Path, where: str, problem: str) -> DataFileError:
    """The error of ``where`` (``[backbones.X]``, ``[backbones.X].inputs.y``: a table, then a key in it)."""
    table, _, key = where.removeprefix("[").partition("]")
    return DataFileError(path, problem.strip(), table=table, key=key.removeprefix(".") or None)


def check_expression(text: str) -> ast.Expression:
    """``text`` parsed as a size expression (names, integers, ``+ - * //``, :data:`_FUNCTIONS` calls); raises
    ValueError naming what is not allowed."""
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS) or node.keywords:
                raise ValueError(f"{text!r}: only {', '.join(sorted(_FUNCTIONS))} may be called")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, int) or isinstance(node.value, bool):
                raise ValueError(f"{text!r}: only integer constants")
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.Name, ast.Load, ast.Add, ast.Sub, ast.Mult,
                                   ast.FloorDiv)):
            raise ValueError(f"{text!r}: {type(node).__name__} is not allowed (names, integers, + - * //, calls)")
    return tree


def _size(path: Path, where: str, value: Any) -> int | str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _error(path, where, f"a size is an integer or an expression string, got {value!r}")
    if isinstance(value, str):
        try:
            check_expression(value)
        except (SyntaxError, ValueError) as exc:
            raise _error(path, where, f"{exc}") from None
    return value


def _plain(value: Any) -> Any:
    """A ``value`` as the forward takes it: a table whose keys are all integers (TOML keys are strings) is a dict
    keyed by int (a per-sample mapping)."""
    if isinstance(value, dict):
        items = {key: _plain(item) for key, item in value.items()}
        if items and all(key.lstrip("-").isdigit() for key in items):
            return {int(key): item for key, item in items.items()}
        return items
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _input(path: Path, where: str, raw: Any) -> InputSpec:
    table = _table(path, where, raw)
    unknown = sorted(set(table) - _SPEC_KEYS)
    kinds = [kind for kind in INPUT_KINDS if kind in table]
    if unknown or len(kinds) > 1:
        raise _error(path, where, f"takes one of {', '.join(INPUT_KINDS)} with optional shape, dtype and "
                     f"count; got {sorted(table)}")
    kind = kinds[0] if kinds else "randn"
    if kind == "randn" and "shape" not in table:
        raise _error(path, where, "draws random normal values: give its 'shape'")
    if table.get("dtype", "float32") not in DTYPES:
        raise _error(path, where, f"dtype must be one of {', '.join(DTYPES)}")
    argument = table.get(kind)
    if kind in ("randint", "arange"):
        if not isinstance(argument, list) or len(argument) != 2:
            raise _error(path, where, f"{kind} = [low, high]")
        argument = tuple(_size(path, f"{where}.{kind}", bound) for bound in argument)
    elif kind == "int":
        argument = _size(path, f"{where}.int", argument)
    elif kind == "value":
        argument = _plain(argument)
    elif kind == "rule" and not isinstance(argument, str):
        raise _error(path, where, "rule names the parameter whose generic rule builds it")
    elif kind == "omit" and argument is not True:
        raise _error(path, where, "omit = true (or leave the parameter out)")
    elif kind == "fill" and (isinstance(argument, bool) or not isinstance(argument, (int, float))):
        raise _error(path, where, "fill is a number")
    elif kind in ("items", "concat"):
        if not isinstance(argument, list) or not argument:
            raise _error(path, where, f"{kind} is a list of input specs")
        argument = tuple(_input(path, f"{where}.{kind}[{i}]", item) for i, item in enumerate(argument))
    elif kind == "fields":
        argument = {key: _input(path, f"{where}.fields.{key}", item)
                    for key, item in _table(path, f"{where}.fields", argument).items()}
    if "dim" in table and (kind != "concat" or isinstance(table["dim"], bool) or not isinstance(table["dim"], int)):
        raise _error(path, where, "dim (an integer) goes with concat")
    shape = table.get("shape")
    if shape is not None:
        if not isinstance(shape, list):
            raise _error(path, where, "shape is a list of sizes")
        shape = tuple(_size(path, f"{where}.shape", size) for size in shape)
    count = table.get("count")
    return InputSpec(kind, argument, shape, table.get("dtype", "float32"),
                     None if count is None else _size(path, f"{where}.count", count), table.get("dim", 0))


def _table(path: Path, where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _error(path, where, "must be a table")
    return value


def _component(path: Path, name: str, raw: Any) -> Component:
    table = _table(path, f"[components.{name}]", raw)
    if set(table) - _COMPONENT_KEYS or not isinstance(table.get("class"), str):
        raise _error(path, f"[components.{name}]", "holds a 'class' string and optional 'config' and 'parts' "
                     "tables, 'model_type' and 'subconfig' strings and a 'methods' list")
    model_type = table.get("model_type")
    if model_type is not None and (not isinstance(model_type, str) or not table["class"].startswith("transformers.")):
        raise _error(path, f"[components.{name}]", "model_type names the transformers model type whose tiny "
                     "config builds a transformers.X class")
    subconfig = table.get("subconfig")
    if subconfig is not None and (not isinstance(subconfig, str) or model_type is None):
        raise _error(path, f"[components.{name}]", "subconfig names an attribute of model_type's tiny config")
    parts = _table(path, f"[components.{name}].parts", table.get("parts", {}))
    if not all(isinstance(part, str) for part in parts.values()):
        raise _error(path, f"[components.{name}].parts", "maps an argument to a preset name")
    methods = table.get("methods", [])
    if not isinstance(methods, list) or not all(isinstance(method, str) and method.isidentifier()
                                                for method in methods):
        raise _error(path, f"[components.{name}].methods", "is a list of method names")
    return Component(name, table["class"], _table(path, f"[components.{name}].config", table.get("config", {})),
                     model_type, parts, subconfig, tuple(methods))


def _recipe(path: Path, name: str, raw: Any, presets: Mapping[str, Component]) -> Recipe:
    where = f"[backbones.{name}]"
    table = _table(path, where, raw)
    unknown = sorted(set(table) - _BACKBONE_KEYS)
    if unknown:
        raise _error(path, where, f"unknown keys {unknown}; allowed: {sorted(_BACKBONE_KEYS)}")
    if ("config" in table or "layout" in table or "inputs" in table) and not str(table.get("reason", "")).strip():
        raise _error(path, f"{where}.reason", "changes the config, layout or inputs: say why")
    if table.get("layout", LAYOUTS[0]) not in LAYOUTS:
        raise _error(path, f"{where}.layout", f"must be one of {', '.join(LAYOUTS)}")
    components: dict[str, Component | None] = {}
    for argument, preset in _table(path, f"{where}.components", table.get("components", {})).items():
        if preset not in (NONE, BACKBONE) and preset not in presets:
            raise _error(path, f"{where}.components.{argument}", f"= {preset!r} names no [components.*] preset; "
                         f"known: {', '.join(sorted(presets))}, {NONE!r} or {BACKBONE!r}")
        components[argument] = None if preset == NONE else (
            Component(BACKBONE, BACKBONE, {}) if preset == BACKBONE else presets[preset])
    if (components or "slot" in table or "init" in table) and not isinstance(table.get("pipeline"), str):
        raise _error(path, where, "has components, a slot or init arguments but no 'pipeline' class")
    requires = table.get("requires", [])
    if not isinstance(requires, list) or not set(requires) <= set(REQUIREMENTS) or (requires and "pipeline" not in
                                                                                   table):
        raise _error(path, f"{where}.requires", f"lists the optional packages a 'pipeline' needs, of "
                     f"{', '.join(REQUIREMENTS)}")
    gap = table.get("pipeline_gap")
    if gap is not None and (not isinstance(gap, str) or not gap.strip() or "pipeline" in table):
        raise _error(path, where, "pipeline_gap says why the shipped pipeline cannot run (a non-empty "
                     "string), instead of a 'pipeline' recipe")
    return Recipe(
        config=_table(path, f"{where}.config", table.get("config", {})),
        layout=table.get("layout"),
        pipeline=table.get("pipeline"),
        slot=table.get("slot"),
        components=components,
        init=_table(path, f"{where}.init", table.get("init", {})),
        call=_table(path, f"{where}.call", table.get("call", {})),
        inputs={parameter: _input(path, f"{where}.inputs.{parameter}", spec)
                for parameter, spec in _table(path, f"{where}.inputs", table.get("inputs", {})).items()},
        pipeline_gap=gap,
        requires=tuple(requires),
    )


def load_recipes(path: Path = RECIPES_FILE) -> dict[str, Recipe]:
    """Read and validate the data file: backbone class name -> :class:`Recipe`."""
    document = read_toml(path)
    extra = sorted(set(document) - {"components", "backbones"})
    if extra:
        raise DataFileError(path, f"unknown top-level tables {extra}; use [components.*] and [backbones.*]")
    presets = load_presets(path, document)
    backbones = _table(path, "[backbones]", document.get("backbones", {}))
    check_sorted(path, [f"backbones.{name}" for name in backbones], "the [backbones.*] tables")
    return {name: _recipe(path, name, raw, presets) for name, raw in backbones.items()}


def load_presets(path: Path = RECIPES_FILE, document: Mapping[str, Any] | None = None) -> dict[str, Component]:
    """The ``[components.*]`` presets of the data file (``document``, when already parsed), with every preset a
    preset's ``parts`` name checked to exist."""
    if document is None:
        document = read_toml(path)
    components = _table(path, "[components]", document.get("components", {}))
    check_sorted(path, [f"components.{name}" for name in components], "the [components.*] tables")
    presets = {name: _component(path, name, raw) for name, raw in components.items()}
    for preset in presets.values():
        missing = sorted(set(preset.parts.values()) - set(presets))
        if missing:
            raise _error(path, f"[components.{preset.name}].parts", f"names no preset {missing}")
    return presets


@functools.cache
def _recipes() -> dict[str, Recipe]:
    return load_recipes()


def recipe(name: str) -> Recipe:
    """The recipe of backbone ``name`` (empty when the data file does not name it)."""
    return _recipes().get(name, Recipe())


@functools.cache
def presets() -> dict[str, Component]:
    """The component presets of the committed data file (what a preset's ``parts`` name)."""
    return load_presets()
