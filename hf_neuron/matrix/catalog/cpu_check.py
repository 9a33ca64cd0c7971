"""Does a tiny model build and run on the CPU? The checks behind the catalog's ``builds`` and ``runs``.

:func:`check_text_model` builds a tiny transformers model, runs a forward pass with finite logits, then greedy
generation; :func:`check_image_text_model` does the same for a vision-language model, with its image processor and
image-text prompts (the matrix's inputs); :func:`check_diffusion_backbone` builds a tiny denoiser and calls it once.
None raises: the result names the first stage that failed and why.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from hf_neuron.tiny.image_text.inputs import generation_inputs, prompt_of
from hf_neuron.tiny.transformers.config import tiny_config
from hf_neuron.tiny.transformers.models import build_model

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

__all__ = ["CpuCheck", "Stage", "check_diffusion_backbone", "check_image_text_model", "check_text_model"]

#: The steps of a check, in order; ``"ok"`` in :attr:`CpuCheck.stage` means all requested steps passed.
Stage = Literal["build", "forward", "generate"]


@dataclasses.dataclass(frozen=True)
class CpuCheck:
    """What a tiny model did on the CPU; ``stage`` is the first step that failed, or ``"ok"``."""

    model_type: str
    stage: str
    error: str | None = None
    parameters: int = 0
    seconds: float = 0.0
    #: What the tiny model is, for readers of the catalog (:func:`tiny_summary`); None when it did not build.
    tiny: str | None = None

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
    parts: list[str] = []
    link: BaseException | None = error
    while link is not None and len(parts) < 2:
        lines = str(link).strip().splitlines()
        parts.append(f"{type(link).__name__}: {lines[0].strip() if lines else ''}".rstrip(": "))
        link = link.__cause__
    return " <- ".join(parts)[:300]


def check_text_model(model_type: str, *, until: Stage = "generate", batch: int = 2, length: int = 8) -> CpuCheck:
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
                out = model.generate(**generation_inputs(inputs), max_new_tokens=4, min_new_tokens=4, do_sample=False)  # type: ignore[operator]
            expected = (batch, (1 if model.config.is_encoder_decoder else length) + 4)
            if tuple(out.shape) != expected:
                raise AssertionError(f"generate returned shape {tuple(out.shape)}, expected {expected}")
    except Exception as error:  # noqa: BLE001 - a check reports, it does not raise
        return CpuCheck(model_type, stage, _describe(error), parameters, time.perf_counter() - start)
    return CpuCheck(model_type, "ok", None, parameters, time.perf_counter() - start)


def _generate_shape(model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], new_tokens: int) -> None:
    import torch

    with torch.no_grad():
        out = model.generate(**generation_inputs(inputs), max_new_tokens=new_tokens, min_new_tokens=new_tokens,  # type: ignore[operator]
                             do_sample=False)
    batch = prompt_of(inputs).shape[0]
    if out.shape[0] != batch or out.shape[1] < new_tokens:  # some return the prompt, some only what they decoded
        raise AssertionError(f"generate returned shape {tuple(out.shape)}, expected {batch} rows of at least "
                             f"{new_tokens} tokens")


def check_image_text_model(model_type: str, *, until: Stage = "generate", batch: int = 2) -> CpuCheck:
    """Build the tiny vision-language ``model_type`` and its image processor, then (``until`` allowing) run a
    forward pass on ``batch`` image-text prompts with finite logits and greedily generate 4 tokens. Never raises."""
    import torch

    from hf_neuron.compat.tiny_image_text import image_text_recipe
    from hf_neuron.tiny.image_text.config import tiny_image_text_config
    from hf_neuron.tiny.image_text.image_processor import takes_images, tiny_image_processor
    from hf_neuron.tiny.image_text.inputs import batch_inputs, sample_rows
    from hf_neuron.tiny.image_text.summary import tiny_summary
    from hf_neuron.tiny.tokenizer import tiny_tokenizer

    start = time.perf_counter()
    stage, parameters, summary = "config", 0, None
    try:
        config = tiny_image_text_config(model_type)
        stage = "build"
        model = build_model(model_type, config=config)
        parameters = sum(p.numel() for p in model.parameters())
        image_processor = tiny_image_processor(model_type, config) if takes_images(model) else None
        summary = tiny_summary(config, image_processor, parameters)
        reviewed = image_text_recipe(model_type)
        if until in ("forward", "generate"):
            stage = "forward"
            if not reviewed.runs:  # it built; running it is what the reviewed data rules out
                raise RuntimeError(reviewed.reason)
            rows = sample_rows(model_type, image_processor, batch)
            inputs = batch_inputs(model, image_processor, tiny_tokenizer(), rows)
            with torch.no_grad():
                logits = model(**inputs).logits
            _check_logits(logits, batch, prompt_of(inputs).shape[1], config.get_text_config(decoder=True).vocab_size)
        if until == "generate":
            stage = "generate"
            _generate_shape(model, inputs, 4)
    except Exception as error:  # noqa: BLE001 - a check reports, it does not raise
        return CpuCheck(model_type, stage, _describe(error), parameters, time.perf_counter() - start, summary)
    return CpuCheck(model_type, "ok", None, parameters, time.perf_counter() - start, summary)


def check_diffusion_backbone(name: str) -> CpuCheck:
    """Build the tiny ``name`` backbone and call it once on its generic inputs (a finite prediction)."""
    import torch

    from hf_neuron.tiny.diffusion.backbones import build_backbone
    from hf_neuron.tiny.diffusion.inputs import denoise, forward_inputs

    start = time.perf_counter()
    stage, parameters = "build", 0
    try:
        model = build_backbone(name)
        parameters = sum(p.numel() for p in model.parameters())
        stage = "forward"
        prediction = denoise(model, forward_inputs(model))
        if not torch.isfinite(prediction).all():
            raise AssertionError("the prediction is not finite")
    except Exception as error:  # noqa: BLE001 - a check reports, it does not raise
        return CpuCheck(name, stage, _describe(error), parameters, time.perf_counter() - start)
    return CpuCheck(name, "ok", None, parameters, time.perf_counter() - start)
