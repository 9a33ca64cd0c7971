"""Tiny checkpoints for a run: built once per architecture, shared by every worker and scenario of the run.

Text architectures are built by :func:`hf_neuron.tiny.checkpoint.materialize`, diffusion backbones by
:func:`hf_neuron.matrix.diffusion_models.materialize`. Workers may race to build the same architecture; both
builders publish by atomic rename and never remove what another process may be reading. Once built, a checkpoint
is used as it is for the rest of the run: the run's scratch directory is new, so nothing in it can be stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

__all__ = ["checkpoint_dir"]


class _Materialize(Protocol):
    def __call__(self, name: str, out_dir: Path, /, *, seed: int = 0) -> Path: ...


def _builder(group: str) -> _Materialize:
    if group == "diffusion":
        from hf_neuron.matrix.diffusion_models import materialize as build_diffusion

        return build_diffusion
    from hf_neuron.tiny.checkpoint import materialize

    return materialize


def checkpoint_dir(model_type: str, root: Path, *, group: str = "decoder", seed: int = 0) -> Path:
    """``root/model_type``, the tiny checkpoint of ``model_type`` (of catalog ``group``), built if not there."""
    final = root / model_type
    if final.is_dir():
        return final
    return _builder(group)(model_type, final, seed=seed)
