"""Build tiny models from tiny configs, and check that they run: forward with finite logits, then generate."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from hf_neuron.tiny.config import tiny_config
from hf_neuron.tiny.registry import model_class, model_config
from hf_neuron.tiny.tokenizer import BOS_TOKEN_ID, EOS_TOKEN_ID, PAD_TOKEN_ID

if TYPE_CHECKING:
    import torch
    from transformers import GenerationConfig, PreTrainedConfig, PreTrainedModel

__all__ = ["Probe", "Stage", "build_model", "probe"]

#: The steps of a probe, in order; ``"ok"`` in :attr:`Probe.stage` means all requested steps passed.
Stage = Literal["build", "forward", "generate"]


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
    """Point generation at the tiny tokenizer's special tokens (encoder-decoders start decoding with BOS)."""
    generation_config.pad_token_id = PAD_TOKEN_ID
    generation_config.bos_token_id = BOS_TOKEN_ID
    generation_config.eos_token_id = EOS_TOKEN_ID
    if is_encoder_decoder and generation_config.decoder_start_token_id is None:
        generation_config.decoder_start_token_id = BOS_TOKEN_ID


@dataclasses.dataclass(frozen=True)
class Probe:
    """What a tiny model did on the CPU; ``stage`` is the first step that failed, or ``"ok"``."""

    model_type: str
    stage: str
    error: str | None = None
    parameters: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.stage == "ok"


def _inputs(model: PreTrainedModel, batch: int, length: int) -> dict[str, torch.Tensor]:
    import torch

    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(8, 512, (batch, length), generator=generator)
    inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
    if model.config.is_encoder_decoder:
        inputs["decoder_input_ids"] = input_ids
    return inputs


def _check_logits(logits: torch.Tensor, batch: int, length: int, vocab_size: int) -> None:
    import torch

    if tuple(logits.shape) != (batch, length, vocab_size):
        raise AssertionError(f"logits shape {tuple(logits.shape)} != {(batch, length, vocab_size)}")
    if not torch.isfinite(logits).all():
        raise AssertionError("logits are not finite")


def _describe(error: BaseException) -> str:
    """``Type: first line`` of the error, and of its cause (validation errors wrap the real message)."""
    parts = []
    while error is not None and len(parts) < 2:
        lines = str(error).strip().splitlines()
        parts.append(f"{type(error).__name__}: {lines[0].strip() if lines else ''}".rstrip(": "))
        error = error.__cause__
    return " <- ".join(parts)[:300]


def probe(model_type: str, *, until: Stage = "generate", batch: int = 2, length: int = 8) -> Probe:
    """Build the tiny ``model_type``, then (``until`` allowing) run a forward pass with finite logits of shape
    ``(batch, length, vocab)`` and greedily generate 4 tokens. Never raises: the result tells the failing stage."""
    import torch

    start = time.perf_counter()
    stage, parameters = "config", 0
    try:
        config = tiny_config(model_type)
        stage = "build"
        model = build_model(model_type, config=config)
        parameters = sum(p.numel() for p in model.parameters())
        if until in ("forward", "generate"):
            stage = "forward"
            inputs = _inputs(model, batch, length)
            with torch.no_grad():
                logits = model(**inputs).logits
            _check_logits(logits, batch, length, config.get_text_config(decoder=True).vocab_size)
        if until == "generate":
            stage = "generate"
            with torch.no_grad():
                out = model.generate(**{k: v for k, v in inputs.items() if k != "decoder_input_ids"},
                                     max_new_tokens=4, min_new_tokens=4, do_sample=False)
            expected = (batch, (1 if model.config.is_encoder_decoder else length) + 4)
            if tuple(out.shape) != expected:
                raise AssertionError(f"generate returned shape {tuple(out.shape)}, expected {expected}")
    except Exception as error:  # noqa: BLE001 - a probe reports, it does not raise
        return Probe(model_type, stage, _describe(error), parameters, time.perf_counter() - start)
    return Probe(model_type, "ok", None, parameters, time.perf_counter() - start)
