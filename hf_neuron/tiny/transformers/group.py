"""The text groups' package (``decoder``, ``encoder-decoder``): what :class:`hf_neuron.tiny.groups.TransformersModels`
asks of a group, for transformers models that read and write token ids alone."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_neuron.compat.tiny_overrides import load_overrides
from hf_neuron.tiny.groups import CpuCheck, Reviewed
from hf_neuron.tiny.transformers.config import DIMS, TinyDims, tiny_config_kwargs
from hf_neuron.tiny.transformers.inputs import catalog_types, features, lora_targets, model_inputs, sample_ids
from hf_neuron.tiny.transformers.outputs import decode, forward_outputs, no_training_loss, training_inputs

__all__ = ["catalog_types", "config_kwargs", "cpu_check", "decode", "features", "forward_outputs", "lora_targets",
           "materialize",
           "model_inputs", "no_training_loss", "reviewed", "sample_ids", "training_inputs"]


def materialize(name: str, out_dir: Path, /, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                dims: TinyDims = DIMS) -> Path:
    """The tiny checkpoint of ``name`` (:func:`hf_neuron.tiny.transformers.checkpoint.materialize`)."""
    from hf_neuron.tiny.transformers.checkpoint import materialize as build

    return build(name, out_dir, seed=seed, base=base, dims=dims)


def config_kwargs(name: str, /, *, base: Mapping[str, Any] | None = None, dims: TinyDims = DIMS) -> dict[str, Any]:
    """The config keyword arguments :func:`materialize` builds ``name`` from."""
    return tiny_config_kwargs(name, base=base, dims=dims)


def cpu_check(name: str) -> CpuCheck:
    """Build the tiny model, run a forward pass and greedy decoding on the CPU."""
    from hf_neuron.tiny.transformers.cpu_check import check_text_model

    return check_text_model(name)


def reviewed(name: str) -> Reviewed | None:
    """``compat/tiny_overrides.toml``'s ``runs = false`` for ``name``, with its reason and gap."""
    override = load_overrides().get(name)
    return None if override is None or override.runs else Reviewed(override.reason, override.gap)
