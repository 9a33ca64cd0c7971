"""Write tiny checkpoints to disk: config, random weights (safetensors), tokenizer and generation config.

A materialized directory loads offline with ``AutoModelForCausalLM.from_pretrained(dir)`` (or the group's auto class)
and ``AutoTokenizer.from_pretrained(dir)``; the tiny model of a type that transformers maps to a processor reading
images (a vision-language class in the decoder group: gemma3) also ships that processor where the image-text group's
builder makes one here (:func:`hf_neuron.tiny.image_text.processor.own_processor`), as its real checkpoints do, so
that ``AutoProcessor.from_pretrained(dir)`` (TRL's scripts) loads it. The same ``(model_type, seed, overrides)``
under the same library versions gives the same files; a directory whose stamp records the same content key is reused
as it is.

Concurrent builders are safe (matrix workers build the same architecture at the same time): the files are written
to a private staging directory, which is renamed to a directory named for its content key, ``.<name>.<key>``, next
to ``out_dir``; ``out_dir`` itself is a symbolic link to it, replaced atomically. A rebuild with another key (another
seed, new library versions) points the link elsewhere and leaves the old content in place, so a process still
reading it is never disturbed: nothing is ever deleted but the builder's own staging directory. A real directory
found at ``out_dir`` (written by an older version) is renamed aside, not removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hf_neuron.tiny.tokenizer import tiny_tokenizer, tokenizer_fingerprint
from hf_neuron.tiny.transformers.config import DIMS, TinyDims, tiny_config, tiny_config_kwargs
from hf_neuron.tiny.transformers.models import build_model

__all__ = ["STAMP", "content_key", "materialize", "publish"]

#: The file that records what a materialized directory holds; written last.
STAMP = "hf-neuron-tiny.json"
_FORMAT = 2


def content_key(model_type: str, *, seed: int = 0, overrides: Mapping[str, Any] | None = None,
                base: Mapping[str, Any] | None = None, dims: TinyDims = DIMS) -> str:
    """A hash of everything the checkpoint's bytes depend on: type, seed, the resolved config, versions."""
    import tokenizers
    import torch
    import transformers

    recipe = {
        "format": _FORMAT,
        "model_type": model_type,
        "seed": seed,
        "config": tiny_config_kwargs(model_type, overrides, base=base, dims=dims),
        "tokenizer": tokenizer_fingerprint(),
        "versions": [transformers.__version__, torch.__version__, tokenizers.__version__],
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, default=repr).encode()).hexdigest()


def _stamped_key(directory: Path) -> str | None:
    try:
        return json.loads((directory / STAMP).read_text())["key"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _publish(staging: Path, keyed: Path, key: str) -> None:
    """Rename ``staging`` to ``keyed``, unless a concurrent builder published the same content first."""
    try:
        os.rename(staging, keyed)
    except OSError:
        if _stamped_key(keyed) != key:  # not the same checkpoint published by someone else: a real failure
            raise


def _point(link: Path, target: Path) -> None:
    """Make ``link`` a symbolic link to ``target`` (a sibling), replacing what was there atomically."""
    if link.is_dir() and not link.is_symlink():
        with contextlib.suppress(FileNotFoundError):  # a concurrent caller moved it first
            link.rename(link.with_name(f".{link.name}.replaced-{secrets.token_hex(4)}"))
    temporary = link.with_name(f".{link.name}.link-{secrets.token_hex(4)}")
    temporary.symlink_to(target.name, target_is_directory=True)
    try:
        os.replace(temporary, link)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def publish(out_dir: Path, key: str, write: Callable[[Path], Mapping[str, Any]]) -> Path:
    """Make ``out_dir`` hold the checkpoint of content ``key``: reuse it when its stamp says ``key``, else call
    ``write(staging)`` to write the files and publish them (see the module docstring). ``write`` returns what the
    stamp records beside the key. Any checkpoint builder of :mod:`hf_neuron.tiny` publishes through here."""
    out_dir = Path(out_dir)
    if _stamped_key(out_dir) == key:
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    keyed = out_dir.with_name(f".{out_dir.name}.{key[:16]}")
    if _stamped_key(keyed) != key:
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-", dir=out_dir.parent))
        try:
            stamp = {**write(staging), "key": key}
            (staging / STAMP).write_text(json.dumps(stamp, indent=1, sort_keys=True, default=repr) + "\n")
            _publish(staging, keyed, key)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    _point(out_dir, keyed)
    return out_dir


def _own_processor(model_type: str, config: Any, model: Any, staging: Path) -> str:
    """Save ``model_type``'s own processor in ``staging`` where transformers maps the type to one and the image-text
    group's builder makes it for ``model``; its class name, or ``"none: <why>"`` (the checkpoint keeps its tokenizer
    alone, as before)."""
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    from hf_neuron.tiny.image_text.processor import own_processor

    if model_type not in PROCESSOR_MAPPING_NAMES:
        return f"none: transformers maps {model_type} to no processor"
    try:
        processor = own_processor(model_type, config, model)
    except Exception as why:  # noqa: BLE001 - a text model's vision side may not build at all: no processor then
        return f"none: {type(why).__name__}: {why}"
    processor.save_pretrained(staging)
    return type(processor).__name__


def materialize(model_type: str, out_dir: Path, *, seed: int = 0, overrides: Mapping[str, Any] | None = None,
                base: Mapping[str, Any] | None = None, dims: TinyDims = DIMS) -> Path:
    """Write the tiny ``model_type`` checkpoint to ``out_dir`` (reused when already there) and return ``out_dir``;
    from ``base`` (a checkpoint's config) and with ``dims`` where given (a real checkpoint's slice keeps width).

    Safe to call from several processes at once for the same or different content (see the module docstring).
    """

    def write(staging: Path) -> dict[str, Any]:
        config = tiny_config(model_type, overrides, base=base, dims=dims)
        model = build_model(model_type, seed=seed, config=config)
        model.save_pretrained(staging)
        if model.config is not config:  # the decoder of a composite: keep the model_type the auto classes know
            config.architectures = [type(model).__name__]
            config.save_pretrained(staging)
        tiny_tokenizer().save_pretrained(staging)
        stamp = {"model_type": model_type, "seed": seed, "overrides": dict(overrides or {})}
        if model.config is config and base is None and dims == DIMS:  # a slice's real-width tower: not built
            stamp["processor"] = _own_processor(model_type, config, model, staging)
        return stamp

    return publish(out_dir, content_key(model_type, seed=seed, overrides=overrides, base=base, dims=dims), write)
