"""Build tiny transformers models from tiny configs, with seeded weights and the tiny tokenizer's special ids."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.tiny.tokenizer import BOS_TOKEN_ID, EOS_TOKEN_ID, PAD_TOKEN_ID
from hf_neuron.tiny.transformers.config import tiny_config
from hf_neuron.tiny.transformers.model_types import model_class, model_config

if TYPE_CHECKING:
    from transformers import GenerationConfig, PreTrainedConfig, PreTrainedModel

__all__ = ["build_model"]


def build_model(model_type: str, *, seed: int = 0, overrides: Mapping[str, Any] | None = None,
                config: PreTrainedConfig | None = None) -> PreTrainedModel:
    """A tiny model of ``model_type`` with weights drawn from ``seed``, in eval mode on the CPU."""
    import torch

    config = tiny_config(model_type, overrides) if config is None else config
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(model_type)(model_config(model_type, config))
    if getattr(model, "generation_config", None) is not None:  # some policies (pi0) do not generate text
        _use_tiny_token_ids(model.generation_config, model.config.is_encoder_decoder)
    return model.eval()


def _use_tiny_token_ids(generation_config: GenerationConfig, is_encoder_decoder: bool) -> None:
    """Point generation at the tiny tokenizer's special tokens (encoder-decoders start decoding with BOS), and decode
    as a checkpoint's own ``generation_config.json`` (which the catalog does not hold) has it by default: with a
    cache, without multi-token prediction. A checkpoint's ``config.json`` may say ``use_cache: false`` (saved from
    training: SmolLM3, OLMo 3) or ``use_mtp`` of its architecture (MiniMax-M2's: its MTP modules live elsewhere), and
    transformers copies both into a generation config built from the model's config, where they mean "decode
    without a cache" and "speculate with MTP layers" (which a model without them cannot). A generation config class
    that declares neither (DiffusionGemma's, whose ``__init__`` refuses any key it does not know when the saved
    checkpoint loads) is given neither."""
    for name, value in (("use_cache", True), ("use_mtp", None)):
        if hasattr(generation_config, name):
            setattr(generation_config, name, value)
    generation_config.pad_token_id = PAD_TOKEN_ID
    generation_config.bos_token_id = BOS_TOKEN_ID
    generation_config.eos_token_id = EOS_TOKEN_ID
    if is_encoder_decoder and generation_config.decoder_start_token_id is None:
        generation_config.decoder_start_token_id = BOS_TOKEN_ID
