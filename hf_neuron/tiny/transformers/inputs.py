"""The inputs of a transformers model, shared by every group whose models are transformers': which model types a
group holds, the text groups' token ids, what a prompt and a generation start are, and where a LoRA adapter goes.

The text groups (``decoder``, ``encoder-decoder``) read token ids alone: :func:`sample_ids` draws them from a
generator seeded with the case's seed, so the device and the CPU see the same tokens, and :func:`model_inputs` gives an
encoder-decoder's decoder the same ids. :func:`prompt_of` and :func:`generation_inputs` are the rules every
transformers group's inputs follow (an encoder that reads only pixels leaves the prompt to the decoder).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.tiny.groups import CatalogType

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

__all__ = [
    "FIRST_ORDINARY_ID",
    "catalog_types",
    "features",
    "generation_inputs",
    "lora_targets",
    "model_inputs",
    "prompt_of",
    "reads_text",
    "sample_ids",
]

#: Sampled token ids start above the tiny tokenizer's special tokens (pad, bos, eos, unk, im_start).
FIRST_ORDINARY_ID = 8
_HIGHEST_ID = 512


def catalog_types(group: str) -> dict[str, CatalogType]:
    """The generative model types of the installed transformers that belong to ``group``, sorted."""
    from hf_neuron.tiny.transformers.config import config_class
    from hf_neuron.tiny.transformers.model_types import generative_types

    return {model_type: CatalogType(found.model_class, config_class(model_type).__name__, found.auto_class)
            for model_type, found in generative_types().items() if found.group == group}


def features(model_type: str) -> tuple[str, ...]:
    """What decides which scenario variants apply: the config's ``output_router_logits`` (a mixture of experts with
    an auxiliary loss), and the attention implementations the model class supports."""
    from hf_neuron.tiny.transformers.config import config_class
    from hf_neuron.tiny.transformers.model_types import model_class

    found = []
    if "output_router_logits" in {field.name for field in dataclasses.fields(config_class(model_type))}:
        found.append("router-logits")
    cls = model_class(model_type)
    found += [name for name, flag in (("sdpa", "_supports_sdpa"), ("flex-attention", "_supports_flex_attn"))
              if getattr(cls, flag, False)]
    return tuple(found)


def sample_ids(model_type: str, checkpoint: Path, model: PreTrainedModel, rows: int, seed: int,
               length: int = 12) -> torch.Tensor:
    """``(rows, length)`` ordinary token ids on the CPU, drawn from ``seed``."""
    import torch

    embeddings: torch.nn.Embedding = model.get_input_embeddings()  # type: ignore[assignment]
    vocab = embeddings.num_embeddings
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(FIRST_ORDINARY_ID, min(_HIGHEST_ID, vocab), (rows, length), generator=generator)


def model_inputs(model: PreTrainedModel, input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """The ids on ``model``'s device; an encoder-decoder's decoder reads the same ids; a draft model reads its
    target's outputs behind them (:func:`hf_neuron.tiny.transformers.drafter.drafter_inputs`)."""
    from hf_neuron.tiny.transformers.drafter import drafter_inputs, target_type

    if target_type(model.config.model_type) is not None:
        return drafter_inputs(model, input_ids)
    input_ids = input_ids.to(model.device)
    inputs = {"input_ids": input_ids}
    if model.config.is_encoder_decoder:
        inputs["decoder_input_ids"] = input_ids
    return inputs


def lora_targets(model: PreTrainedModel) -> str | list[str]:
    """PEFT's ``"all-linear"``: every linear layer but the output head; where PEFT refuses some of those on the
    model's architecture (on Mamba-based models ``out_proj``: "Please remove it from `target_modules`"), every other
    one, by name, as PEFT's message tells its users. Which modules it refuses, PEFT's own check of a LoRA target says
    (``peft.tuners.tuners_utils._check_lora_target_modules_mamba``, peft 0.21), asked of each linear layer's name."""
    import torch
    from peft import LoraConfig
    from peft.tuners import tuners_utils

    refuses = getattr(tuners_utils, "_check_lora_target_modules_mamba", None)
    if refuses is None:
        return "all-linear"
    head = model.get_output_embeddings()
    names = sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules()
                    if isinstance(module, torch.nn.Linear) and module is not head})
    accepted = []
    for name in names:
        try:
            refuses(LoraConfig(target_modules=[name]), model, name)
        except ValueError:
            continue
        accepted.append(name)
    return "all-linear" if accepted == names else accepted


def reads_text(forward: Callable[..., Any]) -> bool:
    """Whether ``forward`` takes ``input_ids``; an encoder-decoder's that does not has an encoder that reads only
    pixels (pix2struct, a vision encoder-decoder), and its decoder reads the prompt."""
    return "input_ids" in inspect.signature(forward).parameters


def prompt_of(inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """The prompt's token ids among a forward pass's inputs: ``input_ids``, or ``decoder_input_ids`` when the model's
    encoder reads no text (the labels a training step compares the logits with)."""
    return inputs["input_ids"] if "input_ids" in inputs else inputs["decoder_input_ids"]


def generation_inputs(inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """What ``generate`` starts from: the forward ``inputs`` without ``decoder_input_ids`` (generation starts the
    decoder itself), unless they hold the prompt (:func:`prompt_of`: the encoder reads no text)."""
    return {key: value for key, value in inputs.items() if key != "decoder_input_ids" or "input_ids" not in inputs}
