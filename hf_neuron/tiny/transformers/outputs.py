"""What the transformers scenarios compute with a language model, the default every transformers group's package
may take: the outputs a forward pass compares (its ``logits``), greedy decoding (new tokens and each step's scores),
and a training step's inputs (the prompt as labels: its ``loss`` is the next-token loss). A group whose models make
something else than tokens (a waveform, audio codes, a spectrogram) or train with other labels gives its own
(:class:`hf_neuron.tiny.groups.TransformersModels`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.tiny.groups import Decoding
from hf_neuron.tiny.transformers.inputs import generation_inputs, prompt_of

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

__all__ = ["compileable", "decode", "forward_outputs", "greedy_decoding", "no_training_loss", "training_inputs"]


def forward_outputs(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The ``logits`` of one forward pass on ``inputs``, without gradients."""
    import torch

    with torch.no_grad():
        return {"logits": model(**inputs).logits}


def greedy_decoding(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], new_tokens: int,
                    **generate_kwargs: Any) -> Decoding:
    """``generate`` from ``inputs`` (:func:`generation_inputs`) for exactly ``new_tokens`` greedy tokens (end of
    sequence suppressed, so every row decodes the same number): the new tokens and each step's scores."""
    import torch

    start = generation_inputs(inputs)
    if "input_ids" in start:
        start.setdefault("attention_mask", torch.ones_like(start["input_ids"]))
    with torch.no_grad():
        out = model.generate(  # type: ignore[operator]
            **start, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, num_beams=1,
            output_scores=True, return_dict_in_generate=True, **generate_kwargs,
        )
    cache = getattr(out, "past_key_values", None)
    return Decoding(str(out.sequences.device), out.sequences[:, -new_tokens:].to("cpu"),
                    torch.stack(out.scores).to("cpu", torch.float32), cache=type(cache).__name__,
                    compileable=compileable(cache))


def compileable(cache: Any) -> bool:
    """Whether transformers compiles decoding with ``cache`` (on a device it compiles for): a compileable cache that
    is not a dynamic one (an encoder-decoder's by its self-attention cache), as ``generate`` decides."""
    from transformers import DynamicCache, EncoderDecoderCache

    decoder_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
    return bool(getattr(cache, "is_compileable", False)) and type(decoder_cache) is not DynamicCache


def decode(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], new_tokens: int,
           **generate_kwargs: Any) -> Decoding:
    """A language model's generation: :func:`greedy_decoding` (an encoder-decoder whose encoder reads no text
    continues its decoder's prompt); a draft model's is its drafting loop
    (:func:`hf_neuron.tiny.transformers.drafter.draft`, which keeps no cache, so asked for a static one it has
    none)."""
    from hf_neuron.tiny.transformers import drafter

    if drafter.target_type(getattr(model, "_orig_mod", model).config.model_type) is not None:
        return drafter.draft(model, inputs, new_tokens)
    return greedy_decoding(model, inputs, new_tokens, **generate_kwargs)


def training_inputs(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``inputs`` with the prompt (:func:`prompt_of`) as ``labels``."""
    return {**inputs, "labels": prompt_of(inputs)}


def no_training_loss(model: PreTrainedModel) -> str | None:
    """None: a language model computes its loss from labels; a draft model computes none
    (:func:`hf_neuron.tiny.transformers.drafter.no_training_loss`)."""
    from hf_neuron.tiny.transformers import drafter

    return drafter.no_training_loss(model) if drafter.target_type(model.config.model_type) is not None else None
