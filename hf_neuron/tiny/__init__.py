"""Tiny local models, tokenizers and datasets built from configs: no hub.

One package per model group, named by the group's declaration (:data:`hf_neuron.vocabulary.groups.REGISTRY`) and
providing what :mod:`~hf_neuron.tiny.groups` asks of one: :mod:`~hf_neuron.tiny.transformers` (the text groups, and
the tiny-config shrinker, checkpoints and inputs every transformers group shares), :mod:`~hf_neuron.tiny.image_text`
(vision-language models, with their image processors, synthetic images and inputs) and :mod:`~hf_neuron.tiny.diffusion`
(diffusers' denoiser backbones and pipelines around them). Shared by them: :mod:`~hf_neuron.tiny.tokenizer` (a
byte-level BPE tokenizer with a chat template, trained on the fly) and :mod:`~hf_neuron.tiny.dataset` (a few dozen
short chats). :func:`materialize` writes the tiny checkpoint of any catalog architecture; per-architecture
exceptions are reviewed data in ``compat/``.

Importing this package imports nothing heavy; each group's package imports its libraries when it is used.
"""

from __future__ import annotations

from pathlib import Path

from hf_neuron.tiny.groups import group_models
from hf_neuron.vocabulary.gaps import Gap

__all__ = ["UnbuildableInputError", "materialize"]


class UnbuildableInputError(ValueError):
    """A model needs an input (or a memory) the harness cannot give it: the matrix records the case as untested with
    ``gap`` (``inputs`` unless said otherwise: a gap of the harness to close, not a failure of the model or of the
    device)."""

    def __init__(self, message: str, *, gap: Gap = "inputs") -> None:
        super().__init__(message)
        self.gap: Gap = gap


def materialize(group: str, name: str, out_dir: Path, *, seed: int = 0) -> Path:
    """Write the tiny checkpoint of architecture ``name`` of catalog ``group`` to ``out_dir`` and return it."""
    return group_models(group).materialize(name, Path(out_dir), seed=seed)
