"""The catalog's CPU check of an audio model: its tiny model and feature extractor build, a forward pass on the
matrix's rows (sounds, text) gives finite outputs, and generation runs. Never raises."""

from __future__ import annotations

from hf_neuron.tiny.groups import CpuCheck
from hf_neuron.tiny.transformers.cpu_check import CheckProgress, Stage, staged_check

__all__ = ["check_audio_model"]


def check_audio_model(model_type: str, *, until: Stage = "generate", batch: int = 2) -> CpuCheck:
    """Build the tiny audio ``model_type`` and its feature extractor, then (``until`` allowing) run a forward pass on
    ``batch`` rows with finite outputs and generate 4 steps. Never raises."""
    import torch

    from hf_neuron.compat.tiny_audio import audio_recipe
    from hf_neuron.tiny.audio.checkpoint import apply_generation_config
    from hf_neuron.tiny.audio.feature_extractor import FeatureExtractorUnavailableError, tiny_feature_extractor
    from hf_neuron.tiny.audio.inputs import batch_inputs
    from hf_neuron.tiny.audio.outputs import decode, forward_outputs
    from hf_neuron.tiny.audio.rows import sample_rows
    from hf_neuron.tiny.tokenizer import tiny_tokenizer
    from hf_neuron.tiny.transformers.config import tiny_config
    from hf_neuron.tiny.transformers.model_types import generative_types
    from hf_neuron.tiny.transformers.models import build_model

    def body(progress: CheckProgress) -> None:
        config = tiny_config(model_type)
        progress.stage = "build"
        model = build_model(model_type, config=config)
        apply_generation_config(model)
        progress.parameters = parameters = sum(p.numel() for p in model.parameters())
        try:
            feature_extractor = tiny_feature_extractor(model_type, config)
        except (FeatureExtractorUnavailableError, ImportError) as why:
            feature_extractor, progress.tiny = None, f"{parameters} parameters, no feature extractor ({why})"
        else:
            progress.tiny = f"{parameters} parameters, {type(feature_extractor).__name__}"
        reviewed = audio_recipe(model_type)
        if until in ("forward", "generate"):
            progress.stage = "forward"
            if not reviewed.runs:
                raise RuntimeError(reviewed.reason)
            rows = sample_rows(model_type, feature_extractor, config, batch)
            inputs = batch_inputs(model, generative_types()[model_type].auto_class, feature_extractor,
                                  tiny_tokenizer(), rows)
            outputs = forward_outputs(model, inputs)
            bad = [name for name, value in outputs.items() if not torch.isfinite(value).all()]
            if bad:
                raise AssertionError(f"forward outputs {bad} are not finite")
        if until == "generate" and callable(getattr(model, "generate", None)):  # decoding applies to it
            progress.stage = "generate"
            decode(model, inputs, 4)

    return staged_check(model_type, body)
