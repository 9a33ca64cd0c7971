"""The catalog's CPU check of a transformers model: does its tiny model build, run a forward pass with finite
logits, and decode greedily? :func:`check_text_model` is the text groups'; :mod:`hf_neuron.tiny.image_text.cpu_check`
does the same with images, through the helpers here. None raises: the result names the first stage that failed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from hf_neuron.tiny.groups import CpuCheck
from hf_neuron.tiny.transformers.config import tiny_config
from hf_neuron.tiny.transformers.inputs import generation_inputs
from hf_neuron.tiny.transformers.models import build_model

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

__all__ = ["CheckProgress", "Stage", "check_logits", "check_text_model", "describe", "staged_check"]

#: The steps of a check, in order, up to which it runs.
Stage = Literal["build", "forward", "generate"]


def _inputs(model: PreTrainedModel, batch: int, length: int) -> dict[str, torch.Tensor]:
    import torch

    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(8, 512, (batch, length), generator=generator)
    inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
    if model.config.is_encoder_decoder:
        inputs["decoder_input_ids"] = input_ids
    return inputs


def check_logits(logits: torch.Tensor, shape: tuple[int, ...]) -> None:
    """``logits`` have ``shape`` (a language model's: rows, tokens, vocabulary) and are finite."""
    import torch

    if tuple(logits.shape) != shape:
        raise AssertionError(f"logits shape {tuple(logits.shape)} != {shape}")
    if not torch.isfinite(logits).all():
        raise AssertionError("logits are not finite")


def describe(error: BaseException) -> str:
    """``Type: first line`` of the error, and of its cause (validation errors wrap the real message)."""
    parts: list[str] = []
    link: BaseException | None = error
    while link is not None and len(parts) < 2:
        lines = str(link).strip().splitlines()
        parts.append(f"{type(link).__name__}: {lines[0].strip() if lines else ''}".rstrip(": "))
        link = link.__cause__
    return " <- ".join(parts)[:300]


@dataclasses.dataclass
class CheckProgress:
    """How far a check has got: the ``stage`` it is in, the tiny model's ``parameters`` and what it is (``tiny``, for
    the catalog), as far as known."""

    stage: str
    parameters: int = 0
    tiny: str | None = None


def staged_check(name: str, body: Callable[[CheckProgress], None], first: str = "config") -> CpuCheck:
    """Every group's CPU check: run ``body``, which moves its :class:`CheckProgress` from stage ``first`` on, and time
    it. Never raises: an exception is the result of the stage it was raised in, with :func:`describe`'s message."""
    start = time.perf_counter()
    progress = CheckProgress(first)
    try:
        body(progress)
    except Exception as error:  # noqa: BLE001 - a check reports, it does not raise
        return CpuCheck(name, progress.stage, describe(error), progress.parameters, time.perf_counter() - start,
                        progress.tiny)
    return CpuCheck(name, "ok", None, progress.parameters, time.perf_counter() - start, progress.tiny)


def check_text_model(model_type: str, *, until: Stage = "generate", batch: int = 2, length: int = 8) -> CpuCheck:
    """Build the tiny ``model_type``, then (``until`` allowing) run a forward pass with finite logits of shape
    ``(batch, length, vocab)`` and greedily generate 4 tokens. Never raises: the result tells the failing stage."""
    import torch

    from hf_neuron.tiny.transformers import drafter

    def body(progress: CheckProgress) -> None:
        config = tiny_config(model_type)
        progress.stage = "build"
        model = build_model(model_type, config=config)
        progress.parameters = sum(p.numel() for p in model.parameters())
        if drafter.target_type(model_type) is not None:  # it reads its target's outputs, one position a row
            _check_drafter(model, until, batch, length, config.get_text_config(decoder=True).vocab_size, progress)
            return
        if until in ("forward", "generate"):
            progress.stage = "forward"
            inputs = _inputs(model, batch, length)
            with torch.no_grad():
                logits = model(**inputs).logits
            check_logits(logits, (batch, length, config.get_text_config(decoder=True).vocab_size))
        if until == "generate":
            progress.stage = "generate"
            with torch.no_grad():
                out = model.generate(**generation_inputs(inputs), max_new_tokens=4, min_new_tokens=4, do_sample=False)  # type: ignore[operator]
            expected = (batch, (1 if model.config.is_encoder_decoder else length) + 4)
            if tuple(out.shape) != expected:
                raise AssertionError(f"generate returned shape {tuple(out.shape)}, expected {expected}")

    return staged_check(model_type, body)


def _check_drafter(model: PreTrainedModel, until: Stage, batch: int, length: int, vocab_size: int,
                   progress: CheckProgress) -> None:
    """A draft model's check: finite logits at the one position it reads, then 4 drafted tokens a row."""
    import torch

    from hf_neuron.tiny.transformers.drafter import draft, drafter_inputs

    if until == "build":
        return
    progress.stage = "forward"
    generator = torch.Generator().manual_seed(0)
    inputs = drafter_inputs(model, torch.randint(8, 512, (batch, length), generator=generator))
    with torch.no_grad():
        check_logits(model(**inputs).logits, (batch, 1, vocab_size))
    if until == "generate":
        progress.stage = "generate"
        tokens = draft(model, inputs, 4).tokens
        if tokens is None or tuple(tokens.shape) != (batch, 4):
            raise AssertionError(f"drafting returned {None if tokens is None else tuple(tokens.shape)}, expected "
                                 f"{(batch, 4)}")
