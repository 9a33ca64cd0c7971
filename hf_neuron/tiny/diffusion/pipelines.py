"""Tiny diffusion pipelines around a tiny backbone, built locally from the recipes of ``compat/tiny_diffusion.toml``.

:func:`build_pipeline` assembles the recipe's pipeline class from the backbone (in the pipeline's denoiser argument:
``unet``, ``transformer``, ``prior`` or ``decoder``, or the recipe's ``slot``) and the recipe's component presets,
each built on the CPU with weights drawn from the case's seed: diffusers classes (VAEs, schedulers) from their
config; transformers models from a config of their class, or from the project's own tiny builder of a ``model_type``
(:func:`hf_neuron.tiny.transformers.config.tiny_config`, the LLM text encoders recent pipelines use) with the
preset's config over it; transformers processors from their arguments and ``parts`` (other presets); the tokenizer
from :mod:`hf_neuron.tiny.tokenizer`. :func:`run_pipeline` denoises for :data:`STEPS` steps with a CPU generator and
returns what the pipeline made, by name (``images``, ``frames`` of a video, ``audios``), as float32 tensors; the
call's arguments are chosen by the names ``__call__`` accepts (:data:`CALL_DEFAULTS`, an image size of
:data:`~hf_neuron.tiny.diffusion.backbones.LATENT_SIZE` latents), then the recipe's ``call`` (where ``{ image = [w,
h] }`` is a picture and ``{ video = [frames, w, h] }`` a list of them).

:func:`shipped_pipelines` says which pipelines diffusers ships for a backbone: ``generate`` does not apply to a
backbone without one.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_diffusion import BACKBONE, NONE, REQUIREMENTS, Component, Recipe
from hf_neuron.tiny.diffusion.backbones import LATENT_SIZE

if TYPE_CHECKING:
    import torch

__all__ = [
    "BACKBONE_ARGUMENTS",
    "CALL_DEFAULTS",
    "OUTPUTS",
    "PROMPT",
    "STEPS",
    "build_component",
    "build_pipeline",
    "picture",
    "pipeline_class",
    "run_pipeline",
    "shipped_pipelines",
    "unmet_requirement",
]

#: Denoising steps of ``generate``; the prompt of text-conditioned pipelines.
STEPS, PROMPT = 2, "a tiny red square"
#: The pipeline arguments that take the denoiser, in the order they are looked for.
BACKBONE_ARGUMENTS = ("unet", "transformer", "prior", "decoder")
_TEXT_LENGTH = 16
#: Arguments set when ``__call__`` takes them: short prompts (a negative one too: some pipelines pad the prompts to
#: their longest, and an empty one has no token), no resizing to the full model's resolutions, no caption cleaning
#: (it needs Beautiful Soup).
CALL_DEFAULTS: dict[str, Any] = {"prompt": PROMPT, "negative_prompt": "blurry", "max_sequence_length": _TEXT_LENGTH,
                                 "use_resolution_binning": False, "clean_caption": False}
#: What a pipeline's output may hold, by attribute: images, a video's frames, audio, a prior's image embeddings, a
#: protein's atom coordinates and its denoised backbone and local latents.
OUTPUTS = ("images", "frames", "video", "videos", "audios", "audio", "sound", "image_embeddings", "image_embeds",
           "negative_image_embeds", "coords_nm", "bb_ca", "local_latents")
#: The attributes a pipeline keeps its spatial VAE scale in (the first one it has is used).
_SCALE_ATTRIBUTES = ("vae_scale_factor_spatial", "vae_spatial_compression_ratio", "vae_spatial_scale_factor",
                     "vae_scale_factor", "movq_scale_factor")


def picture(width: int, height: int, seed: int = 0) -> Any:
    """A deterministic RGB picture (a PIL image) of ``width`` x ``height`` pixels, drawn from ``seed``."""
    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    return Image.fromarray(pixels, mode="RGB")


def _call_value(value: Any, seed: int) -> Any:
    """A recipe's call argument: ``{ image = [w, h] }`` a picture, ``{ video = [n, w, h] }`` n of them, ``{ randn =
    [sizes] }`` a tensor of normal values (a previous stage's latents), ``{ randint = [low, high], shape = [sizes]
    }`` one of integers (a previous stage's token ids), ``{ fill = x, shape = [sizes], dtype = "bool" }`` one of a
    single value (a mask), ``{ fields = { ... } }`` a dict of such values, ``"none"`` Python's ``None`` (TOML has no
    null: an argument whose default the recipe turns off); else as is."""
    if value == NONE:
        return None
    if isinstance(value, dict) and set(value) == {"randn"}:
        import torch

        return torch.randn(value["randn"], generator=torch.Generator().manual_seed(seed))
    if isinstance(value, dict) and set(value) == {"randint", "shape"}:
        import torch

        low, high = value["randint"]
        return torch.randint(low, high, value["shape"], generator=torch.Generator().manual_seed(seed))
    if isinstance(value, dict) and set(value) == {"fill", "shape", "dtype"}:
        import torch

        return torch.full(value["shape"], value["fill"], dtype=getattr(torch, value["dtype"]))
    if isinstance(value, dict) and set(value) == {"fields"}:
        return {name: _call_value(field, seed) for name, field in value["fields"].items()}
    if isinstance(value, dict) and set(value) == {"image"}:
        width, height = value["image"]
        return picture(width, height, seed)
    if isinstance(value, dict) and set(value) == {"video"}:
        frames, width, height = value["video"]
        return [picture(width, height, seed + index) for index in range(frames)]
    return value


def _placed(value: Any, device: Any) -> Any:
    """``value`` with its tensors (itself, or the values of a dict) on ``device``."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {name: _placed(item, device) for name, item in value.items()}
    return value


def build_component(component: Component, seed: int, presets: Mapping[str, Component] | None = None) -> Any:
    """The preset ``component``, built on the CPU from ``seed`` (its ``parts`` built first, from ``presets``), with
    its ``methods`` called on it."""
    built = _build(component, seed, presets)
    for method in component.methods:
        if not callable(getattr(built, method, None)):
            raise ValueError(f"component {component.name}: {type(built).__name__} has no method {method!r}")
        getattr(built, method)()
    return built


def _build(component: Component, seed: int, presets: Mapping[str, Component] | None) -> Any:
    import torch

    library, _, class_name = component.class_name.partition(".")
    parts = {argument: build_component(_preset(presets, name), seed, presets) for argument, name in
             component.parts.items()}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if component.class_name == "tiny-guardrail":
            from hf_neuron.tiny.diffusion.guardrail import PassThroughGuardrail

            return PassThroughGuardrail(**component.config)
        if component.class_name == "tiny-tokenizer":
            from hf_neuron.tiny.tokenizer import tiny_tokenizer

            tokenizer = tiny_tokenizer()
            for name, value in component.config.items():
                setattr(tokenizer, name, value)
            return tokenizer
        if library == "diffusers":
            return _class(component.class_name)(**component.config, **parts)
        if library == "transformers":
            import transformers

            cls = getattr(transformers, class_name)
            if component.model_type is not None:
                from hf_neuron.tiny.transformers.config import tiny_config

                config = tiny_config(component.model_type, dict(component.config))
                return cls(getattr(config, component.subconfig) if component.subconfig else config).eval()
            config_class = getattr(cls, "config_class", None)
            if config_class is None or not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
                return cls(**component.config, **parts)  # a processor, an image processor, a tokenizer
            return cls(config_class(**component.config)).eval()
    raise ValueError(f"component {component.name}: class {component.class_name!r} is not diffusers.X, "
                     "transformers.X, tiny-tokenizer or tiny-guardrail")


def unmet_requirement(recipe: Recipe) -> str | None:
    """Why the recipe's pipeline cannot run here, when one of the optional packages it ``requires`` is not installed
    or does not import (a build for another torch), with what to do (:data:`REQUIREMENTS`); else None."""
    import importlib
    import importlib.util

    for package in recipe.requires:
        if importlib.util.find_spec(package) is None:
            problem = "is not installed"
        else:
            try:
                importlib.import_module(package)
                continue
            except Exception as error:  # noqa: BLE001 - a build for another torch fails in many ways
                first_line = (str(error).strip().splitlines() or [""])[0]
                problem = f"does not import ({type(error).__name__}: {first_line})"
        return f"{recipe.pipeline} needs {package}, which {problem}: {REQUIREMENTS[package]}"
    return None


def _class(dotted: str) -> Any:
    """``diffusers.X`` (an export of diffusers), or ``diffusers.<module>.X`` (a class diffusers does not export)."""
    import importlib

    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def pipeline_class(recipe: Recipe) -> type[Any]:
    """The recipe's pipeline class: ``X``, an export of diffusers, or ``diffusers.<module>.X``, a pipeline class
    taken from its module (diffusers exports a placeholder for it where an optional dependency the pipeline itself
    does not need is missing: SpectrogramDiffusionPipeline without note_seq)."""
    if recipe.pipeline is None:
        raise ValueError("the recipe has no pipeline")
    return _class(recipe.pipeline if "." in recipe.pipeline else f"diffusers.{recipe.pipeline}")


def _preset(presets: Mapping[str, Component] | None, name: str) -> Component:
    if presets is None or name not in presets:
        raise ValueError(f"no component preset {name!r}")
    return presets[name]


def _slot(cls: type[Any], recipe: Recipe) -> str:
    parameters = inspect.signature(cls.__init__).parameters
    if recipe.slot is not None:
        if recipe.slot not in parameters:
            raise ValueError(f"{cls.__name__} takes no argument {recipe.slot!r}")
        return recipe.slot
    slot = next((name for name in BACKBONE_ARGUMENTS if name in parameters), None)
    if slot is None:
        raise ValueError(f"{cls.__name__} takes none of {BACKBONE_ARGUMENTS}")
    return slot


def build_pipeline(backbone: torch.nn.Module, recipe: Recipe, *, seed: int = 0,
                   presets: Mapping[str, Component] | None = None) -> Any:
    """The recipe's pipeline (a ``DiffusionPipeline``) around ``backbone``, on the CPU (each component drawn from
    ``seed``)."""
    if recipe.pipeline is None:
        raise ValueError(f"no pipeline recipe for {type(backbone).__name__}")
    cls = pipeline_class(recipe)
    components = {name: None if preset is None else backbone if preset.name == BACKBONE else
                  build_component(preset, seed, presets) for name, preset in recipe.components.items()}
    pipeline = cls(**{_slot(cls, recipe): backbone}, **components, **recipe.init)
    pipeline.set_progress_bar_config(disable=True)
    return pipeline


def _size(pipeline: Any) -> int:
    """The image side that makes :data:`LATENT_SIZE` latents: the latent side times the pipeline's VAE scale."""
    scale = next((getattr(pipeline, name) for name in _SCALE_ATTRIBUTES if getattr(pipeline, name, None)), 1)
    return int(LATENT_SIZE * scale)


def _tensor(value: Any) -> torch.Tensor:
    """An output as a float32 CPU tensor (numpy arrays, tensors, or lists of them)."""
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", torch.float32)
    if isinstance(value, (list, tuple)):
        return torch.stack([_tensor(item) for item in value])
    return torch.from_numpy(np.asarray(value, dtype=np.float32))


def run_pipeline(pipeline: Any, recipe: Recipe, *, seed: int = 0) -> dict[str, torch.Tensor]:
    """What a :data:`STEPS`-step run makes, by output name (:data:`OUTPUTS`), as float32 CPU tensors (noise drawn on
    the CPU from ``seed``, the global generators seeded with it too), and the ``latents`` after the last step where
    the pipeline hands them to a step-end callback."""
    import numpy as np
    import torch

    accepted = inspect.signature(type(pipeline).__call__).parameters
    side = _size(pipeline)
    defaults = {**CALL_DEFAULTS, "height": side, "width": side}
    arguments = {name: value for name, value in defaults.items() if name in accepted}
    # a tensor stands for a previous stage's result: on the pipeline's device, where that stage left it
    arguments.update({name: _placed(_call_value(value, seed), pipeline.device) for name, value in recipe.call.items()})
    if "output_type" in accepted:
        arguments.setdefault("output_type", "np")
    denoised: list[torch.Tensor] = []
    if "callback_on_step_end" in accepted and "latents" in getattr(pipeline, "_callback_tensor_inputs", ()):

        def keep(pipe: Any, step: int, timestep: Any, tensors: dict[str, Any]) -> dict[str, Any]:
            denoised[:] = [_tensor(tensors["latents"])]
            return tensors

        arguments.update(callback_on_step_end=keep, callback_on_step_end_tensor_inputs=["latents"])
    if "num_inference_steps" in accepted:  # a pipeline of fixed sigmas has none (SanaWM's refiner)
        arguments["num_inference_steps"] = STEPS
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        # Some pipelines also draw from the global generators, not only from ``generator`` (I2VGenXL samples its
        # image's VAE latents with none): seeded too, every run of a pipeline draws the same numbers.
        torch.manual_seed(seed)
        output = pipeline(**arguments, generator=torch.Generator().manual_seed(seed))
    if isinstance(output, (torch.Tensor, np.ndarray)):  # a pipeline that returns its result bare
        return {"output": _tensor(output)}
    made = {name: _tensor(getattr(output, name)) for name in OUTPUTS if getattr(output, name, None) is not None}
    if denoised:  # the denoiser's result before decoding: a decoder can all but hide a difference in it
        made["latents"] = denoised[0]
    if not made:
        raise ValueError(f"{type(pipeline).__name__} returned {type(output).__name__} with none of {OUTPUTS}")
    return made


@functools.cache
def _pipeline_classes() -> tuple[tuple[str, str], ...]:
    """(pipeline class name, the annotations of its denoiser arguments as text) of every pipeline diffusers exports
    (a placeholder of a pipeline whose optional dependency is missing has no annotations: a recipe names it)."""
    import diffusers

    found = []
    for name in dir(diffusers):
        if not name[:1].isupper() or name.endswith(("Model", "Scheduler", "Output", "Mixin", "Config")):
            continue
        try:
            cls = getattr(diffusers, name)
        except Exception:  # noqa: BLE001 - an optional dependency's placeholder that fails to import
            continue
        if not isinstance(cls, type) or not issubclass(cls, diffusers.DiffusionPipeline):
            continue
        try:
            parameters = inspect.signature(cls.__init__).parameters
        except (TypeError, ValueError):
            continue
        annotations = " ".join(str(parameters[slot].annotation) for slot in (*BACKBONE_ARGUMENTS, "transformer_2")
                               if slot in parameters)
        if annotations:
            found.append((name, annotations))
    return tuple(found)


def shipped_pipelines(backbone: str) -> tuple[str, ...]:
    """The pipelines diffusers exports whose denoiser argument is annotated with the class ``backbone``, sorted."""
    word = re.compile(rf"\b{re.escape(backbone)}\b")
    return tuple(sorted(name for name, annotations in _pipeline_classes() if word.search(annotations)))
