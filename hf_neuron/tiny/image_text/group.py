"""The ``image-text`` group's package: what :class:`hf_neuron.tiny.groups.TransformersModels` asks of a group, for
vision-language models (token ids with the images behind them, and the reviewed inputs drawn from the case's seed).

A language model's outputs, decoding and training are the default (:mod:`hf_neuron.tiny.transformers.outputs`);
what differs comes from the model's signature and the reviewed data: a ``forward`` that names no ``labels`` trains on
the drawn input the reviewed data names as its labels (a policy's ``actions``), or has no training loss; ``generate``
takes the reviewed ``generate_config``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_image_text import image_text_recipe
from hf_neuron.compat.tiny_overrides import load_overrides
from hf_neuron.tiny.groups import CpuCheck, Reviewed
from hf_neuron.tiny.image_text.decoding import decode
from hf_neuron.tiny.image_text.rows import drawn_labels, sample_ids
from hf_neuron.tiny.image_text.rows import inputs_for as model_inputs
from hf_neuron.tiny.transformers import outputs
from hf_neuron.tiny.transformers.config import DIMS, TinyDims
from hf_neuron.tiny.transformers.inputs import catalog_types, features, prompt_of
from hf_neuron.tiny.transformers.outputs import forward_outputs

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel


__all__ = ["catalog_types", "config_kwargs", "cpu_check", "decode", "features", "forward_outputs", "lora_targets",
           "materialize",
           "model_inputs", "no_training_loss", "reviewed", "sample_ids", "training_inputs"]


def materialize(name: str, out_dir: Path, /, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                dims: TinyDims = DIMS) -> Path:
    """The tiny checkpoint of ``name`` with its image processor (:mod:`hf_neuron.tiny.image_text.checkpoint`)."""
    from hf_neuron.tiny.image_text.checkpoint import materialize as build

    return build(name, out_dir, seed=seed, base=base, dims=dims)


def config_kwargs(name: str, /, *, base: Mapping[str, Any] | None = None, dims: TinyDims = DIMS) -> dict[str, Any]:
    """The config keyword arguments :func:`materialize` builds ``name`` from."""
    from hf_neuron.tiny.image_text.config import tiny_image_text_config_kwargs

    return tiny_image_text_config_kwargs(name, base=base, dims=dims)


def cpu_check(name: str) -> CpuCheck:
    """Build the tiny model and its image processor, run a forward pass and greedy decoding on image-text prompts."""
    from hf_neuron.tiny.image_text.cpu_check import check_image_text_model

    return check_image_text_model(name)


def reviewed(name: str) -> Reviewed | None:
    """``runs = false`` for ``name`` in ``compat/tiny_image_text.toml``, else in ``compat/tiny_overrides.toml``."""
    recipe = image_text_recipe(name)
    if not recipe.runs:
        return Reviewed(recipe.reason, recipe.gap)
    override = load_overrides().get(name)
    return None if override is None or override.runs else Reviewed(override.reason, override.gap)


def lora_targets(model: PreTrainedModel) -> list[str]:
    """The linear layers of the language model (``get_decoder()``); the vision tower and projector stay as they
    are."""
    import torch

    decoder = model.get_decoder()
    prefix = next((name for name, module in model.named_modules() if module is decoder), None)
    if prefix is None:
        raise LookupError(f"{type(model).__name__}.get_decoder() is none of its modules")
    return [f"{prefix}.{name}" if prefix else name for name, module in decoder.named_modules()
            if isinstance(module, torch.nn.Linear)]


def training_inputs(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``inputs`` with the drawn labels the reviewed data names (:func:`~.rows.drawn_labels`: a policy's
    ``actions``), else a language model's (the prompt as ``labels``)."""
    labels = drawn_labels(model, prompt_of(inputs))
    return {**inputs, **labels} if labels else outputs.training_inputs(model, inputs)


def no_training_loss(model: PreTrainedModel) -> str | None:
    """Why ``model`` has no training loss: its ``forward`` names no ``labels`` and the reviewed data names no drawn
    input it trains on (a block diffusion model's denoising loss is its trainer's); else a language model's
    answer."""
    import inspect

    if "labels" not in inspect.signature(model.forward).parameters \
            and image_text_recipe(model.config.model_type).labels is None:
        return (f"{type(model).__name__}.forward takes no labels and computes no loss (no reviewed input it trains "
                "on): the training scenarios do not apply")
    return outputs.no_training_loss(model)
