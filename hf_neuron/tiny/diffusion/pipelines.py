"""Tiny diffusion pipelines around a tiny backbone, built locally from the recipes of ``compat/tiny_diffusion.toml``.

:func:`build_pipeline` assembles the recipe's pipeline class from the backbone (in the pipeline's ``unet`` or
``transformer`` argument) and the recipe's component presets, each built on the CPU with weights drawn from the
case's seed (text encoders from transformers configs, VAEs and schedulers from diffusers, the tokenizer from
:mod:`hf_neuron.tiny.tokenizer`). :func:`run_pipeline` denoises for :data:`STEPS` steps with a CPU generator and
returns the images; the call's arguments are chosen by the names ``__call__`` accepts, plus the recipe's ``call``.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_diffusion import Component, Recipe

if TYPE_CHECKING:
    import torch

__all__ = ["BACKBONE_ARGUMENTS", "PROMPT", "STEPS", "build_pipeline", "run_pipeline"]

#: Denoising steps of ``generate``; the prompt of text-conditioned pipelines.
STEPS, PROMPT = 2, "a tiny red square"
#: The pipeline arguments that take the denoiser, in the order they are looked for.
BACKBONE_ARGUMENTS = ("unet", "transformer")
_TEXT_LENGTH = 16
#: Arguments set when ``__call__`` takes them: short T5 prompts, and no resizing to the full model's resolutions.
_CALL_DEFAULTS: dict[str, Any] = {"prompt": PROMPT, "max_sequence_length": _TEXT_LENGTH,
                                  "use_resolution_binning": False}


def _build(component: Component, seed: int) -> Any:
    import torch

    library, _, class_name = component.class_name.partition(".")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if component.class_name == "tiny-tokenizer":
            from hf_neuron.tiny.tokenizer import tiny_tokenizer

            tokenizer = tiny_tokenizer()
            for name, value in component.config.items():
                setattr(tokenizer, name, value)
            return tokenizer
        if library == "diffusers":
            import diffusers

            return getattr(diffusers, class_name)(**component.config)
        if library == "transformers":
            import transformers

            model_class = getattr(transformers, class_name)
            return model_class(model_class.config_class(**component.config)).eval()
    raise ValueError(f"component {component.name}: class {component.class_name!r} is not diffusers.X, "
                     "transformers.X or tiny-tokenizer")


def build_pipeline(backbone: torch.nn.Module, recipe: Recipe, *, seed: int = 0) -> Any:
    """The recipe's pipeline (a ``DiffusionPipeline``) around ``backbone``, on the CPU (each component drawn from
    ``seed``)."""
    import diffusers

    if recipe.pipeline is None:
        raise ValueError(f"no pipeline recipe for {type(backbone).__name__}")
    pipeline_class = getattr(diffusers, recipe.pipeline)
    parameters = inspect.signature(pipeline_class.__init__).parameters
    slot = next((name for name in BACKBONE_ARGUMENTS if name in parameters), None)
    if slot is None:
        raise ValueError(f"{recipe.pipeline} takes none of {BACKBONE_ARGUMENTS}")
    components = {name: None if preset is None else _build(preset, seed) for name, preset in recipe.components.items()}
    pipeline = pipeline_class(**{slot: backbone}, **components)
    pipeline.set_progress_bar_config(disable=True)
    return pipeline


def run_pipeline(pipeline: Any, recipe: Recipe, *, seed: int = 0) -> torch.Tensor:
    """The images of a :data:`STEPS`-step run, as a float32 CPU tensor (noise drawn on the CPU from ``seed``)."""
    import torch

    accepted = inspect.signature(type(pipeline).__call__).parameters
    arguments = {name: value for name, value in _CALL_DEFAULTS.items() if name in accepted}
    arguments.update(recipe.call)
    with torch.no_grad():
        output = pipeline(**arguments, num_inference_steps=STEPS, output_type="np",
                          generator=torch.Generator().manual_seed(seed))
    images: torch.Tensor = torch.from_numpy(output.images).to(torch.float32)
    return images
