"""Find a checkpoint's config and say what it is: the one reader of the ``MODEL`` that ``hf-neuron check`` is given.

``MODEL`` is a transformers ``config.json``, a diffusers ``model_index.json`` (or a denoiser component's
``config.json``), a folder holding one of them, or a Hub id whose files are in the local Hugging Face cache (looked up
offline: nothing is ever downloaded). :func:`resolve` returns a :class:`CheckpointSource`: the architecture (a
transformers ``model_type``, or a diffusers denoiser class), its catalog group, the config as the checkpoint states it,
the dtype it states, and its ``quantization_config``. Bad input — no such file, invalid JSON, an unknown
``model_type``, an id not in the cache — raises :class:`~hf_neuron.errors.InputError` saying what to do.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_neuron.errors import InputError
from hf_neuron.vocabulary.groups import Group, Library

__all__ = ["CheckpointSource", "load_json", "resolve", "stated_dtype"]

#: A Hub id: ``name`` or ``org/name``, of letters, digits, ``-``, ``_`` and ``.``.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
#: The files a checkpoint's config may be in, in the order they are looked for in a folder or the cache.
CONFIG_FILES = ("config.json", "model_index.json")
#: The dtype names a config may state, and the torch dtype each means.
DTYPES = {"float32": "float32", "float": "float32", "bfloat16": "bfloat16", "float16": "float16", "half": "float16"}


@dataclasses.dataclass(frozen=True)
class CheckpointSource:
    """A checkpoint's config and what it is.

    ``name`` is its Hub id (or, for a local file that does not say one, its folder's name); ``path`` the file read;
    ``library`` and ``architecture`` (a ``model_type``, or the class name of a diffusers denoiser) say which catalog
    architecture it is and ``group`` its group; ``config`` is the model's config as the checkpoint states it (for a
    diffusers pipeline, the denoiser ``component``'s); ``dtype`` the dtype it states (None when it states none: a
    diffusers config, an old transformers one); ``quantization`` its ``quantization_config`` (None when unquantized).
    """

    name: str
    path: Path
    library: Library
    architecture: str
    group: Group
    config: Mapping[str, Any]
    dtype: str | None
    quantization: Mapping[str, Any] | None
    component: str | None = None


def load_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; :class:`InputError` naming the file, line and column when it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read as UTF-8 text ({error})") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}; "
                         "give the checkpoint's config.json as published") from None
    if not isinstance(value, dict):
        raise InputError(f"{path}: a config is a JSON object, this file holds a {type(value).__name__}")
    return value


def stated_dtype(config: Mapping[str, Any]) -> str | None:
    """The dtype a transformers config states (``dtype``, or ``torch_dtype`` of configs before transformers 5; a
    composite's text config where the top level states none), as a torch dtype name; None where it states none."""
    for owner in (config, config.get("text_config")):
        if isinstance(owner, Mapping):
            for key in ("dtype", "torch_dtype"):
                value = owner.get(key)
                if isinstance(value, str) and value.removeprefix("torch.") in DTYPES:
                    return DTYPES[value.removeprefix("torch.")]
    return None


def _cached(model: str) -> Path | None:
    """The first of :data:`CONFIG_FILES` of Hub id ``model`` in the local Hugging Face cache, never downloaded."""
    from huggingface_hub import try_to_load_from_cache

    for filename in CONFIG_FILES:
        found = try_to_load_from_cache(model, filename)
        if isinstance(found, str):
            return Path(found)
    return None


def _config_file(model: str) -> tuple[Path, str | None]:
    """The config file ``model`` names, and the Hub id it was found under (None for a path)."""
    path = Path(model).expanduser()
    if path.is_dir():
        found = next((path / name for name in CONFIG_FILES if (path / name).is_file()), None)
        if found is None:
            raise InputError(f"{model}: the folder holds neither {' nor '.join(CONFIG_FILES)}: give the folder of a "
                             "checkpoint (where from_pretrained would read it) or its config file")
        return found, None
    if path.is_file():
        return path, None
    if path.suffix == ".json" or not _HUB_ID.fullmatch(model):
        raise InputError(f"{model}: no such file or folder")
    cached = _cached(model)
    if cached is None:
        from huggingface_hub import constants

        raise InputError(
            f"{model!r} is not a file or folder here, and the Hub id is not in the local Hugging Face cache "
            f"({constants.HF_HUB_CACHE}); hf-neuron never downloads: fetch its config on a machine with network "
            f"(`hf download {model} config.json`, or model_index.json for a diffusers pipeline) or give the path of "
            "its config.json")
    return cached, model


def _name(path: Path, config: Mapping[str, Any], hub_id: str | None) -> str:
    """The checkpoint's name: its Hub id, else the id its config was saved from, else its folder's name."""
    if hub_id is not None:
        return hub_id
    saved = config.get("_name_or_path")
    if isinstance(saved, str) and _HUB_ID.fullmatch(saved) and not Path(saved).is_absolute():
        return saved
    return path.resolve().parent.name


def _transformers(path: Path, config: dict[str, Any], name: str) -> CheckpointSource:
    from transformers import CONFIG_MAPPING

    from hf_neuron.tiny.transformers.model_types import generative_types

    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise InputError(f"{path}: the config has no model_type: a transformers config.json names its model_type "
                         "(a diffusers pipeline is described by model_index.json)")
    found = generative_types().get(model_type)
    if found is None:
        import transformers

        known = "a model type transformers knows, but not a generative one" if model_type in CONFIG_MAPPING else (
            "not a model type of the installed transformers")
        raise InputError(f"{path}: model_type {model_type!r} is {known} ({transformers.__version__}); "
                         "`hf-neuron matrix list --architectures` lists those hf-neuron checks")
    cls = CONFIG_MAPPING[model_type]
    foreign = sorted(key for key, value in config.items() if key.endswith("_config") and isinstance(value, Mapping)
                     and key != "quantization_config" and key not in cls.sub_configs)
    if foreign:
        raise InputError(f"{path}: transformers' {cls.__name__} has no sub-config {', '.join(foreign)}: it would "
                         "ignore them and build its class defaults instead. This config.json is written for the "
                         "model's own code (trust_remote_code), not for transformers: check the checkpoint converted "
                         "for transformers")
    quantization = config.get("quantization_config")
    return CheckpointSource(name, path, "transformers", model_type, found.group, config, stated_dtype(config),
                            quantization if isinstance(quantization, Mapping) else None)


def _denoiser(path: Path, index: Mapping[str, Any]) -> tuple[str, str]:
    """The denoiser component of a ``model_index.json`` (``unet``, ``transformer``...) and its class."""
    from hf_neuron.tiny.diffusion.backbones import backbone_names

    backbones = set(backbone_names())
    found = [(component, spec[1]) for component, spec in index.items()
             if isinstance(spec, list) and len(spec) == 2 and spec[1] in backbones]
    if len(found) != 1:
        named = ", ".join(f"{component} ({cls})" for component, cls in found) or "none"
        raise InputError(f"{path}: a diffusers pipeline names one denoiser backbone among its components; found "
                         f"{named}")
    return found[0]


def _is_pipeline_index(path: Path, config: Mapping[str, Any]) -> bool:
    """Whether ``config`` describes a diffusers pipeline (``model_index.json``: components as ``[library, class]``)
    rather than one model."""
    return path.name == "model_index.json" or any(
        isinstance(spec, list) and len(spec) == 2 and all(isinstance(part, str) for part in spec)
        for key, spec in config.items() if not key.startswith("_"))


def _diffusers(path: Path, config: dict[str, Any], name: str) -> CheckpointSource:
    from hf_neuron.tiny.diffusion.backbones import backbone_names

    component = None
    if _is_pipeline_index(path, config):
        component, _ = _denoiser(path, config)
        path = path.parent / component / "config.json"
        if not path.is_file():
            raise InputError(f"{path}: model_index.json names the denoiser {component!r}, but its config is not "
                             f"beside it: copy the checkpoint's {component}/config.json there")
        config = load_json(path)
    architecture = config.get("_class_name")
    if architecture not in backbone_names():
        import diffusers

        raise InputError(f"{path}: {architecture!r} is not a denoiser backbone of diffusers {diffusers.__version__}")
    return CheckpointSource(name, path, "diffusers", architecture, "diffusion", config, None, None, component)


def resolve(model: str) -> CheckpointSource:
    """The checkpoint ``model`` names (a config file, a folder, or a Hub id in the local cache: see the module
    docstring); :class:`InputError` for bad input."""
    path, hub_id = _config_file(model)
    config = load_json(path)
    name = _name(path, config, hub_id)
    if "_class_name" in config or _is_pipeline_index(path, config):
        return _diffusers(path, config, name)
    return _transformers(path, config, name)
