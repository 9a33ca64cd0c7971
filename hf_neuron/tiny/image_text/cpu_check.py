"""The catalog's CPU check of an image-text model: its tiny model and image processor build, a forward pass on
image-text prompts (the matrix's inputs, with the reviewed drawn inputs) gives finite logits of the expected shape,
and its decoding runs where it has ``generate``. Never raises."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from hf_neuron.tiny.groups import CpuCheck
from hf_neuron.tiny.transformers.cpu_check import CheckProgress, Stage, check_logits, staged_check
from hf_neuron.tiny.transformers.inputs import prompt_of
from hf_neuron.tiny.transformers.models import build_model

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedConfig

    from hf_neuron.compat.tiny_image_text import ImageTextRecipe

__all__ = ["check_image_text_model", "logits_shape"]


def logits_shape(config: PreTrainedConfig, recipe: ImageTextRecipe, inputs: Mapping[str, torch.Tensor]
                 ) -> tuple[int, ...]:
    """The shape of a forward pass's logits on ``inputs``: the drawn labels' where the reviewed data names some (a
    policy's predicted velocity has its actions' shape), else a row of vocabulary scores for each token of the drawn
    token input (a block diffusion model's canvas) or, without one, of the prompt."""
    from hf_neuron.tiny.image_text.inputs import drawn_inputs

    prompt = prompt_of(inputs)
    rows = [(0, index) for index in range(prompt.shape[0])]
    if recipe.labels is not None:
        labels = drawn_inputs(config, {recipe.labels: recipe.drawn_inputs[recipe.labels]}, rows)[recipe.labels]
        return tuple(labels.shape)
    tokens = next((inputs[name] for name, draw in recipe.drawn_inputs.items() if draw.kind == "tokens"), prompt)
    return (prompt.shape[0], tokens.shape[1], config.get_text_config(decoder=True).vocab_size)


def check_image_text_model(model_type: str, *, until: Stage = "generate", batch: int = 2) -> CpuCheck:
    """Build the tiny vision-language ``model_type`` and its image processor, then (``until`` allowing) run a
    forward pass on ``batch`` image-text prompts with finite logits of :func:`logits_shape` and, where the model has
    ``generate``, decode 4 tokens as the image-text group does. Never raises."""
    import torch

    from hf_neuron.compat.tiny_image_text import image_text_recipe
    from hf_neuron.tiny.image_text.config import tiny_image_text_config
    from hf_neuron.tiny.image_text.decoding import decode
    from hf_neuron.tiny.image_text.image_processor import takes_images, tiny_image_processor
    from hf_neuron.tiny.image_text.inputs import batch_inputs, drawn_inputs, sample_rows
    from hf_neuron.tiny.image_text.summary import tiny_summary
    from hf_neuron.tiny.tokenizer import tiny_tokenizer

    def body(progress: CheckProgress) -> None:
        config = tiny_image_text_config(model_type)
        progress.stage = "build"
        model = build_model(model_type, config=config)
        progress.parameters = sum(p.numel() for p in model.parameters())
        image_processor = tiny_image_processor(model_type, config) if takes_images(model) else None
        progress.tiny = tiny_summary(config, image_processor, progress.parameters)
        reviewed = image_text_recipe(model_type)
        if until in ("forward", "generate"):
            progress.stage = "forward"
            if not reviewed.runs:  # it built; running it is what the reviewed data rules out
                raise RuntimeError(reviewed.reason)
            rows = sample_rows(model_type, image_processor, batch)
            inputs = batch_inputs(model, image_processor, tiny_tokenizer(), rows)
            draws = {name: draw for name, draw in reviewed.drawn_inputs.items() if name != reviewed.labels}
            inputs.update(drawn_inputs(config, draws, [(0, index) for index in range(batch)]))
            with torch.no_grad():
                logits = model(**inputs).logits
            check_logits(logits, logits_shape(config, reviewed, inputs))
        if until == "generate" and callable(getattr(model, "generate", None)):
            progress.stage = "generate"
            tokens = decode(model, inputs, 4).tokens
            if tokens is None or tokens.shape[0] != batch or tokens.shape[1] < 4:
                raise AssertionError(f"generate returned {None if tokens is None else tuple(tokens.shape)}, expected "
                                     f"{batch} rows of at least 4 tokens")

    return staged_check(model_type, body)
