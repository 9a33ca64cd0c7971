"""Write tiny checkpoints to disk: config, random weights (safetensors), tokenizer and generation config.

A materialized directory loads offline with ``AutoModelForCausalLM.from_pretrained(dir)`` (or the group's auto class)
and ``AutoTokenizer.from_pretrained(dir)``. The same ``(model_type, seed, overrides)`` under the same library versions
gives the same files; a directory whose stamp records the same content key is reused as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_neuron.tiny.config import tiny_config, tiny_config_kwargs
from hf_neuron.tiny.models import build_model
from hf_neuron.tiny.tokenizer import tiny_tokenizer, tokenizer_fingerprint

__all__ = ["STAMP", "content_key", "materialize"]

#: The file that records what a materialized directory holds; written last.
STAMP = "hf-neuron-tiny.json"
_FORMAT = 1


def content_key(model_type: str, *, seed: int = 0, overrides: Mapping[str, Any] | None = None) -> str:
    """A hash of everything the checkpoint's bytes depend on: type, seed, the resolved tiny config, versions."""
    import tokenizers
    import torch
    import transformers

    recipe = {
        "format": _FORMAT,
        "model_type": model_type,
        "seed": seed,
        "config": tiny_config_kwargs(model_type, overrides),
        "tokenizer": tokenizer_fingerprint(),
        "versions": [transformers.__version__, torch.__version__, tokenizers.__version__],
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, default=repr).encode()).hexdigest()


def _stamped_key(directory: Path) -> str | None:
    try:
        return json.loads((directory / STAMP).read_text())["key"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def materialize(model_type: str, out_dir: Path, *, seed: int = 0, overrides: Mapping[str, Any] | None = None) -> Path:
    """Write the tiny ``model_type`` checkpoint to ``out_dir`` (reused when already there) and return ``out_dir``.

    The directory is assembled next to ``out_dir`` and renamed into place, so concurrent callers never see a
    half-written checkpoint.
    """
    out_dir = Path(out_dir)
    key = content_key(model_type, seed=seed, overrides=overrides)
    if _stamped_key(out_dir) == key:
        return out_dir

    config = tiny_config(model_type, overrides)
    model = build_model(model_type, seed=seed, config=config)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        model.save_pretrained(staging)
        if model.config is not config:  # the decoder of a composite: keep the model_type the auto classes know
            config.architectures = [type(model).__name__]
            config.save_pretrained(staging)
        tiny_tokenizer().save_pretrained(staging)
        stamp = {"key": key, "model_type": model_type, "seed": seed, "overrides": dict(overrides or {})}
        (staging / STAMP).write_text(json.dumps(stamp, indent=1, sort_keys=True, default=repr) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.rename(staging, out_dir)
    except OSError:
        if _stamped_key(out_dir) != key:  # not a concurrent writer of the same checkpoint: a real failure
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir
