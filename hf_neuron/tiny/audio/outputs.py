"""What the transformers scenarios compute with an audio model (:class:`hf_neuron.tiny.groups.TransformersModels`).

A model that listens writes tokens: its forward pass compares its ``logits``, its generation is greedy decoding
(:mod:`hf_neuron.tiny.transformers.outputs`) and its training step's labels are its prompt (the transcript the
decoder reads, or the language model's prompt); a model that speaks in codes trains on target code frames
(:mod:`hf_neuron.tiny.audio.labels`). A model that speaks makes something else: its forward pass compares
every floating output it returns (a waveform, a spectrogram, per-codebook logits...), and its generation gives what
``generate`` returns (a waveform, audio codes, a spectrogram) by name, compared with the CPU's within tolerance.
A model whose ``forward`` takes no ``labels``, or refuses them, has no training loss. Every forward pass and
generation starts from ``torch.manual_seed(seed)`` (the case's seed), so that what a model draws there (a variational
tokenizer's sampled latents: vibevoice's) is drawn the same way by every run with that seed.

A composite without a ``forward`` of its own (BarkModel, the Qwen omni models: their ``generate`` runs sub-models one
after another) is run through what it has: its forward pass is that of the sub-model that reads the prompt
(:func:`~.inputs.forward_model`: Bark's semantic model, the omni models' thinker with the sound); a listening one
writes tokens with that sub-model's greedy decoding (what the composite's ``generate`` runs first, and all it runs
when asked for text alone); a speaking one (Bark) makes its waveform with the composite's own ``generate``, each
sub-model as long and as greedy as its generation config says (a keyword such as ``max_new_tokens`` would go to every
sub-model, and the coarse one sets its own). It computes no training loss (no ``forward`` takes ``labels``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_audio import audio_recipe
from hf_neuron.tiny.audio.inputs import GENERATE_ONLY, forward_model, has_forward, listens
from hf_neuron.tiny.audio.labels import code_labels
from hf_neuron.tiny.groups import Decoding
from hf_neuron.tiny.transformers import outputs as text_outputs
from hf_neuron.tiny.transformers.inputs import generation_inputs
from hf_neuron.tiny.transformers.model_types import generative_types

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

__all__ = ["decode", "floating_outputs", "forward_outputs", "no_training_loss", "training_inputs",
           "writes_tokens"]


def _base(model: Any) -> Any:
    """The model behind a compiled wrapper."""
    return getattr(model, "_orig_mod", model)


def writes_tokens(model: PreTrainedModel) -> bool:
    """Whether ``model`` is one that listens and writes text (see the module docstring)."""
    base = _base(model)
    return listens(base, generative_types()[base.config.model_type].auto_class)


def floating_outputs(output: Any, name: str = "output") -> dict[str, torch.Tensor]:
    """The floating tensors of a model's output by name: a tensor itself, a tuple's items (``name.0``...), or a
    ``ModelOutput``'s fields (``logits`` alone when it has them)."""
    import torch

    if isinstance(output, torch.Tensor):
        return {name: output} if output.is_floating_point() else {name: output.float()}
    if isinstance(output, Mapping):
        items = dict(output)
        if isinstance(items.get("logits"), torch.Tensor):
            return {"logits": items["logits"]}
        return {key: value for key, value in items.items() if isinstance(value, torch.Tensor)
                and value.is_floating_point()}
    if isinstance(output, (tuple, list)):
        found: dict[str, torch.Tensor] = {}
        for index, item in enumerate(output):
            found.update(floating_outputs(item, f"{name}.{index}"))
        return found
    return {}


def _forward_inputs(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``inputs`` without what only ``generate`` reads (a ``text_and_codes`` model's sound)."""
    if audio_recipe(model.config.model_type).text_and_codes:
        return {key: value for key, value in inputs.items() if key != GENERATE_ONLY}
    return dict(inputs)


def forward_outputs(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], *,
                    seed: int = 0) -> dict[str, torch.Tensor]:
    """The outputs one forward pass compares, from ``torch.manual_seed(seed)``, without gradients (see the module
    docstring)."""
    import torch

    base = _base(model)
    if not has_forward(base):
        if base is not model:  # compiling the composite compiles nothing that runs
            raise TypeError(f"{type(base).__name__} has no forward to compile: its sub-models run one after another "
                            "in generate")
        model = forward_model(base)
    inputs = _forward_inputs(base, inputs)
    torch.manual_seed(seed)
    with torch.no_grad():
        found = floating_outputs(model(**inputs))
    if not found:
        raise LookupError(f"{type(_base(model)).__name__}'s forward returned no floating output to compare")
    return found


def decode(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], new_tokens: int, *, seed: int = 0,
           **generate_kwargs: Any) -> Decoding:
    """From ``torch.manual_seed(seed)``: greedy transcription for a model that writes tokens (in
    ``compat/tiny_audio.toml``: one whose ``input_ids`` hold audio codes, ``text_and_codes``, from its sound alone; a
    streaming one, ``streams``, from its prompt without the last ``new_tokens`` positions: it writes one token per
    audio embedding after them); else ``generate``'s output (at most ``new_tokens`` steps where it decodes step by
    step), by name."""
    import torch

    torch.manual_seed(seed)
    if audio_recipe(_base(model).config.model_type).text_and_codes:  # generate encodes the sound itself
        return text_outputs.greedy_decoding(model, {GENERATE_ONLY: inputs[GENERATE_ONLY]}, new_tokens,
                                            **generate_kwargs)
    if writes_tokens(model):
        writer = model if has_forward(_base(model)) else forward_model(_base(model))
        if audio_recipe(_base(model).config.model_type).streams:  # the sound's last embeddings are generate's
            inputs = {**inputs, **{key: inputs[key][:, :-new_tokens] for key in ("input_ids", "attention_mask")
                                   if key in inputs}}
        return text_outputs.greedy_decoding(writer, inputs, new_tokens, **generate_kwargs)
    start = generation_inputs(inputs)
    if getattr(model, "generation_config", None) is not None and has_forward(_base(model)):  # it decodes step by step
        generate_kwargs = {"max_new_tokens": new_tokens, "do_sample": False, **generate_kwargs}
    with torch.no_grad():
        output = model.generate(**start, **generate_kwargs)  # type: ignore[operator]
    found = floating_outputs(output, "generated")
    if not found:
        raise LookupError(f"{type(model).__name__}.generate returned nothing to compare")
    device = str(next(iter(found.values())).device)
    return Decoding(device, outputs={key: value.to("cpu", torch.float32) for key, value in found.items()})


def training_inputs(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The forward inputs with the prompt as ``labels``; for a model whose loss takes audio codes
    (``code_labels`` in ``compat/tiny_audio.toml``), with target code frames of its codebook shape instead
    (:func:`hf_neuron.tiny.audio.labels.code_labels`)."""
    recipe = audio_recipe(_base(model).config.model_type)
    if recipe.text_and_codes:  # the text column of input_ids: the codes are the sound's, not what it writes
        return {**_forward_inputs(_base(model), inputs), "labels": inputs["input_ids"][..., 0]}
    if recipe.code_labels is not None:
        return code_labels(model, inputs, recipe.code_labels)
    return text_outputs.training_inputs(model, inputs)


def no_training_loss(model: PreTrainedModel) -> str | None:
    """Why ``model`` computes no loss: its ``forward`` takes no ``labels``, or it refuses them (``trains = false`` in
    ``compat/tiny_audio.toml``, whose reason says how); else None."""
    base = _base(model)
    recipe = audio_recipe(base.config.model_type)
    if not recipe.trains:
        return recipe.reason
    if "labels" in inspect.signature(base.forward).parameters:
        return None
    return f"{type(base).__name__}.forward takes no labels: it computes no training loss"
