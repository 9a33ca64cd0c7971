"""The catalog's CPU check of an image-text model: its tiny model and image processor build, a forward pass on
image-text prompts (the matrix's inputs) gives finite logits, and greedy decoding runs. Never raises."""

from __future__ import annotations

from hf_neuron.tiny.groups import CpuCheck
from hf_neuron.tiny.transformers.cpu_check import CheckProgress, Stage, check_logits, generates, staged_check
from hf_neuron.tiny.transformers.inputs import prompt_of
from hf_neuron.tiny.transformers.models import build_model

__all__ = ["check_image_text_model"]


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
            with torch.no_grad():
                logits = model(**inputs).logits
            check_logits(logits, batch, prompt_of(inputs).shape[1], config.get_text_config(decoder=True).vocab_size)
        if until == "generate":
            progress.stage = "generate"
            generates(model, inputs, 4)

    return staged_check(model_type, body)
