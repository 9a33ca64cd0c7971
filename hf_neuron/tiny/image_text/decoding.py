"""The image-text group's decoding: a language model's (:func:`hf_neuron.tiny.transformers.outputs.decode`), with
the reviewed ``generate_config`` of ``compat/tiny_image_text.toml`` (a generation of the model's own, such as one
denoising step of a block diffusion model). The group's package and its catalog check both decode through here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_image_text import image_text_recipe
from hf_neuron.tiny.transformers import outputs

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

    from hf_neuron.tiny.groups import Decoding

__all__ = ["decode"]


def decode(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], new_tokens: int, *, seed: int = 0,
           **generate_kwargs: Any) -> Decoding:
    """A language model's decoding (:func:`~hf_neuron.tiny.transformers.outputs.decode`), with the reviewed
    ``generate_config`` (``generate_kwargs`` win)."""
    config = getattr(model, "_orig_mod", model).config
    return outputs.decode(model, inputs, new_tokens, seed=seed,
                          **{**image_text_recipe(config.model_type).generate_config, **generate_kwargs})
