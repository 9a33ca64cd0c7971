"""Tiny checkpoints for a run: built once per architecture, shared by every worker and scenario of the run.

Workers may race to build the same architecture. Each builds into a private staging directory and renames it
into place; a rename never replaces a published checkpoint, so a worker reading one is never disturbed and a
loser just drops its copy.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["checkpoint_dir"]


def checkpoint_dir(model_type: str, root: Path, *, seed: int = 0) -> Path:
    """``root/model_type``, the tiny checkpoint of ``model_type``, built with :mod:`hf_neuron.tiny` if not there."""
    final = root / model_type
    if final.is_dir():
        return final
    from hf_neuron.tiny.checkpoint import materialize

    staging = root / f".staging-{model_type}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        materialize(model_type, staging, seed=seed)
        try:
            staging.rename(final)
        except OSError:  # another worker published it first
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final
