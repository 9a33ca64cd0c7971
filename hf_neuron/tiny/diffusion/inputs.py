"""The inputs of one call of a tiny diffusion backbone, built from the names of its ``forward``'s parameters.

:func:`forward_inputs` builds the keyword inputs from :data:`INPUTS` (how to build each known parameter, and when to
pass an optional one) and the backbone's config; :func:`denoise` calls the backbone and returns its prediction.
A backbone whose latents are laid out differently says so in ``compat/tiny_diffusion.toml`` (``layout``), and one
whose parameters the generic rules cannot build gives them there (``inputs``: :func:`build_spec`).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_diffusion import InputSpec, Layout, check_expression, recipe
from hf_neuron.tiny import UnbuildableInputError
from hf_neuron.tiny.diffusion.backbones import (
    BATCH,
    FRAMES,
    LATENT_SIZE,
    ROTARY_AXES,
    TEXT_LENGTH,
    TEXT_WIDTH,
)

if TYPE_CHECKING:
    import torch

__all__ = ["INPUTS", "LARGEST_LATENT", "RULES", "build_spec", "denoise", "evaluate", "forward_inputs", "predict"]

#: The largest latent side an input is built with.
LARGEST_LATENT = 32


@dataclasses.dataclass(frozen=True)
class _Shape:
    """What the inputs of one backbone are built from (the model itself, for rules that ask it, e.g. for its rotary
    embedding)."""

    config: Mapping[str, Any]
    layout: Layout
    model: Any = None
    #: Rows of every batched input (ddp builds them again for twice the harness's batch to find which inputs hold it).
    batch: int = BATCH

    def get(self, *names: str, default: Any = None) -> Any:
        """The first of ``names`` the config sets (not None)."""
        return next((self.config[n] for n in names if self.config.get(n) is not None), default)

    def first_int(self, *names: str, default: int) -> int:
        """:meth:`get` as an int (the last item of a list or tuple, as for per-axis patch sizes)."""
        value = self.get(*names, default=default)
        return int(value[-1] if isinstance(value, (list, tuple)) else value)

    @property
    def size(self) -> int:
        """The latents' side: the config's ``sample_size``, at most :data:`LARGEST_LATENT` (a real checkpoint's 128
        would make one call of its real-width slice cost minutes; pipelines run smaller images the same way)."""
        return min(self.first_int("sample_size", default=LATENT_SIZE), LARGEST_LATENT)

    @property
    def channels(self) -> int:
        return self.first_int("in_channels", "in_dim", "latent_channels", "in_visual_dim", default=4)

    @property
    def text_width(self) -> int:
        return self.first_int("encoder_hid_dim", "caption_channels", "joint_attention_dim", "cross_attention_dim",
                              "text_embed_dim", "text_dim", "cap_feat_dim", "text_hidden_dim", "condition_dim",
                              "context_in_dim", "context_dim", default=TEXT_WIDTH)

    @property
    def text_cross_attention(self) -> bool:
        """Whether the backbone attends to text: not when its config sets ``cross_attention_dim`` (and
        ``caption_channels``) to None."""
        return self.get("cross_attention_dim", "caption_channels") is not None

    @property
    def position_axes(self) -> int:
        """Columns of a token position: one per rotary axis (3 unless the config has more)."""
        axes = next((v for n, v in self.config.items() if ROTARY_AXES.fullmatch(n) and isinstance(v, (list, tuple))),
                    ())
        return max(len(axes), 3)

    @property
    def tokens(self) -> int:
        return (self.size // max(self.first_int("patch_size", default=1), 1)) ** 2

    def names(self) -> dict[str, Any]:
        """What a size expression may name: the config's arguments, then the harness's sizes
        (:data:`~hf_neuron.compat.tiny_diffusion.EXPRESSION_NAMES`)."""
        return {**self.config, "batch": self.batch, "frames": FRAMES, "size": self.size, "text": TEXT_LENGTH,
                "channels": self.channels, "tokens": self.tokens, "text_width": self.text_width}


def _latents(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    import torch

    sizes: dict[Layout, tuple[int, ...]] = {  # one shape per layout of compat.tiny_diffusion.LAYOUTS
        "image": (shape.batch, shape.channels, shape.size, shape.size),
        "video": (shape.batch, shape.channels, FRAMES, shape.size, shape.size),
        "video-frames-first": (shape.batch, FRAMES, shape.channels, shape.size, shape.size),
        "video-channels-last": (shape.batch, FRAMES, shape.size, shape.size, shape.channels),
        "sequence": (shape.batch, shape.channels, shape.size * shape.size),
        "tokens": (shape.batch, shape.tokens, shape.channels),
    }
    return torch.randn(sizes[shape.layout], generator=generator)


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

    return torch.randn(shape.batch, TEXT_LENGTH, shape.text_width, generator=generator)


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

        return torch.randn(shape.batch, TEXT_LENGTH, shape.get(*names), generator=generator)

    return build, _sets(*names)


def _side(count: int) -> int:
    """The side of the square grid of ``count`` tokens."""
    return max(int(count**0.5), 1)


def _pooled_tokens(shape: _Shape, generator: torch.Generator, name: str) -> torch.Tensor:
    """A pooled embedding as one token, (batch, 1, the config's ``name``)."""
    import torch

    return torch.randn(shape.batch, 1, shape.get(name, default=TEXT_WIDTH), generator=generator)


def _frame_indices() -> torch.Tensor:
    """The latents' frame numbers, (FRAMES,), shared by the batch (as the Framepack pipeline passes them)."""
    import torch

    return torch.arange(FRAMES)


def _control(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    """Control latents (a VACE context): the latents' layout with the config's ``vace_in_channels``."""
    return _latents(_Shape({**shape.config, "in_channels": shape.get("vace_in_channels")}, shape.layout, shape.model),
                    generator)


def _pooled(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    import torch

    return torch.randn(shape.batch, shape.get("pooled_projection_dim", default=TEXT_WIDTH), generator=generator)


#: SDXL's micro-conditioning, the time ids its UNet embeds beside the pooled text: original size, crop corner, target
#: size.
_TIME_IDS = 6


def _added_conditions(shape: _Shape, generator: torch.Generator) -> dict[str, Any]:
    """What a backbone reads from ``added_cond_kwargs``: for a UNet whose ``addition_embed_type`` is ``text_time``
    (SDXL's, the refiner's), the pooled text embedding and the time ids, their widths adding up to its
    ``projection_class_embeddings_input_dim``; PixArt's resolution and aspect ratio, unset, otherwise."""
    import torch

    if shape.config.get("addition_embed_type") != "text_time":
        return {"resolution": None, "aspect_ratio": None}
    pooled = shape.config["projection_class_embeddings_input_dim"] - _TIME_IDS * shape.config["addition_time_embed_dim"]
    return {"text_embeds": torch.randn(shape.batch, pooled, generator=generator),
            "time_ids": torch.full((shape.batch, _TIME_IDS), float(shape.size))}


def _full(value: float, *, dtype: str = "float32", width: int | None = None) -> _Input:
    """An input of ``shape.batch`` rows (of ``width`` columns) filled with ``value``."""

    def build(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
        import torch

        size = (shape.batch,) if width is None else (shape.batch, width)
        return torch.full(size, value, dtype=getattr(torch, dtype))

    return build


def _image_sizes(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    import torch

    return torch.tensor([[shape.size, shape.size]] * shape.batch, dtype=torch.float32)


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
    "img_shapes": (lambda s, g: [[(1, _side(s.tokens), _side(s.tokens))]] * s.batch, _always),
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
    "added_cond_kwargs": (_added_conditions, _always),
    "original_size": (_image_sizes, _always),
    "target_size": (_image_sizes, _always),
    "crop_coords": (_full(0, width=2), _always),
}


_FUNCTIONS: dict[str, Callable[..., Any]] = {"len": len, "sum": sum, "max": max, "min": min}
_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
}


def _value(node: ast.expr, names: Mapping[str, Any], text: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise UnbuildableInputError(f"size {text!r} names {node.id!r}: neither a config argument of the backbone "
                                        "nor one of the harness's sizes")
        return names[node.id]
    if isinstance(node, ast.BinOp):
        return _OPERATORS[type(node.op)](_value(node.left, names, text), _value(node.right, names, text))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)  # check_expression allows nothing else
    return _FUNCTIONS[node.func.id](*(_value(argument, names, text) for argument in node.args))


def evaluate(size: int | str, names: Mapping[str, Any]) -> Any:
    """A size of an input spec: an int, or an expression over ``names`` (checked by
    :func:`~hf_neuron.compat.tiny_diffusion.check_expression`)."""
    if isinstance(size, int):
        return size
    return _value(check_expression(size).body, names, size)


def build_spec(spec: InputSpec, shape: _Shape, generator: torch.Generator) -> Any:
    """The value an input spec of ``compat/tiny_diffusion.toml`` describes (a list of ``count`` of them)."""
    if spec.count is None:
        return _one(spec, shape, generator)
    return [_one(spec, shape, generator) for _ in range(int(evaluate(spec.count, shape.names())))]


def _one(spec: InputSpec, shape: _Shape, generator: torch.Generator) -> Any:
    import torch

    names = shape.names()
    dtype = getattr(torch, spec.dtype)
    sizes = tuple(int(evaluate(size, names)) for size in spec.shape) if spec.shape is not None else (shape.batch,)
    if spec.kind == "randn":
        return torch.randn(sizes, generator=generator).to(dtype)
    if spec.kind == "fill":
        return torch.full(sizes, spec.argument, dtype=dtype)
    if spec.kind == "randint":
        low, high = (int(evaluate(bound, names)) for bound in spec.argument)
        return torch.randint(low, high, sizes, generator=generator).to(dtype)
    if spec.kind == "arange":  # along the last axis of the shape, when one is given
        start, stop = (int(evaluate(bound, names)) for bound in spec.argument)
        values = torch.arange(start, stop).to(dtype)
        return values if spec.shape is None else values.expand(sizes).contiguous()
    if spec.kind == "tensor":  # with a shape, the literal broadcast to it (a row repeated per batch item)
        values = torch.tensor(spec.argument, dtype=dtype)
        return values if spec.shape is None else values.expand(sizes).contiguous()
    if spec.kind == "int":
        return int(evaluate(spec.argument, names))
    if spec.kind == "items":
        return [build_spec(item, shape, generator) for item in spec.argument]
    if spec.kind == "fields":
        return {key: build_spec(item, shape, generator) for key, item in spec.argument.items()}
    if spec.kind == "concat":
        return torch.cat([build_spec(item, shape, generator) for item in spec.argument], dim=spec.dim).to(dtype)
    if spec.kind == "rule":
        build = RULES.get(spec.argument) or INPUTS.get(spec.argument, (None,))[0]
        if build is None:
            raise UnbuildableInputError(f"no input rule named {spec.argument!r} (hf_neuron.tiny.diffusion.inputs."
                                        "RULES, INPUTS)")
        return build(shape, generator)
    return spec.argument  # "value": a plain Python value, as the data file gives it


def _lumina_rotary(shape: _Shape, generator: torch.Generator) -> torch.Tensor:
    """The rotary embedding LuminaPipeline precomputes for LuminaNextDiT (complex, over the head dim), for a grid of
    the latent side."""
    from diffusers.models.embeddings import get_2d_rotary_pos_embed_lumina

    head_dim = shape.first_int("hidden_size", default=32) // shape.first_int("num_attention_heads", default=2)
    rotary: torch.Tensor = get_2d_rotary_pos_embed_lumina(head_dim, shape.size, shape.size)
    return rotary


def _sana_wm_refiner_rotary(shape: _Shape, generator: torch.Generator) -> Any:
    """The video rotary embedding SanaWM's refiner pipeline asks the backbone for: the latents' frames in order."""
    import torch

    return shape.model.build_rotary_emb_for_absolute_positions(
        batch_size=shape.batch, frame_positions=list(range(FRAMES)), height=shape.size, width=shape.size,
        device=torch.device("cpu"), fps=24.0)


def _wan_animate2_kv_cache(shape: _Shape, generator: torch.Generator) -> Any:
    """An empty key/value cache of WanAnimate2, one slot per layer (the pipeline's first step fills it)."""
    from diffusers.models.transformers.transformer_wan_animate_2 import WanAnimate2KVCache

    return WanAnimate2KVCache(shape.first_int("num_layers", default=2))


#: Inputs a spec of ``compat/tiny_diffusion.toml`` can name (``rule = "..."``) that no parameter name implies: what a
#: pipeline computes (or asks the backbone for) before calling it. A spec may also name any parameter of
#: :data:`INPUTS`.
RULES: dict[str, _Input] = {
    "lumina_rotary_emb": _lumina_rotary,
    "sana_wm_refiner_rotary": _sana_wm_refiner_rotary,
    "wan_animate2_kv_cache": _wan_animate2_kv_cache,
}


def forward_inputs(model: torch.nn.Module, *, seed: int = 0, batch: int = BATCH) -> dict[str, Any]:
    """The keyword inputs of one call of the tiny backbone ``model``, on the CPU, drawn from ``seed``, with ``batch``
    rows in every input that holds the batch.

    Raises :class:`~hf_neuron.tiny.UnbuildableInputError` naming a required parameter of ``forward`` that :data:`INPUTS`
    cannot build.
    """
    import torch

    name = type(model).__name__
    reviewed = recipe(name)
    parameters = inspect.signature(model.forward).parameters
    shape = _Shape(dict(model.config), reviewed.layout or _layout(name, parameters), model,  # type: ignore[arg-type]
                   batch)
    generator = torch.Generator().manual_seed(seed)
    inputs: dict[str, Any] = {}
    unknown = sorted(set(reviewed.inputs) - set(parameters))
    if unknown:
        raise UnbuildableInputError(f"compat/tiny_diffusion.toml gives inputs {unknown} that {name}.forward does not "
                                    "take")
    for parameter in parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        required = parameter.default is inspect.Parameter.empty
        spec = reviewed.inputs.get(parameter.name)
        if spec is not None:
            if spec.kind != "omit":
                inputs[parameter.name] = build_spec(spec, shape, generator)
            continue
        if parameter.name not in INPUTS:
            if required:
                raise UnbuildableInputError(f"{name}.forward needs {parameter.name!r}, which the harness cannot build "
                                       "(hf_neuron.tiny.diffusion.inputs.INPUTS)")
            continue
        build, wanted = INPUTS[parameter.name]
        if required or wanted(shape):
            inputs[parameter.name] = build(shape, generator)
    return inputs


def _layout(name: str, parameters: Mapping[str, inspect.Parameter]) -> Layout:
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


def predict(model: torch.nn.Module, inputs: Mapping[str, Any]) -> torch.Tensor:
    """One call of the backbone (or of ``torch.compile``'s wrapper of it), gradients allowed; its prediction (the
    first output; a backbone of packed sequences that predicts one tensor per item gives them flattened and
    concatenated)."""
    import torch

    forward = getattr(model, "_orig_mod", model).forward  # a compiled module's own forward takes (*args, **kwargs)
    output = model(**inputs, return_dict=False) if "return_dict" in inspect.signature(forward).parameters \
        else model(**inputs)
    if isinstance(output, torch.Tensor):
        return output
    prediction = output[0] if isinstance(output, (tuple, list)) else output.sample
    if isinstance(prediction, (tuple, list)):
        prediction = torch.cat([item.flatten() for item in prediction])
    result: torch.Tensor = prediction
    return result


def denoise(model: torch.nn.Module, inputs: Mapping[str, Any]) -> torch.Tensor:
    """:func:`predict` without gradients: what inference computes."""
    import torch

    with torch.no_grad():
        return predict(model, inputs)
