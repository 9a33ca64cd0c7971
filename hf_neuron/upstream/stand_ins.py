"""Locally built stand-ins for the Hub models and datasets a library's tests load by id, in an offline cache.

For a run of ``suite``'s tests, :func:`prepare` builds every stand-in of ``compat/upstream_stand_ins.toml`` listed
for it (once: tiny models are content-keyed by :mod:`hf_neuron.tiny`, datasets by their rows, both kept in the
build directory) and lays out a fresh Hugging Face cache for the run:

- a model under ``<hub>/models--<owner>--<name>/snapshots/<revision>``, with ``refs/main`` naming the revision,
  as ``huggingface_hub`` lays out a download; offline (``HF_HUB_OFFLINE=1``) ``from_pretrained("owner/name")``
  (and ``snapshot_download``) resolves there. A transformers model is a tiny one of :mod:`hf_neuron.tiny`; a
  diffusers model is its class built from the configuration the tests expect, weights drawn from seed 0, saved with
  the subfolder, variant and shard size its entry asks for (content-keyed too);
- a dataset in the datasets library's own cache layout (``<datasets>/<owner>___<name>/<config>/<version>/<hash>/``),
  which ``load_dataset("owner/name", config)`` reads offline ("Using the latest cached version of the dataset").

:meth:`StandInCache.environment` points a test process at that cache and nowhere else (``HF_HOME`` too), so a test
finds what stands in, or nothing: nothing is downloaded, and a model in the user's own cache is not used either.
:meth:`StandInCache.ids` maps the cache's top-level folders to Hub ids, which the test plug-in uses to record which
tests read a stand-in.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from hf_neuron.compat.upstream_stand_ins import StandIn
from hf_neuron.errors import InputError

__all__ = ["RECIPES", "StandInCache", "dataset_folder", "model_folder", "prepare", "trl_formats"]

Rows = list[dict[str, Any]]
#: A dataset recipe: config name -> split -> rows.
Recipe = Callable[[], dict[str, dict[str, Rows]]]
_VERSION = "0.0.0"
#: The seed a diffusers stand-in's weights are drawn from, and the file that says a build finished.
_SEED, _BUILT = 0, "hf-neuron-stand-in.json"
#: How many examples the TRL-format recipe keeps per split (as many as TRL's own ``zen`` dataset has).
_TRAIN_ROWS, _TEST_ROWS = 17, 2


def trl_formats() -> dict[str, dict[str, Rows]]:
    """TRL's dataset formats (:func:`hf_neuron.tiny.dataset.trl_formats`), one config each, split as TRL's own ``zen``
    dataset is."""
    from hf_neuron.tiny.dataset import trl_formats as formats

    return {config: {"train": rows[:_TRAIN_ROWS], "test": rows[_TRAIN_ROWS:_TRAIN_ROWS + _TEST_ROWS]}
            for config, rows in formats().items()}


#: The dataset recipes a ``[[dataset]]`` entry can name.
RECIPES: dict[str, Recipe] = {"trl-formats": trl_formats}


def model_folder(hub_id: str) -> str:
    """The folder of a model in a Hugging Face hub cache."""
    return "models--" + hub_id.replace("/", "--")


def dataset_folder(hub_id: str) -> str:
    """The folder of a dataset in the datasets library's cache (its name in snake case, as datasets writes it)."""
    from datasets.naming import camelcase_to_snakecase

    owner, name = hub_id.split("/")
    return f"{owner}___{camelcase_to_snakecase(name)}"


@dataclasses.dataclass(frozen=True)
class StandInCache:
    """A run's offline Hugging Face cache, and the Hub id of each stand-in folder in it."""

    home: Path
    ids: Mapping[str, str]

    @property
    def hub(self) -> Path:
        return self.home / "hub"

    @property
    def datasets(self) -> Path:
        return self.home / "datasets"

    def environment(self) -> dict[str, str]:
        """The variables that make a process read this cache, offline, and no other."""
        return {"HF_HOME": str(self.home), "HF_HUB_CACHE": str(self.hub), "HF_DATASETS_CACHE": str(self.datasets),
                "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _build_model(entry: StandIn, build: Path) -> Path:
    from transformers.utils import logging

    from hf_neuron.tiny.transformers.checkpoint import materialize
    from hf_neuron.tiny.transformers.model_types import generative_types

    assert entry.model_type is not None
    if entry.model_type not in generative_types():
        raise InputError(f"stand-in {entry.id}: model_type {entry.model_type!r} is not a generative model type of the "
                         "installed transformers (compat/upstream_stand_ins.toml)")
    shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        return materialize(entry.model_type, build / "models" / entry.id.replace("/", "--"),
                           overrides=dict(entry.config) or None).resolve()
    finally:
        if shown:
            logging.enable_progress_bar()


def _build_diffusers_model(entry: StandIn, build: Path) -> Path:
    """The folder of ``entry``'s diffusers model (its class built from its config, seed :data:`_SEED`), built once
    per content under ``build``."""
    import diffusers
    import torch
    from diffusers.models.modeling_utils import ModelMixin

    cls = getattr(diffusers, entry.model_class or "", None)
    if not (isinstance(cls, type) and issubclass(cls, ModelMixin)):
        raise InputError(f"stand-in {entry.id}: class {entry.model_class!r} is not a model class of the installed "
                         "diffusers (compat/upstream_stand_ins.toml)")
    recipe = {"class": entry.model_class, "config": dict(entry.config), "subfolder": entry.subfolder,
              "variant": entry.variant, "max_shard_size": entry.max_shard_size, "seed": _SEED}
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]
    folder = build / "diffusers" / f"{entry.id.replace('/', '--')}.{digest}"
    if (folder / _BUILT).is_file():
        return folder.resolve()
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(_SEED)
                model = cls(**entry.config)
        except (TypeError, ValueError) as error:
            raise InputError(f"stand-in {entry.id}: {entry.model_class} does not build from its config: "
                             f"{error} (compat/upstream_stand_ins.toml)") from error
        options: dict[str, Any] = {"variant": entry.variant}
        if entry.max_shard_size is not None:
            options["max_shard_size"] = entry.max_shard_size
        model.save_pretrained(staging / (entry.subfolder or ""), **options)
        (staging / _BUILT).write_text(json.dumps(recipe, sort_keys=True) + "\n", encoding="utf-8")
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / _BUILT).is_file():  # not published by a concurrent run either
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder.resolve()


def _place_model(entry: StandIn, built: Path, hub: Path) -> str:
    folder = hub / model_folder(entry.id)
    revision = hashlib.sha1(built.name.encode()).hexdigest()
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(revision)
    (folder / "snapshots").mkdir(exist_ok=True)
    (folder / "snapshots" / revision).symlink_to(built, target_is_directory=True)
    return folder.name


def _build_dataset(entry: StandIn, build: Path) -> Path:
    """The dataset's cache folder (``<owner>___<name>``), built once per content under ``build``."""
    import datasets
    from datasets.packaged_modules.json.json import Json

    datasets.disable_progress_bars()
    assert entry.recipe is not None
    if entry.recipe not in RECIPES:
        raise InputError(f"stand-in {entry.id}: no dataset recipe {entry.recipe!r} (known: {', '.join(RECIPES)})")
    configs = RECIPES[entry.recipe]()
    digest = hashlib.sha256(json.dumps(configs, sort_keys=True).encode()).hexdigest()[:16]
    keyed = build / "datasets" / f"{entry.id.replace('/', '--')}.{digest}"
    folder = keyed / dataset_folder(entry.id)
    if folder.is_dir():
        return folder
    keyed.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{keyed.name}.", dir=keyed.parent))
    try:
        name = folder.name.partition("___")[2]
        for config, splits in configs.items():
            files = {}
            for split, rows in splits.items():
                files[split] = str(staging / "rows" / config / f"{split}.jsonl")
                Path(files[split]).parent.mkdir(parents=True, exist_ok=True)
                Path(files[split]).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
            builder = Json(cache_dir=str(staging / "cache"), dataset_name=name, config_name=config,
                           data_files=files, hash=digest)
            builder.download_and_prepare()
            built = Path(builder.cache_dir)  # <cache>/<name>/<config>-<data files hash>/<version>/<hash>
            target = staging / "out" / folder.name / config / _VERSION / digest
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(built, target, ignore=shutil.ignore_patterns("*.lock"))
        (staging / "out").rename(keyed)
    except OSError:
        if not folder.is_dir():  # not published by a concurrent run either
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def prepare(entries: Iterable[StandIn], suite: str, build: Path, home: Path,
            progress: Callable[[str], None] = print) -> StandInCache:
    """Build ``suite``'s stand-ins under ``build`` (reused when built before) and lay out the run's cache in ``home``
    (a new directory)."""
    ids: dict[str, str] = {}
    mine = [entry for entry in entries if suite in entry.suites]
    (home / "hub").mkdir(parents=True)
    (home / "datasets").mkdir()
    for entry in mine:
        if entry.kind == "model":
            ids[_place_model(entry, _build_model(entry, build), home / "hub")] = entry.id
        elif entry.kind == "diffusers_model":
            ids[_place_model(entry, _build_diffusers_model(entry, build), home / "hub")] = entry.id
        else:
            folder = _build_dataset(entry, build)
            shutil.copytree(folder, home / "datasets" / folder.name)
            ids[folder.name] = entry.id
    if mine:
        datasets = sum(entry.kind == "dataset" for entry in mine)
        progress(f"stand-ins for {suite}: {len(mine) - datasets} models, {datasets} datasets under their Hub ids "
                 f"(offline cache {home})")
    return StandInCache(home, ids)
