"""Tiny local models, tokenizers and datasets built from configs: no hub.

One subpackage per model group: :mod:`~hf_neuron.tiny.transformers` (transformers causal and sequence-to-sequence LMs,
derived generically from each config class's defaults), :mod:`~hf_neuron.tiny.image_text` (image-text-to-text models,
with their image processors, synthetic images and inputs) and :mod:`~hf_neuron.tiny.diffusion` (diffusers' denoiser
backbones and pipelines around them). Shared by them: :mod:`~hf_neuron.tiny.tokenizer` (a byte-level BPE tokenizer
with a chat template, trained on the fly) and :mod:`~hf_neuron.tiny.dataset` (a few dozen short chats).
:func:`materialize` writes the tiny checkpoint of any catalog architecture; per-architecture exceptions are reviewed
data in ``compat/`` (:mod:`hf_neuron.compat.tiny_overrides`, :mod:`hf_neuron.compat.tiny_image_text`,
:mod:`hf_neuron.compat.tiny_diffusion`).

Importing this package imports nothing heavy; each builder imports its libraries when it is used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

__all__ = ["BUILDERS", "Materialize", "UnbuildableInputError", "materialize"]


class UnbuildableInputError(ValueError):
    """A tiny model needs an input the harness cannot build (the matrix records the case as untested, gap
    ``inputs``: a gap of the harness to close, not a failure of the model or of the device)."""


class Materialize(Protocol):
    """Writes the tiny checkpoint of architecture ``name`` to ``out_dir`` (reused when already there)."""

    def __call__(self, name: str, out_dir: Path, /, *, seed: int = 0) -> Path: ...


def _text() -> Materialize:
    from hf_neuron.tiny.transformers.checkpoint import materialize as build

    return build


def _image_text() -> Materialize:
    from hf_neuron.tiny.image_text.checkpoint import materialize as build

    return build


def _diffusion() -> Materialize:
    from hf_neuron.tiny.diffusion.backbones import materialize as build

    return build


#: The checkpoint builder of each catalog group (loaded on first use). A new model group adds its subpackage here.
BUILDERS: dict[str, Callable[[], Materialize]] = {
    "decoder": _text,
    "encoder-decoder": _text,
    "image-text": _image_text,
    "diffusion": _diffusion,
}


def materialize(group: str, name: str, out_dir: Path, *, seed: int = 0) -> Path:
    """Write the tiny checkpoint of architecture ``name`` of catalog ``group`` to ``out_dir`` and return it."""
    if group not in BUILDERS:
        raise KeyError(f"no tiny builder for catalog group {group!r}; groups with one: {', '.join(BUILDERS)}")
    return BUILDERS[group]()(name, Path(out_dir), seed=seed)
