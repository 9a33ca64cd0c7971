"""The ``audio`` group's package: what :class:`hf_neuron.tiny.groups.TransformersModels` asks of a group, for
speech-to-text, audio-text-to-text and text-to-audio models (token ids with the sounds behind them)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_neuron.compat.tiny_audio import audio_recipe
from hf_neuron.compat.tiny_overrides import load_overrides
from hf_neuron.tiny.audio.outputs import decode, forward_outputs, no_training_loss, training_inputs
from hf_neuron.tiny.audio.rows import inputs_for as model_inputs
from hf_neuron.tiny.audio.rows import sample_ids
from hf_neuron.tiny.groups import CpuCheck, Reviewed
from hf_neuron.tiny.transformers.config import DIMS, TinyDims
from hf_neuron.tiny.transformers.group import config_kwargs
from hf_neuron.tiny.transformers.inputs import catalog_types, features, lora_targets

__all__ = ["catalog_types", "config_kwargs", "cpu_check", "decode", "features", "forward_outputs", "lora_targets",
           "materialize",
           "model_inputs", "no_training_loss", "reviewed", "sample_ids", "training_inputs"]


def materialize(name: str, out_dir: Path, /, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                dims: TinyDims = DIMS) -> Path:
    """The tiny checkpoint of ``name`` with its feature extractor (:mod:`hf_neuron.tiny.audio.checkpoint`)."""
    from hf_neuron.tiny.audio.checkpoint import materialize as build

    return build(name, out_dir, seed=seed, base=base, dims=dims)


def cpu_check(name: str) -> CpuCheck:
    """Build the tiny model and its feature extractor, run a forward pass and generation on synthetic sounds."""
    from hf_neuron.tiny.audio.cpu_check import check_audio_model

    return check_audio_model(name)


def reviewed(name: str) -> Reviewed | None:
    """``runs = false`` for ``name`` in ``compat/tiny_audio.toml``, else in ``compat/tiny_overrides.toml``."""
    recipe = audio_recipe(name)
    if not recipe.runs:
        return Reviewed(recipe.reason, recipe.gap)
    override = load_overrides().get(name)
    return None if override is None or override.runs else Reviewed(override.reason, override.gap)
