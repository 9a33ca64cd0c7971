"""Draft models: a speculative-decoding assistant reads what its target model computed, not token ids.

An assistant such as Gemma 4's (``Gemma4AssistantForCausalLM``) drafts tokens for a target model inside the target's
``generate(..., assistant_model=...)`` (transformers' ``SinglePositionMultiTokenCandidateGenerator``): at one
position, the last seen token, it reads the target's embedding of that token beside the target's last hidden state
(``inputs_embeds``, twice the target's width), the target's keys and values of the prompt (``shared_kv_states``), the
prompt's attention mask and the token's position; it returns logits and a hidden state of the target's width, and
drafts the next token from its own output, at the same position, with the same keys and values.

A type whose reviewed entry in ``compat/tiny_overrides.toml`` names a ``target`` model type is such a draft model.
Its forward inputs are built here from the tiny target (built on the CPU from seed 0, the same for the device and the
CPU): :func:`drafter_inputs` runs the target on the prompt once. Its generation is the drafting loop
(:func:`draft`): greedy tokens and each step's logits. It takes no labels: it has no training loss of its own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_overrides import load_overrides
from hf_neuron.tiny.groups import Decoding

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

__all__ = ["draft", "drafter_inputs", "no_training_loss", "target_type"]


def target_type(model_type: str) -> str | None:
    """The model type of the target ``model_type`` drafts for (the reviewed ``target``), or None: no draft model."""
    override = load_overrides().get(model_type)
    return override.target if override is not None else None


def _base(model: Any) -> Any:
    """The model behind a compiled wrapper."""
    return getattr(model, "_orig_mod", model)


@functools.cache
def _target(model_type: str) -> PreTrainedModel:
    """The tiny target of draft model ``model_type``, on the CPU in float32 (built once per process)."""
    from hf_neuron.tiny.transformers.models import build_model

    target = target_type(model_type)
    if target is None:
        raise LookupError(f"{model_type} names no target model in compat/tiny_overrides.toml")
    return build_model(target)


def drafter_inputs(model: PreTrainedModel, input_ids: torch.Tensor) -> dict[str, Any]:
    """The forward inputs of draft ``model`` behind the prompts ``input_ids``, on its device, floating ones in its
    dtype: the target's embedding of each prompt's last token beside its last hidden state there, at that position,
    with the target's keys and values of the prompt and the prompt's attention mask."""
    import torch

    target = _target(model.config.model_type)
    ids = input_ids.cpu()
    mask = torch.ones_like(ids)
    with torch.no_grad():
        out = target(input_ids=ids, attention_mask=mask, output_hidden_states=True, return_shared_kv_states=True)
        embeds = torch.cat([target.get_input_embeddings()(ids[:, -1:]), out.hidden_states[-1][:, -1:]], dim=-1)
    device, dtype = model.device, model.dtype
    return {
        "inputs_embeds": embeds.to(device, dtype),
        "position_ids": torch.full((ids.shape[0], 1), ids.shape[1] - 1, device=device),
        "attention_mask": mask.to(device),
        "shared_kv_states": {kind: (keys.to(device, dtype), values.to(device, dtype))
                             for kind, (keys, values) in out.shared_kv_states.items()},
    }


def draft(model: PreTrainedModel, inputs: Mapping[str, Any], new_tokens: int) -> Decoding:
    """The drafting loop of ``generate(assistant_model=...)`` for ``new_tokens`` steps from :func:`drafter_inputs`:
    each step's greedy token is embedded by the target (on the CPU) and read with the draft's own last hidden state
    at the same position. The new tokens and each step's logits; it keeps no cache."""
    import torch

    embedding = _target(_base(model).config.model_type).get_input_embeddings()
    embeds = inputs["inputs_embeds"]
    tokens, scores = [], []
    with torch.no_grad():
        for _ in range(new_tokens):
            out = model(**{**inputs, "inputs_embeds": embeds})
            logits = out.logits[:, -1]
            token = logits.argmax(-1, keepdim=True)
            tokens.append(token.cpu())
            scores.append(logits.to("cpu", torch.float32))
            token_embeds = embedding(token.cpu()).to(embeds.device, embeds.dtype)
            embeds = torch.cat([token_embeds, out.last_hidden_state.to(embeds.dtype)], dim=-1)
    return Decoding(str(logits.device), torch.cat(tokens, dim=1), torch.stack(scores))


def no_training_loss(model: PreTrainedModel) -> str:
    """Why a draft model has no training loss: it is trained with its target (on the target's outputs)."""
    return (f"{type(_base(model)).__name__} drafts tokens for a {target_type(_base(model).config.model_type)} target: "
            "its forward takes no labels and computes no loss (it is trained on its target's outputs)")
