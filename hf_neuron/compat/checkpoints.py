"""The checkpoint catalog (``compat/checkpoints.toml`` and the files under ``compat/checkpoints/``): real configurations
of public Hugging Face checkpoints, copied verbatim from public sources, each with its Hub id and where it came from.

Each ``[[checkpoint]]`` table names one Hub id; its files live in ``compat/checkpoints/<org>/<name>/``::

    [[checkpoint]]
    id = "meta-llama/Llama-3.1-8B"           # the Hub id, org/name; the tables are sorted by it (case-insensitive)
    architecture = "llama"                    # the catalog's name: the model_type, or the denoiser's class name
    parameters = 8_030_000_000                # optional: the full-size count the model card or paper publishes ...
    parameters_source = "https://..."         # ... and where (required with it)
    active_parameters = 1_000_000_000         # optional, MoE only (with parameters): per token
    note = "..."                              # optional: what a reader must know (renamed, removed, gated)
    [checkpoint.files."config.json"]
    repository = "owner/repo"                 # the GitHub repository the file was copied from,
    commit = "<40 hex>"                       # the commit it was read at
    path = "path/in/repo/config.json"         # and its path there
    # or, instead of the three:  model_card = "https://huggingface.co/<id>" (every value is published there)

A transformers checkpoint lists ``config.json`` (whose ``model_type`` is the architecture); a diffusers one lists
``model_index.json`` and its denoiser's config (e.g. ``unet/config.json``, whose ``_class_name`` is the architecture
and which ``model_index.json`` names as one of its components). :func:`load_checkpoints` reads and checks the file;
a broken rule raises :class:`~hf_neuron.vocabulary.datafiles.DataFileError` naming the file, the entry and what to do.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Collection, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from hf_neuron.compat.files import COMPAT_DIR, read_toml
from hf_neuron.vocabulary.datafiles import DataFileError

__all__ = ["CHECKPOINTS_DIR", "CHECKPOINTS_PATH", "CatalogCheckpoint", "FileSource", "load_checkpoints", "model_config",
           "tiny_base"]

CHECKPOINTS_PATH = COMPAT_DIR / "checkpoints.toml"
#: Where the files of the checkpoints live; a catalog at another path keeps them in ``checkpoints/`` beside it.
CHECKPOINTS_DIR = COMPAT_DIR / "checkpoints"

_TABLE = "checkpoint"
_ENTRY_KEYS = {"id", "architecture", "files", "parameters", "active_parameters", "parameters_source", "note"}
_REPOSITORY_KEYS = ("repository", "commit", "path")
_SOURCE_KEYS = {*_REPOSITORY_KEYS, "model_card"}
_CONFIG = "config.json"
_MODEL_INDEX = "model_index.json"
#: A Hub id: ``org/name``, each part starting with a letter or digit, then letters, digits, ``.``, ``_`` or ``-``.
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_GITHUB_REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_MODEL_CARD = "https://huggingface.co/"


@dataclasses.dataclass(frozen=True)
class FileSource:
    """Where one file of a checkpoint was copied from: a ``repository`` (GitHub ``owner/name``) at a ``commit`` and
    ``path``, or the ``model_card`` (a Hub page) that publishes every value the file records."""

    repository: str | None
    commit: str | None
    path: str | None
    model_card: str | None


@dataclasses.dataclass(frozen=True)
class CatalogCheckpoint:
    """One catalogued checkpoint: its Hub ``id``, the catalog ``architecture`` it is an instance of, the
    ``directory`` holding its files, each file's source (by path relative to the directory), and the published
    parameter counts (full size, and active per token for a mixture of experts) with their source."""

    id: str
    architecture: str
    directory: Path
    files: Mapping[str, FileSource]
    parameters: int | None
    active_parameters: int | None
    parameters_source: str | None
    note: str | None
    #: The diffusers pipeline class its ``model_index.json`` names (None for a transformers checkpoint).
    pipeline: str | None = None

    @property
    def config_path(self) -> Path:
        """The file a tool loads first: ``model_index.json`` for a diffusers pipeline, else ``config.json``."""
        return self.directory / (_MODEL_INDEX if _MODEL_INDEX in self.files else _CONFIG)


class _Entry:
    """Builds the errors of one ``[[checkpoint]]`` table: its line, and its id in the message."""

    def __init__(self, path: Path, number: int, name: str | None) -> None:
        self.path, self.table, self.name = path, f"[[{_TABLE}]] #{number}", name

    def error(self, problem: str, key: str | None = None) -> DataFileError:
        return DataFileError(self.path, f"{self.name}: {problem}" if self.name else problem, table=self.table,
                             key=key)


def _source(entry: _Entry, name: str, raw: object) -> FileSource:
    key = f'files."{name}"'
    if not isinstance(raw, dict):
        raise entry.error("must be a table saying where the file was copied from: repository, commit and path, or "
                          "model_card", key)
    unknown = sorted(set(raw) - _SOURCE_KEYS)
    if unknown:
        raise entry.error(f"has unknown keys {unknown}; a file's source has {', '.join(sorted(_SOURCE_KEYS))}", key)
    if any(not isinstance(value, str) or not value for value in raw.values()):
        raise entry.error("the source's values must be non-empty strings", key)
    given = [field for field in _REPOSITORY_KEYS if field in raw]
    if "model_card" in raw:
        if given:
            raise entry.error("names both a model_card and a repository file; keep the one the file was copied "
                              "from", key)
        if not raw["model_card"].startswith(_MODEL_CARD):
            raise entry.error(f"model_card must be a Hub page ({_MODEL_CARD}<id>), got {raw['model_card']!r}", key)
        return FileSource(None, None, None, raw["model_card"])
    if len(given) != len(_REPOSITORY_KEYS):
        missing = [field for field in _REPOSITORY_KEYS if field not in raw]
        raise entry.error(f"misses {', '.join(missing)}: a file copied from a repository names its repository "
                          "(GitHub owner/name), commit and path (or give model_card instead)", key)
    if not _GITHUB_REPOSITORY.fullmatch(raw["repository"]):
        raise entry.error(f"repository must be a GitHub owner/name, got {raw['repository']!r}", key)
    if not _COMMIT.fullmatch(raw["commit"]):
        raise entry.error(f"commit must be the 40 lowercase hex digits of the commit the file was read at, got "
                          f"{raw['commit']!r}", key)
    return FileSource(raw["repository"], raw["commit"], raw["path"], None)


def _relative_file(entry: _Entry, name: str) -> str:
    parts = PurePosixPath(name).parts
    if (not name or name.startswith("/") or "\\" in name or any(part in ("", ".", "..") for part in parts)
            or str(PurePosixPath(name)) != name or not name.endswith(".json")):
        raise entry.error(f"file {name!r} must be a .json path relative to the checkpoint's directory "
                          "(e.g. config.json or unet/config.json)", "files")
    return name


def _read_json(entry: _Entry, file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise entry.error(f"{file} does not exist: copy the file from the source its entry names") from None
    except UnicodeDecodeError:
        raise entry.error(f"{file} is not UTF-8 text: copy the file again from its source") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as problem:
        raise entry.error(f"{file} is not valid JSON ({problem}): copy the file again from its source") from None
    if not isinstance(document, dict):
        raise entry.error(f"{file} must hold a JSON object, got {type(document).__name__}")
    return document


def _check_configs(entry: _Entry, architecture: str, directory: Path, names: Collection[str]) -> str | None:
    """Check the checkpoint's config files against its architecture; the pipeline class ``model_index.json`` names
    (None for a transformers checkpoint)."""
    configs = {name: _read_json(entry, directory / name) for name in names}
    if _MODEL_INDEX in configs:
        index = configs[_MODEL_INDEX]
        denoisers = [name for name, config in configs.items()
                     if name != _MODEL_INDEX and config.get("_class_name") == architecture]
        if len(denoisers) != 1:
            raise entry.error(f"a diffusers checkpoint lists model_index.json and exactly one component config whose "
                              f"_class_name is its architecture {architecture!r}; {len(denoisers)} of "
                              f"{sorted(set(configs) - {_MODEL_INDEX})} have it")
        component = PurePosixPath(denoisers[0]).parts[0]
        if component == denoisers[0] or component not in index:
            raise entry.error(f"{denoisers[0]} must be in the directory of a component that model_index.json names "
                              f"(it names {sorted(key for key in index if not key.startswith('_'))})")
        pipeline = index.get("_class_name")
        return pipeline if isinstance(pipeline, str) else None
    if _CONFIG not in configs:
        raise entry.error("lists neither config.json (a transformers checkpoint) nor model_index.json (a diffusers "
                          "pipeline)", "files")
    model_type = configs[_CONFIG].get("model_type")
    if model_type != architecture:
        raise entry.error(f"config.json's model_type is {model_type!r}, not its architecture {architecture!r}: the "
                          "architecture of a transformers checkpoint is its model_type", "architecture")
    return None


def _count(entry: _Entry, raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise entry.error(f"must be a positive integer (the published count, e.g. 7.61B as 7_610_000_000), got "
                          f"{value!r}", key)
    return value


def _checkpoint(path: Path, number: int, raw: object, directory: Path,
                architectures: Collection[str] | None) -> CatalogCheckpoint:
    if not isinstance(raw, dict):
        raise _Entry(path, number, None).error(f"each [[{_TABLE}]] must be a table")
    name = raw.get("id")
    entry = _Entry(path, number, name if isinstance(name, str) else None)
    if not isinstance(name, str) or not _HUB_ID.fullmatch(name) or ".." in name:
        raise entry.error(f"id must be a Hub id org/name, got {name!r}", "id")
    unknown = sorted(set(raw) - _ENTRY_KEYS)
    if unknown:
        raise entry.error(f"has unknown keys {unknown}; an entry has {', '.join(sorted(_ENTRY_KEYS))}")
    architecture = raw.get("architecture")
    if not isinstance(architecture, str) or not architecture:
        raise entry.error("architecture must be the catalog's name of the checkpoint's architecture", "architecture")
    if architectures is not None and architecture not in architectures:
        raise entry.error(f"architecture {architecture!r} is not in the catalog (compat/catalog.json): use its "
                          "model_type (transformers) or its denoiser's class name (diffusers)", "architecture")
    files = raw.get("files")
    if not isinstance(files, dict) or not files:
        raise entry.error("files must list the checkpoint's files: [checkpoint.files.\"config.json\"] with its "
                          "source", "files")
    sources = {_relative_file(entry, file): _source(entry, file, source) for file, source in files.items()}
    home = directory / name
    pipeline = _check_configs(entry, architecture, home, sources)
    parameters = _count(entry, raw, "parameters")
    active = _count(entry, raw, "active_parameters")
    source = raw.get("parameters_source")
    if (parameters is None) != (source is None):
        raise entry.error("parameters and parameters_source go together: the published count and the page that "
                          "publishes it", "parameters_source" if source is None else "parameters")
    if source is not None and (not isinstance(source, str) or not source.startswith("https://")):
        raise entry.error(f"parameters_source must be the https:// page that publishes the count, got {source!r}",
                          "parameters_source")
    if active is not None and (parameters is None or active > parameters):
        raise entry.error(f"active_parameters ({active}) needs parameters and cannot exceed them ({parameters})",
                          "active_parameters")
    note = raw.get("note")
    if note is not None and (not isinstance(note, str) or not note.strip()):
        raise entry.error("note must be a non-empty string", "note")
    return CatalogCheckpoint(name, architecture, home, sources, parameters, active, source, note, pipeline)


def _check_order(path: Path, checkpoints: list[CatalogCheckpoint]) -> None:
    seen: dict[str, str] = {}
    previous = ""
    for number, checkpoint in enumerate(checkpoints, start=1):
        key = checkpoint.id.lower()
        entry = _Entry(path, number, checkpoint.id)
        if key in seen:
            raise entry.error(f"is listed twice (as {seen[key]!r} before): keep one entry per Hub id", "id")
        if key < previous:
            raise entry.error(f"the entries must be sorted by id (case-insensitive): it comes after "
                              f"{seen[previous]!r}; move it up", "id")
        seen[key], previous = checkpoint.id, key


def _check_strays(path: Path, directory: Path, checkpoints: list[CatalogCheckpoint]) -> None:
    listed = {checkpoint.directory / name for checkpoint in checkpoints for name in checkpoint.files}
    if not directory.is_dir():
        return
    strays = sorted(file for file in directory.rglob("*") if file.is_file() and file not in listed)
    if strays:
        raise DataFileError(path, f"{strays[0]} is listed by no [[{_TABLE}]] ({len(strays)} such files): list it "
                                  "under its checkpoint's files, or delete it")


def load_checkpoints(path: Path = CHECKPOINTS_PATH, *,
                     architectures: Collection[str] | None = None) -> tuple[CatalogCheckpoint, ...]:
    """Read and check the checkpoint catalog at ``path`` (its files in ``checkpoints/`` beside it), in file order;
    each ``architecture`` must be among ``architectures`` when given (the catalog's names). A broken rule raises
    :class:`DataFileError`."""
    document = read_toml(path)
    unknown = sorted(set(document) - {_TABLE})
    if unknown:
        raise DataFileError(path, f"has unknown tables {unknown}; the file is a list of [[{_TABLE}]] tables")
    tables = document.get(_TABLE, [])
    if not isinstance(tables, list):
        raise DataFileError(path, f"{_TABLE} must be an array of tables: write each entry as [[{_TABLE}]]")
    directory = path.parent / CHECKPOINTS_DIR.name
    checkpoints = [_checkpoint(path, number, raw, directory, architectures)
                   for number, raw in enumerate(tables, start=1)]
    _check_order(path, checkpoints)
    _check_strays(path, directory, checkpoints)
    return tuple(checkpoints)


def model_config(checkpoint: CatalogCheckpoint) -> dict[str, Any]:
    """The model's config a catalogued checkpoint holds: its ``config.json``, or for a diffusers pipeline its
    denoiser's config (the listed file whose ``_class_name`` is the architecture)."""
    for name in checkpoint.files:
        config = json.loads((checkpoint.directory / name).read_text(encoding="utf-8"))
        if name == _CONFIG or config.get("_class_name") == checkpoint.architecture:
            return dict(config)
    raise DataFileError(CHECKPOINTS_PATH, f"{checkpoint.id} lists no config of {checkpoint.architecture}")


def tiny_base(architecture: str, pipeline: str | None = None,
              path: Path = CHECKPOINTS_PATH) -> CatalogCheckpoint | None:
    """The checkpoint the tiny model of ``architecture`` starts from: its first in the catalog; for a diffusion backbone
    whose tiny model runs in the diffusers ``pipeline`` (a class name), its first checkpoint of that pipeline (the
    class its ``model_index.json`` names) where the catalog holds one: stable-cascade's decoder and stable-cascade-prior
    are both StableCascadeUNet, and the matrix runs the prior's pipeline. None where the catalog holds none of it, or
    there is no catalog (an installed package has no ``compat/``)."""
    if not path.is_file():
        return None
    found = [checkpoint for checkpoint in _loaded(path, path.stat().st_mtime_ns)
             if checkpoint.architecture == architecture]
    of_pipeline = [checkpoint for checkpoint in found
                   if pipeline is not None and checkpoint.pipeline == pipeline]
    return next(iter(of_pipeline or found), None)


@functools.cache
def _loaded(path: Path, mtime_ns: int) -> tuple[CatalogCheckpoint, ...]:
    """The catalog at ``path`` as it was at ``mtime_ns`` (read once per process and version of the file)."""
    return load_checkpoints(path)
