"""What the transformers scenarios compute with a language model, the default every transformers group's package
may take: the outputs a forward pass compares (its ``logits``), greedy decoding (new tokens and each step's scores),
and a training step's inputs (the prompt as labels: its ``loss`` is the next-token loss; padded to the one length a
model trains on, where its config fixes one). A group whose models make
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

__all__ = ["compileable", "decode", "forward_outputs", "greedy_decoding", "no_training_loss", "training_inputs",
           "training_length"]

#: The label of a position a training step leaves out of the loss (transformers' losses ignore it).
IGNORED_LABEL = -100


def forward_outputs(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], *,
                    seed: int = 0) -> dict[str, torch.Tensor]:
    """The ``logits`` of one forward pass on ``inputs``, from ``torch.manual_seed(seed)``, without gradients."""
    import torch

    torch.manual_seed(seed)
    with torch.no_grad():
        return {"logits": model(**inputs).logits}


def greedy_decoding(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], new_tokens: int,
                    **generate_kwargs: Any) -> Decoding:
    """``generate`` from ``inputs`` (:func:`generation_inputs`) for exactly ``new_tokens`` greedy tokens (end of
    sequence suppressed, so every row decodes the same number): the new tokens and each step's scores. A model whose
    generation config has no greedy search to ask for (no ``do_sample``: a generation of its own, such as a block
    diffusion model's canvases) generates from all of ``inputs`` (a drawn starting canvas included) with its own
    settings and ``generate_kwargs``: its tokens are all it wrote after the prompt, and it gives no scores where its
    output has none (DiffusionGemmaGenerationOutput's are always None)."""
    import torch

    if not hasattr(model.generation_config, "do_sample"):
        with torch.no_grad():
            out = model.generate(**inputs, **{"max_new_tokens": new_tokens,  # type: ignore[operator]
                                              "return_dict_in_generate": True, **generate_kwargs})
        tokens = out.sequences[:, prompt_of(inputs).shape[1]:]
    else:
        start = generation_inputs(inputs)
        if "input_ids" in start:
            start.setdefault("attention_mask", torch.ones_like(start["input_ids"]))
        with torch.no_grad():
            out = model.generate(  # type: ignore[operator]
                **start, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, num_beams=1,
                output_scores=True, return_dict_in_generate=True, **generate_kwargs,
            )
        tokens = out.sequences[:, -new_tokens:]
    cache = next((found for name in ("cache", "past_key_values") if (found := getattr(out, name, None)) is not None),
                 None)
    scores = getattr(out, "scores", None)
    scores = None if scores is None else torch.stack(scores).to("cpu", torch.float32)
    return Decoding(str(out.sequences.device), tokens.to("cpu"), scores, cache=type(cache).__name__,
                    compileable=compileable(cache))


def compileable(cache: Any) -> bool:
    """Whether transformers compiles decoding with ``cache`` (on a device it compiles for): a compileable cache that
    is not a dynamic one (an encoder-decoder's by its self-attention cache), as ``generate`` decides."""
    from transformers import DynamicCache, EncoderDecoderCache

    decoder_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
    return bool(getattr(cache, "is_compileable", False)) and type(decoder_cache) is not DynamicCache


def decode(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], new_tokens: int, *, seed: int = 0,
           **generate_kwargs: Any) -> Decoding:
    """A language model's generation, from ``torch.manual_seed(seed)``: :func:`greedy_decoding` (an encoder-decoder
    whose encoder reads no text continues its decoder's prompt); a draft model's is its drafting loop
    (:func:`hf_neuron.tiny.transformers.drafter.draft`, which keeps no cache, so asked for a static one it has
    none)."""
    import torch

    from hf_neuron.tiny.transformers import drafter

    torch.manual_seed(seed)
    if drafter.target_type(getattr(model, "_orig_mod", model).config.model_type) is not None:
        return drafter.draft(model, inputs, new_tokens)
    return greedy_decoding(model, inputs, new_tokens, **generate_kwargs)


def training_length(config: Any) -> int | None:
    """The one sequence length a model of ``config`` trains on, when its config fixes one, else None: axial position
    embeddings (Reformer's ``axial_pos_embds``) train on exactly the product of ``axial_pos_shape`` (their forward
    refuses any other length in training: "If training, make sure that config.axial_pos_shape factors ... multiply
    to sequence length ... consider padding your sequence length")."""
    import math

    shape = getattr(config, "axial_pos_shape", None)
    return math.prod(shape) if getattr(config, "axial_pos_embds", False) and shape else None


def training_inputs(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``inputs`` with the prompt (:func:`prompt_of`) as ``labels``; a prompt shorter than the one length its model
    trains on (:func:`training_length`) is padded to it at the end, as a user pads a batch: pad tokens, masked out
    of the attention and of the loss."""
    import torch

    labelled = {**inputs, "labels": prompt_of(inputs)}
    length = training_length(model.config)
    ids = labelled.get("input_ids")
    if length is None or ids is None or ids.shape[1] >= length or set(labelled) - {"input_ids", "attention_mask",
                                                                                  "labels"}:
        return labelled
    mask = labelled.get("attention_mask", torch.ones_like(ids))
    pad_id = getattr(model.config, "pad_token_id", None) or 0
    padding = {"input_ids": pad_id, "attention_mask": 0, "labels": IGNORED_LABEL}
    return {key: torch.nn.functional.pad(value, (0, length - ids.shape[1]), value=padding[key])
            for key, value in {**labelled, "attention_mask": mask}.items()}


def no_training_loss(model: PreTrainedModel) -> str | None:
    """None: a language model computes its loss from labels; a draft model computes none
    (:func:`hf_neuron.tiny.transformers.drafter.no_training_loss`)."""
    from hf_neuron.tiny.transformers import drafter

    return drafter.no_training_loss(model) if drafter.target_type(model.config.model_type) is not None else None
