"""Tiny diffusion backbones: which ones diffusers ships, a tiny config for each, a checkpoint.

The catalog's ``diffusion`` group is every denoiser backbone diffusers exports: the :class:`~diffusers.ModelMixin`
classes of ``diffusers.models.transformers`` and ``diffusers.models.unets`` (:func:`backbone_names`). A backbone's
``model_type`` in the matrix is its class name.

:func:`tiny_config` shrinks the class's ``__init__`` defaults (a full-size model) by what each argument means, read
from its name or from its relation to the main dimensions, like
:mod:`hf_neuron.tiny.transformers.config` does for transformers:
layer counts become 1-2, heads 2, head dims 16, widths 32, block channels 32 with 8 norm groups, latents 8x8, rotary
axes split the new head dim. :mod:`~hf_neuron.tiny.diffusion.inputs` builds the inputs of a denoiser call.
Per-class exceptions live only in the reviewed ``compat/tiny_diffusion.toml`` (:mod:`~hf_neuron.compat.tiny_diffusion`).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_diffusion import recipe
from hf_neuron.tiny.transformers.config import DIMS, TinyDims, checkpoint_base

if TYPE_CHECKING:
    import torch

__all__ = [
    "BATCH",
    "FRAMES",
    "LATENT_SIZE",
    "MAX_PARAMETERS",
    "ROTARY_AXES",
    "TEXT_LENGTH",
    "TEXT_WIDTH",
    "backbone_class",
    "backbone_names",
    "build_backbone",
    "materialize",
    "slice_kwargs",
    "tiny_config",
]

#: Batch size, latent side (height = width) and text length of every diffusion input.
BATCH, LATENT_SIZE, TEXT_LENGTH, FRAMES = 2, 8, 6, 2
_SUBPACKAGES = ("transformers", "unets")
#: Exported from those subpackages but not denoisers (they adapt a UNet instead of denoising).
_NOT_DENOISERS = frozenset({"MotionAdapter"})
_STAMP = "hf-neuron-tiny.json"

_HEADS, _HEAD_DIM, _WIDTH, _FFN, _CHANNELS, _GROUPS = 2, 16, 32, 64, 32, 8
#: Width of the text states (and other conditionings) a tiny backbone attends to.
TEXT_WIDTH = 32


@functools.cache
def backbone_names() -> tuple[str, ...]:
    """The denoiser backbone classes diffusers exports, sorted by name."""
    import diffusers
    from diffusers import ModelMixin

    names = []
    for name in diffusers._import_structure["models"]:
        cls = getattr(diffusers, name, None)
        if (isinstance(cls, type) and issubclass(cls, ModelMixin) and name not in _NOT_DENOISERS
                and cls.__module__.split(".")[2] in _SUBPACKAGES):
            names.append(name)
    return tuple(sorted(names))


def backbone_class(name: str) -> type[torch.nn.Module]:
    """The diffusers class (a ``ModelMixin``) named ``name`` (one of :func:`backbone_names`)."""
    import diffusers

    if name not in backbone_names():
        raise KeyError(f"{name!r} is not a denoiser backbone of diffusers {diffusers.__version__}")
    cls: type[torch.nn.Module] = getattr(diffusers, name)
    return cls


def _defaults(cls: type[Any]) -> dict[str, Any]:
    return {name: p.default for name, p in list(inspect.signature(cls.__init__).parameters.items())[1:]
            if p.default is not inspect.Parameter.empty}


def _split_even(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` even numbers (rotary axes need even sizes), the larger ones last."""
    base = (total // parts) // 2 * 2
    sizes = [base] * parts
    for i in range(parts - 1, -1, -1):
        if sum(sizes) >= total:
            break
        sizes[i] += 2
    return sizes


def _each(value: Any, new: int) -> Any:
    """``new`` in the shape of ``value``: an int, or a list/tuple of that length."""
    if isinstance(value, (list, tuple)):
        return [new] * len(value)
    return new


#: The rules that cut layer counts (the first two and the last of :data:`_RULES`): the only ones a slice at real width
#: applies (:func:`slice_kwargs`).
_LAYER_RULES = (
    (r"(num|n)_(hidden_)?layers|depth|mmdit_layers", 2),
    (r"(\w+_)?(num|n)_\w+_(layers|blocks)|(transformer_)?layers_per_block|num_(decoder|encoder)_layers"
     r"|(\w+_)?num_layers_per_block", 1),
)
#: Tiny value per argument, by name (full match, first pattern wins), applied to an int or to each item of a list
#: or tuple of ints.
_RULES: tuple[tuple[re.Pattern[str], int], ...] = tuple((re.compile(pattern), value) for pattern, value in (
    *_LAYER_RULES,
    (r"(\w+_)?(num|n)_(\w+_)?heads", _HEADS),
    (r"block_out_channels", _CHANNELS),
    (r"(attn_)?norm_num_groups|(norm_)?groups", _GROUPS),
    (r"sample_(size|height|width)", LATENT_SIZE),
    (r"sample_frames|num_frames|video_length", FRAMES),
    (r"text_len(_t5)?|max_text_seq_length", TEXT_LENGTH),
    (r"(\w+_)?intermediate_size|ffn?_dim|ff_inner_dim|mlp_(hidden_)?dim|ffn_hidden_size", _FFN),
    (r"(\w+_)?cross_attention_(input_)?dim(_t5)?|joint_attention_dim|caption_channels|caption_projection_dim|encoder_hid_dim"
     r"|cap_feat_dim|pooled_projection_dim|condition_dim|context_(in_)?dim|(in_)?text_(in_|encoder_|embed_|emb_|hidden_|states_)?"
     r"(\d_)?dim(_t5|_?\d)?|image_(embed_|proj_)?dim"
     r"|clip_\w+_in_channels|conditioning_dim|llm_features_dim", TEXT_WIDTH),
    (r"time_(embed_|embedding_|proj_)?dim|timestep_embed_dim|freq_dim|addition_time_embed_dim", _WIDTH),
    (r"(\w+_)?hidden_(size|dim)|inner_dim|model_(channels|dim)|dim|width", _WIDTH),
    (r"[a-z]+_layers", 1),
))
_LAYER_PATTERNS = frozenset(pattern for pattern, _ in _LAYER_RULES) | {"[a-z]+_layers"}
#: Rotary position axes, whose sizes add up to the head dim (``axes_dims_rope``, ``rope_dim_list``, ...).
ROTARY_AXES = re.compile(r"\w*axes_dims?\w*|rope_(axes_)?dims?(_list)?")
#: Multimodal rotary sections (Qwen2-VL style: frames, rows, columns), whose sizes add up to half the head dim, the
#: frames' the largest (the rows' and columns' are interleaved into the first thirds of the frequencies).
MROPE_SECTIONS = re.compile(r"mrope_section")
#: A tiny backbone larger than this was not shrunk enough: it is refused rather than built (and its RAM spent).
MAX_PARAMETERS = 20_000_000


def _is_ints(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, (list, tuple)) and bool(value)
                                      and all(isinstance(v, int) and not isinstance(v, bool) for v in value))


def _rule(name: str) -> int | None:
    return next((value for pattern, value in _RULES if pattern.fullmatch(name)), None)


def _shrink(defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The changed arguments: by name (:data:`_RULES`), heads' dims capped, a width equal to the attention width
    following it, and rotary axes splitting the new head dim."""
    heads, head_dim = defaults.get("num_attention_heads"), defaults.get("attention_head_dim")
    width = heads * head_dim if isinstance(heads, int) and isinstance(head_dim, int) else None
    kwargs: dict[str, Any] = {}
    for name, value in defaults.items():
        if name == "sample_size" and value is None:
            kwargs[name] = LATENT_SIZE  # pipelines size their latents from it
        if not _is_ints(value):
            continue
        if name == "head_dim" or name.endswith("attention_head_dim"):
            kwargs[name] = _each(value, min(value if isinstance(value, int) else _HEAD_DIM, _HEAD_DIM))
        elif width is not None and isinstance(head_dim, int) and value == width and name != "num_attention_heads":
            kwargs[name] = _HEADS * min(head_dim, _HEAD_DIM)  # a width equal to the attention width follows it
        elif (new := _rule(name)) is not None:
            kwargs[name] = _each(value, new)
    new_head_dim = kwargs.get("attention_head_dim", head_dim)
    if not isinstance(new_head_dim, int):
        new_head_dim = _HEAD_DIM  # no head dim argument: the width (32) is split into heads of the tiny head dim
    for name, value in defaults.items():
        if ROTARY_AXES.fullmatch(name) and isinstance(value, (list, tuple)):
            kwargs[name] = _split_even(new_head_dim, len(value))
        elif MROPE_SECTIONS.fullmatch(name) and isinstance(value, (list, tuple)):
            kwargs[name] = _split_even(new_head_dim // 2, len(value))[::-1]
    return kwargs


def _init_arguments(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of a checkpoint's ``config`` that the ``name`` backbone's ``__init__`` takes, as diffusers reads
    them (``extract_init_dict``): a published config also carries what its training wrote beside them (the EMA
    settings ``decay`` or ``power`` of stable-diffusion-xl-1.0-inpainting-0.1's UNet, ``_class_name``)."""
    init, _, _ = backbone_class(name).extract_init_dict(dict(config))  # type: ignore[attr-defined]
    return dict(init)


def slice_kwargs(name: str, config: Mapping[str, Any], layers: int) -> dict[str, Any]:
    """The arguments of a checkpoint's ``name`` backbone (its ``config``) with its layer counts cut at real width: only
    the layer-count rules of the tiny shrinker apply, each capped at ``layers`` (a stack the tiny model cuts to one
    layer, such as single-stream blocks or the layers of a UNet block, keeps one); every width, head and size is the
    checkpoint's."""
    arguments = _init_arguments(name, config)
    for key, value in arguments.items():
        if not _is_ints(value):
            continue
        rule = next(((pattern, tiny) for pattern, tiny in _RULES if pattern.fullmatch(key)), None)
        if rule is not None and rule[0].pattern in _LAYER_PATTERNS:
            cut = min(layers, rule[1])
            arguments[key] = [min(v, cut) for v in value] if isinstance(value, (list, tuple)) else min(value, cut)
    return arguments


def tiny_config(name: str, *, base: Mapping[str, Any] | None = None, dims: TinyDims = DIMS) -> dict[str, Any]:
    """The keyword arguments of the tiny ``name`` backbone: its shrunk defaults (or ``base``, a checkpoint's config,
    over them: by default the catalogued checkpoint its tiny model starts from, one of the pipeline its recipe runs),
    then the reviewed overrides; with ``dims`` that keep width, ``base`` with its layers cut (:func:`slice_kwargs`)."""
    given = _init_arguments(name, checkpoint_base(name, base, dims, pipeline=recipe(name).pipeline_name) or {})
    if dims.keep_width:
        return slice_kwargs(name, given, dims.num_layers)
    kwargs = {**given, **_shrink({**_defaults(backbone_class(name)), **given})}
    kwargs.update(recipe(name).config)
    return kwargs


def build_backbone(name: str, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                   dims: TinyDims = DIMS) -> torch.nn.Module:
    """The tiny ``name`` backbone (from ``base`` and with ``dims`` where given) with weights drawn from ``seed``, in
    eval mode on the CPU."""
    import torch

    cls = backbone_class(name)
    config = tiny_config(name, base=base, dims=dims)
    with torch.device("meta"):
        size = sum(p.numel() for p in cls(**config).parameters())
    if size > MAX_PARAMETERS and not dims.keep_width:
        raise ValueError(f"the tiny config leaves {size / 1e6:.0f}M parameters (limit {MAX_PARAMETERS / 1e6:.0f}M): "
                         "the generic shrinker does not know its size arguments; give them in "
                         "compat/tiny_diffusion.toml")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(**config)
    return model.eval()


def materialize(name: str, out_dir: Path, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                dims: TinyDims = DIMS) -> Path:
    """Save the tiny ``name`` backbone (from ``base`` and with ``dims`` where given) to ``out_dir``
    (``save_pretrained``), unless it is there already.

    It is written to a private directory renamed into place; when a concurrent builder published first, its copy
    is kept and this one dropped, so a reader is never disturbed."""
    out_dir = Path(out_dir)
    if (out_dir / _STAMP).is_file():
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-", dir=out_dir.parent))
    try:
        build_backbone(name, seed=seed, base=base, dims=dims).save_pretrained(staging)  # type: ignore[operator]
        (staging / _STAMP).write_text(json.dumps({"model_type": name, "seed": seed}) + "\n")
        try:
            os.rename(staging, out_dir)
        except OSError:
            if not (out_dir / _STAMP).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir
