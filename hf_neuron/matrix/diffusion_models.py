"""Tiny diffusion backbones: which ones diffusers ships, a tiny config for each, its forward inputs, a checkpoint.

The catalog's ``diffusion`` group is every denoiser backbone diffusers exports: the :class:`~diffusers.ModelMixin`
classes of ``diffusers.models.transformers`` and ``diffusers.models.unets`` (:func:`backbone_names`). A backbone's
``model_type`` in the matrix is its class name.

:func:`tiny_config` shrinks the class's ``__init__`` defaults (a full-size model) by what each argument means, read
from its name or from its relation to the main dimensions, like :mod:`hf_neuron.tiny.config` does for transformers:
layer counts become 1-2, heads 2, head dims 16, widths 32, block channels 32 with 8 norm groups, latents 8x8, rotary
axes split the new head dim. :func:`forward_inputs` builds the keyword inputs of one denoiser call from the names
of ``forward``'s parameters and the config (:data:`INPUTS`). Per-class exceptions live only in the reviewed
``compat/tiny_diffusion.toml`` (:mod:`~hf_neuron.matrix.diffusion_recipes`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.matrix.diffusion_recipes import recipe

if TYPE_CHECKING:
    import torch

__all__ = [
    "BATCH",
    "INPUTS",
    "LATENT_SIZE",
    "MAX_PARAMETERS",
    "TEXT_LENGTH",
    "backbone_class",
    "backbone_names",
    "build_backbone",
    "denoise",
    "forward_inputs",
    "materialize",
    "tiny_config",
]

#: Batch size, latent side (height = width) and text length of every diffusion input.
BATCH, LATENT_SIZE, TEXT_LENGTH, FRAMES = 2, 8, 6, 2
_SUBPACKAGES = ("transformers", "unets")
#: Exported from those subpackages but not denoisers (they adapt a UNet instead of denoising).
_NOT_DENOISERS = frozenset({"MotionAdapter"})
_STAMP = "hf-neuron-tiny.json"

_HEADS, _HEAD_DIM, _WIDTH, _FFN, _CHANNELS, _GROUPS, _TEXT_WIDTH = 2, 16, 32, 64, 32, 8, 32


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


#: Tiny value per argument, by name (full match, first pattern wins), applied to an int or to each item of a list
#: or tuple of ints.
_RULES: tuple[tuple[re.Pattern[str], int], ...] = tuple((re.compile(pattern), value) for pattern, value in (
    (r"(num|n)_(hidden_)?layers|depth|mmdit_layers", 2),
    (r"(\w+_)?(num|n)_\w+_(layers|blocks)|(transformer_)?layers_per_block|num_(decoder|encoder)_layers", 1),
    (r"(\w+_)?(num|n)_(\w+_)?heads", _HEADS),
    (r"block_out_channels", _CHANNELS),
    (r"(attn_)?norm_num_groups|(norm_)?groups", _GROUPS),
    (r"sample_(size|height|width)", LATENT_SIZE),
    (r"sample_frames|num_frames|video_length", FRAMES),
    (r"text_len(_t5)?|max_text_seq_length", TEXT_LENGTH),
    (r"(\w+_)?intermediate_size|ffn?_dim|ff_inner_dim|mlp_(hidden_)?dim|ffn_hidden_size", _FFN),
    (r"cross_attention_(input_)?dim(_t5)?|joint_attention_dim|caption_channels|caption_projection_dim|encoder_hid_dim"
     r"|cap_feat_dim|pooled_projection_dim|condition_dim|context_(in_)?dim|(in_)?text_(embed_|emb_|hidden_|states_)?"
     r"(\d_)?dim(_t5|_?\d)?|image_(embed_|proj_)?dim"
     r"|clip_\w+_in_channels|conditioning_dim", _TEXT_WIDTH),
    (r"time_(embed_|embedding_|proj_)?dim|timestep_embed_dim|freq_dim|addition_time_embed_dim", _WIDTH),
    (r"(\w+_)?hidden_(size|dim)|inner_dim|model_(channels|dim)|dim|width", _WIDTH),
    (r"[a-z]+_layers", 1),
))
#: Rotary position axes, whose sizes add up to the head dim (``axes_dims_rope``, ``rope_dim_list``, ...).
_ROTARY_AXES = re.compile(r"\w*axes_dims?\w*|rope_(axes_)?dims?(_list)?")
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
        if name == "attention_head_dim":
            kwargs[name] = _each(value, min(value if isinstance(value, int) else _HEAD_DIM, _HEAD_DIM))
        elif width is not None and isinstance(head_dim, int) and value == width and name != "num_attention_heads":
            kwargs[name] = _HEADS * min(head_dim, _HEAD_DIM)  # a width equal to the attention width follows it
        elif (new := _rule(name)) is not None:
            kwargs[name] = _each(value, new)
    new_head_dim = kwargs.get("attention_head_dim", head_dim)
    if not isinstance(new_head_dim, int):
        new_head_dim = _HEAD_DIM  # no head dim argument: the width (32) is split into heads of the tiny head dim
    for name, value in defaults.items():
        if _ROTARY_AXES.fullmatch(name) and isinstance(value, (list, tuple)):
            kwargs[name] = _split_even(new_head_dim, len(value))
    return kwargs


def tiny_config(name: str) -> dict[str, Any]:
    """The keyword arguments of the tiny ``name`` backbone: its shrunk defaults, then the reviewed overrides."""
    kwargs = _shrink(_defaults(backbone_class(name)))
    kwargs.update(recipe(name).config)
    return kwargs


def build_backbone(name: str, *, seed: int = 0) -> torch.nn.Module:
    """The tiny ``name`` backbone with weights drawn from ``seed``, in eval mode on the CPU."""
    import torch

    cls = backbone_class(name)
    config = tiny_config(name)
    with torch.device("meta"):
        size = sum(p.numel() for p in cls(**config).parameters())
    if size > MAX_PARAMETERS:
        raise ValueError(f"the tiny config leaves {size / 1e6:.0f}M parameters (limit {MAX_PARAMETERS / 1e6:.0f}M): "
                         "the generic shrinker does not know its size arguments; give them in "
                         "compat/tiny_diffusion.toml")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(**config)
    return model.eval()


def materialize(name: str, out_dir: Path, *, seed: int = 0) -> Path:
    """Save the tiny ``name`` backbone to ``out_dir`` (``save_pretrained``), unless it is there already.

    It is written to a private directory renamed into place; when a concurrent builder published first, its copy
    is kept and this one dropped, so a reader is never disturbed."""
    out_dir = Path(out_dir)
    if (out_dir / _STAMP).is_file():
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-", dir=out_dir.parent))
    try:
        build_backbone(name, seed=seed).save_pretrained(staging)  # type: ignore[operator]
        (staging / _STAMP).write_text(json.dumps({"model_type": name, "seed": seed}) + "\n")
        try:
            os.rename(staging, out_dir)
        except OSError:
            if not (out_dir / _STAMP).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


@dataclasses.dataclass(frozen=True)
class _Shape:
    """What the inputs of one backbone are built from."""

    config: Mapping[str, Any]
    layout: str

    def get(self, *names: str, default: Any = None) -> Any:
        """The first of ``names`` the config sets (not None)."""
        return next((self.config[n] for n in names if self.config.get(n) is not None), default)

    def first_int(self, *names: str, default: int) -> int:
        """:meth:`get` as an int (the last item of a list or tuple, as for per-axis patch sizes)."""
        value = self.get(*names, default=default)
        return int(value[-1] if isinstance(value, (list, tuple)) else value)

    @property
    def size(self) -> int:
        return self.first_int("sample_size", default=LATENT_SIZE)

    @property
    def channels(self) -> int:
        return self.first_int("in_channels", "in_dim", "latent_channels", default=4)

    @property
    def text_width(self) -> int:
        return self.first_int("encoder_hid_dim", "caption_channels", "joint_attention_dim", "cross_attention_dim",
                              "text_embed_dim", "text_dim", "cap_feat_dim", "text_hidden_dim", "condition_dim",
                              "context_in_dim", "context_dim", default=_TEXT_WIDTH)

    @property
    def text_cross_attention(self) -> bool:
        """Whether the backbone attends to text: not when its config sets ``cross_attention_dim`` (and
        ``caption_channels``) to None."""
        return self.get("cross_attention_dim", "caption_channels") is not None

    @property
    def position_axes(self) -> int:
        """Columns of a token position: one per rotary axis (3 unless the config has more)."""
        axes = next((v for n, v in self.config.items() if _ROTARY_AXES.fullmatch(n) and isinstance(v, (list, tuple))),
                    ())
        return max(len(axes), 3)

    @property
    def tokens(self) -> int:
        return (self.size // max(self.first_int("patch_size", default=1), 1)) ** 2


def _latents(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    import torch

    sizes = {
        "image": (BATCH, shape.channels, shape.size, shape.size),
        "video": (BATCH, shape.channels, FRAMES, shape.size, shape.size),
        "video-frames-first": (BATCH, FRAMES, shape.channels, shape.size, shape.size),
        "sequence": (BATCH, shape.channels, shape.size * shape.size),
        "tokens": (BATCH, shape.tokens, shape.channels),
    }[shape.layout]
    return torch.randn(sizes, generator=generator)


def _ids(count: int, *, grid: bool, axes: int = 3) -> torch.Tensor:
    """Positions of ``count`` tokens as (count, ``axes``) rows (0, y, x, 0...) on a square grid, or zeros for text."""
    import torch

    ids = torch.zeros(count, axes)
    if grid:
        side = _side(count)
        ids[:, 1] = torch.arange(count) // side
        ids[:, 2] = torch.arange(count) % side
    return ids


_Input = Callable[[_Shape, "torch.Generator"], Any]
#: The config arguments giving the width of a second text encoder's states (``encoder_hidden_states_2``), and of a
#: T5's next to a CLIP (``encoder_hidden_states_t5``).
_SECOND_TEXT = ("text_embed_2_dim",)
_T5_TEXT = ("cross_attention_dim_t5", "text_embed_dim_t5")


def _text(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    import torch

    return torch.randn(BATCH, TEXT_LENGTH, shape.text_width, generator=generator)


def _sets(*names: str) -> Callable[[_Shape], bool]:
    """When to pass an optional input: the config sets one of ``names`` (not None)."""
    return lambda shape: shape.get(*names) is not None


def _enabled(name: str) -> Callable[[_Shape], bool]:
    """When to pass an optional input: the config's flag ``name`` is true."""
    return lambda shape: bool(shape.get(name))


def _second_text(*names: str) -> tuple[_Input, Callable[[_Shape], bool]]:
    """A second text encoder's states, of the width the config names in ``names``; passed when the config sets one
    (the backbone has that text projection)."""

    def build(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
        import torch

        return torch.randn(BATCH, TEXT_LENGTH, shape.get(*names), generator=generator)

    return build, _sets(*names)


def _side(count: int) -> int:
    """The side of the square grid of ``count`` tokens."""
    return max(int(count**0.5), 1)


def _pooled_tokens(shape: _Shape, generator: torch.Generator, name: str) -> torch.Tensor:
    """A pooled embedding as one token, (BATCH, 1, the config's ``name``)."""
    import torch

    return torch.randn(BATCH, 1, shape.get(name, default=_TEXT_WIDTH), generator=generator)


def _frame_indices() -> torch.Tensor:
    """The latents' frame numbers, (FRAMES,), shared by the batch (as the Framepack pipeline passes them)."""
    import torch

    return torch.arange(FRAMES)


def _control(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    """Control latents (a VACE context): the latents' layout with the config's ``vace_in_channels``."""
    return _latents(_Shape({**shape.config, "in_channels": shape.get("vace_in_channels")}, shape.layout), generator)


def _pooled(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    import torch

    return torch.randn(BATCH, shape.get("pooled_projection_dim", default=_TEXT_WIDTH), generator=generator)


def _full(value: float, *, dtype: str = "float32", width: int | None = None) -> _Input:
    """An input of ``BATCH`` rows (of ``width`` columns) filled with ``value``."""

    def build(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
        import torch

        size = (BATCH,) if width is None else (BATCH, width)
        return torch.full(size, value, dtype=getattr(torch, dtype))

    return build


def _image_sizes(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    import torch

    return torch.tensor([[shape.size, shape.size]] * BATCH, dtype=torch.float32)


#: A text mask: every token attends.
_TEXT_MASK = _full(1, dtype="long", width=TEXT_LENGTH)


def _always(shape: _Shape) -> bool:
    return True


def _never(shape: _Shape) -> bool:
    return False


#: Forward parameter name -> (how to build its value, when to pass it if it is optional): an optional parameter is
#: passed only when its condition on the config holds (a conditioning the tiny config enables), else left to its
#: default. A required parameter is always built.
INPUTS: dict[str, tuple[_Input, Callable[[_Shape], bool]]] = {
    "hidden_states": (_latents, _always),
    "sample": (_latents, _always),
    "x": (_latents, _always),
    "timestep": (_full(500.0), _always),
    "t": (_full(500.0), _always),
    "timesteps": (_full(500.0), _always),
    "timestep_r": (_full(250.0), _never),  # a mean-flow target time r (<= t), when required (AceStep, AnyFlow)
    "r_timestep": (_full(250.0), _never),
    "image_latents": (_latents, _never),  # the image's latents, when required (I2VGenXL)
    "timestep_ratio": (_full(0.5), _always),  # StableCascade's time in [0, 1]
    "fps": (_full(8, dtype="long"), _always),
    "img_shapes": (lambda s, g: [[(1, _side(s.tokens), _side(s.tokens))]] * BATCH, _always),
    "clip_text_pooled": (lambda s, g: _pooled_tokens(s, g, "clip_text_pooled_in_channels"), _always),
    "encoder_hidden_states": (_text, lambda s: "cross_attention_dim" not in s.config or s.text_cross_attention),
    "cap_feats": (_text, _always),
    "encoder_attention_mask": (_TEXT_MASK, _always),
    "encoder_hidden_states_2": _second_text(*_SECOND_TEXT),
    "encoder_attention_mask_2": (_TEXT_MASK, _sets(*_SECOND_TEXT)),
    "encoder_hidden_states_t5": _second_text(*_T5_TEXT),
    "image_embeds": _second_text("image_embed_dim", "image_proj_dim"),
    "indices_latents": (lambda s, g: _frame_indices(), _always),
    "control_hidden_states": (_control, _sets("vace_in_channels")),
    "image_meta_size": (_full(LATENT_SIZE, width=6), _enabled("use_style_cond_and_image_meta_size")),
    "style": (_full(0, dtype="long"), _enabled("use_style_cond_and_image_meta_size")),
    "text_embedding_mask": (_TEXT_MASK, _sets(*_T5_TEXT)),
    "text_embedding_mask_t5": (_TEXT_MASK, _sets(*_T5_TEXT)),
    "pooled_projections": (_pooled, _sets("pooled_projection_dim")),
    "img_ids": (lambda s, g: _ids(s.tokens, grid=True, axes=s.position_axes), _always),
    "txt_ids": (lambda s, g: _ids(TEXT_LENGTH, grid=False, axes=s.position_axes), _always),
    "guidance": (_full(3.5), _enabled("guidance_embeds")),
    "class_labels": (_full(0, dtype="long"), _sets("num_embeds_ada_norm", "num_class_embeds")),
    "added_cond_kwargs": (lambda s, g: {"resolution": None, "aspect_ratio": None}, _always),
    "original_size": (_image_sizes, _always),
    "target_size": (_image_sizes, _always),
    "crop_coords": (_full(0, width=2), _always),
}


def forward_inputs(model: torch.nn.Module, *, seed: int = 0) -> dict[str, Any]:
    """The keyword inputs of one call of the tiny backbone ``model``, on the CPU, drawn from ``seed``.

    Raises ``ValueError`` naming a required parameter of ``forward`` that :data:`INPUTS` cannot build.
    """
    import torch

    name = type(model).__name__
    parameters = inspect.signature(model.forward).parameters
    shape = _Shape(dict(model.config), recipe(name).layout or _layout(name, parameters))  # type: ignore[arg-type]
    generator = torch.Generator().manual_seed(seed)
    inputs: dict[str, Any] = {}
    for parameter in parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        required = parameter.default is inspect.Parameter.empty
        if parameter.name not in INPUTS:
            if required:
                raise ValueError(f"{name}.forward needs {parameter.name!r}, which the matrix cannot build "
                                 "(hf_neuron.matrix.diffusion_models.INPUTS)")
            continue
        build, wanted = INPUTS[parameter.name]
        if required or wanted(shape):
            inputs[parameter.name] = build(shape, generator)
    return inputs


def _layout(name: str, parameters: Mapping[str, inspect.Parameter]) -> str:
    """Latent layout: packed tokens when ``forward`` takes their positions or grid (``img_ids``, ``img_shapes``), else
    from the class name's dimensionality (``3D`` video, frames after channels; ``1D`` sequence), else an image. A
    backbone that differs says so in ``compat/tiny_diffusion.toml`` (``layout``)."""
    if "img_ids" in parameters or "img_shapes" in parameters:
        return "tokens"
    if "3D" in name or "Video" in name:
        return "video"
    if "1D" in name:
        return "sequence"
    return "image"


def denoise(model: torch.nn.Module, inputs: Mapping[str, Any]) -> torch.Tensor:
    """One call of the backbone; its prediction (the first output)."""
    import torch

    with torch.no_grad():
        output = model(**inputs, return_dict=False) if "return_dict" in inspect.signature(model.forward).parameters \
            else model(**inputs)
    prediction: torch.Tensor = output[0] if isinstance(output, (tuple, list)) else output.sample
    return prediction
