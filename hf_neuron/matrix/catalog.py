"""The architecture catalog: every generative model type of the installed transformers, as reviewed data.

:func:`generate_catalog` reads transformers' auto mappings (see :mod:`hf_neuron.tiny.registry`: causal LM ->
``decoder``, sequence-to-sequence LM -> ``encoder-decoder``, image-text-to-text -> ``multimodal``) and probes each type
with a tiny model on the CPU: ``builds`` (the model instantiates from its tiny config) and, for the text groups,
``runs`` (a forward pass with finite logits, then greedy generation). ``compat/catalog.json`` holds the result, one
architecture per line under a header with the transformers and diffusers versions and the generation date;
:func:`diff_catalogs` tells what changed since the committed file.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hf_neuron.compat_files import COMPAT_DIR, CompatFileError
from hf_neuron.tiny.overrides import load_overrides
from hf_neuron.tiny.registry import GROUPS

__all__ = [
    "CATALOG_PATH",
    "Catalog",
    "CatalogDiff",
    "CatalogEntry",
    "diff_catalogs",
    "generate_catalog",
    "load_catalog",
    "main_generate",
    "unexpected_runs",
    "write_catalog",
]

CATALOG_PATH = COMPAT_DIR / "catalog.json"
SCHEMA_VERSION = 1
_DIFFUSION = "diffusion"
#: The libraries whose installed version the catalog was generated from (header fields of the file).
_LIBRARIES = ("transformers", "diffusers")
_GROUP_NAMES = (*(group for group, _ in GROUPS), _DIFFUSION)
#: Groups whose tiny models take text alone, so the probe can run them (multimodal ones need images).
_TEXT_GROUPS = ("decoder", "encoder-decoder")
#: Groups whose entries say whether the tiny model runs (the diffusion probe calls the denoiser).
_RUN_GROUPS = (*_TEXT_GROUPS, _DIFFUSION)
_SOURCE = (
    "hf_neuron.matrix.catalog.generate_catalog: transformers auto mappings (causal LM -> decoder, seq2seq LM -> "
    "encoder-decoder, image-text-to-text -> multimodal) and diffusers' denoiser backbones (-> diffusion); "
    "builds/runs probed with tiny models on the CPU"
)


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """One architecture: its group, classes, and whether its tiny model builds and runs (null: not probed)."""

    model_type: str
    group: str
    model_class: str
    config_class: str
    builds: bool | None
    runs: bool | None
    reason: str | None = None


@dataclasses.dataclass(frozen=True)
class Catalog:
    """The catalog: header fields and the entries, decoder group first, then by ``model_type``."""

    transformers: str
    diffusers: str
    generated: str
    entries: tuple[CatalogEntry, ...]

    def by_type(self) -> dict[str, CatalogEntry]:
        return {entry.model_type: entry for entry in self.entries}

    def group(self, name: str) -> list[CatalogEntry]:
        return [entry for entry in self.entries if entry.group == name]


def _sort_key(entry: CatalogEntry) -> tuple[int, str]:
    return _GROUP_NAMES.index(entry.group), entry.model_type


def _probe(model_type: str, group: str) -> tuple[bool, bool | None, str | None]:
    from hf_neuron.tiny.models import probe

    result = probe(model_type, until="generate" if group in _TEXT_GROUPS else "build")
    builds = result.stage not in ("config", "build")
    if group not in _TEXT_GROUPS:
        return builds, None, None if builds else f"{result.stage}: {result.error}"
    return builds, result.ok, None if result.ok else f"{result.stage}: {result.error}"


def generate_catalog(*, types: Iterable[str] | None = None, probe: bool = True,
                     today: datetime.date | None = None) -> Catalog:
    """The catalog of the installed transformers (optionally only ``types``); ``probe=False`` skips the models.

    A reviewed ``runs = false`` in ``compat/tiny_overrides.toml`` supplies the reason of a type that fails.
    """
    import diffusers
    import transformers

    from hf_neuron.tiny.config import config_class
    from hf_neuron.tiny.registry import generative_types

    known = generative_types()
    wanted = sorted(known) if types is None else sorted(types)
    unknown = [model_type for model_type in wanted if model_type not in known]
    if unknown:
        raise KeyError(f"not generative model types of transformers {transformers.__version__}: {unknown}")
    overrides = load_overrides()
    entries = []
    for model_type in wanted:
        group, class_name = known[model_type]
        builds, runs, reason = _probe(model_type, group) if probe else (None, None, None)
        override = overrides.get(model_type)
        if override is not None and not override.runs and reason is not None:
            reason = override.reason
        entries.append(CatalogEntry(model_type, group, class_name, config_class(model_type).__name__,
                                    builds, runs, reason))
    if types is None:
        from hf_neuron.matrix.diffusion_catalog import diffusion_entries

        entries += diffusion_entries(probe_models=probe)
    return Catalog(
        transformers=transformers.__version__,
        diffusers=diffusers.__version__,
        generated=(today or datetime.date.today()).isoformat(),
        entries=tuple(sorted(entries, key=_sort_key)),
    )


def unexpected_runs(catalog: Catalog) -> list[str]:
    """Types reviewed as ``runs = false`` that ran after all: their override should be removed."""
    overrides = load_overrides()
    return [entry.model_type for entry in catalog.entries
            if entry.runs and entry.model_type in overrides and not overrides[entry.model_type].runs]


def write_catalog(catalog: Catalog, path: Path | None = None) -> Path:
    """Write ``catalog`` as JSON, one architecture per line, so that reviews diff line by line."""
    path = CATALOG_PATH if path is None else Path(path)
    header = {"schema": SCHEMA_VERSION, **{library: getattr(catalog, library) for library in _LIBRARIES},
              "generated": catalog.generated, "source": _SOURCE}
    lines = ["{"] + [f"  {json.dumps(key)}: {json.dumps(value)}," for key, value in header.items()]
    rows = [json.dumps(dataclasses.asdict(entry), ensure_ascii=False) for entry in catalog.entries]
    lines += ['  "architectures": [', ",\n".join(f"    {row}" for row in rows), "  ]", "}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _entry(path: Path, index: int, row: Any) -> CatalogEntry:
    where = f"architectures[{index}]"
    if not isinstance(row, dict):
        raise CompatFileError(path, f"{where} must be an object, got {type(row).__name__}")
    fields = {field.name: field for field in dataclasses.fields(CatalogEntry)}
    missing = [name for name in fields if name not in row and name != "reason"]
    if missing:
        raise CompatFileError(path, f"{where} misses {missing}")
    unknown = sorted(set(row) - set(fields))
    if unknown:
        raise CompatFileError(path, f"{where} has unknown keys {unknown}")
    for name in ("model_type", "group", "model_class", "config_class"):
        if not isinstance(row[name], str) or not row[name]:
            raise CompatFileError(path, f"{where}.{name} must be a non-empty string")
    for name in ("builds", "runs"):
        if row[name] is not None and not isinstance(row[name], bool):
            raise CompatFileError(path, f"{where}.{name} must be true, false or null, got {row[name]!r}")
    if row.get("reason") is not None and not isinstance(row["reason"], str):
        raise CompatFileError(path, f"{where}.reason must be a string or null")
    if row["group"] not in _GROUP_NAMES:
        raise CompatFileError(path, f"{where} ({row['model_type']}) has unknown group {row['group']!r}; "
                                    f"groups are {', '.join(_GROUP_NAMES)}")
    return CatalogEntry(**row)


def load_catalog(path: Path | None = None) -> Catalog:
    """Read and validate the catalog; a malformed file raises :class:`CompatFileError` naming file and problem."""
    path = CATALOG_PATH if path is None else Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompatFileError(path, "no such file: generate it with `hf-neuron matrix catalog --generate`") from None
    except json.JSONDecodeError as error:
        raise CompatFileError(path, f"not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise CompatFileError(path, "the top level must be an object")
    if document.get("schema") != SCHEMA_VERSION:
        raise CompatFileError(path, f"schema must be {SCHEMA_VERSION}, got {document.get('schema')!r}")
    for key in (*_LIBRARIES, "generated"):
        if not isinstance(document.get(key), str):
            raise CompatFileError(path, f"the header needs a string {key!r}")
    rows = document.get("architectures")
    if not isinstance(rows, list):
        raise CompatFileError(path, "'architectures' must be a list")
    entries = [_entry(path, index, row) for index, row in enumerate(rows)]
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if entry.model_type in seen:
            raise CompatFileError(path, f"duplicate model_type {entry.model_type!r} "
                                        f"(architectures[{seen[entry.model_type]}] and [{index}])")
        seen[entry.model_type] = index
    return Catalog(document["transformers"], document["diffusers"], document["generated"], tuple(entries))


@dataclasses.dataclass(frozen=True)
class CatalogDiff:
    """What changed between two catalogs (the generation date is not a change)."""

    versions: tuple[tuple[str, str, str], ...]  # (library, before, after) of each library whose version changed
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[tuple[str, str, Any, Any], ...]  # (model_type, field, before, after)

    def __bool__(self) -> bool:
        return bool(self.versions or self.added or self.removed or self.changed)

    def describe(self) -> str:
        """A short human summary, one change per line."""
        if not self:
            return "catalog unchanged"
        lines = [f"{library} {old} -> {new}" for library, old, new in self.versions]
        lines += [f"+ {model_type}" for model_type in self.added]
        lines += [f"- {model_type}" for model_type in self.removed]
        lines += [f"~ {model_type}: {field} {old!r} -> {new!r}" for model_type, field, old, new in self.changed]
        return "\n".join(lines)


def diff_catalogs(before: Catalog, after: Catalog) -> CatalogDiff:
    """New and removed model types, changed fields of the others, and the library versions that changed."""
    old, new = before.by_type(), after.by_type()
    changed = tuple(
        (model_type, field.name, getattr(old[model_type], field.name), getattr(new[model_type], field.name))
        for model_type in sorted(old.keys() & new.keys())
        for field in dataclasses.fields(CatalogEntry)
        if getattr(old[model_type], field.name) != getattr(new[model_type], field.name)
    )
    return CatalogDiff(
        versions=tuple((library, getattr(before, library), getattr(after, library)) for library in _LIBRARIES
                       if getattr(before, library) != getattr(after, library)),
        added=tuple(sorted(new.keys() - old.keys())),
        removed=tuple(sorted(old.keys() - new.keys())),
        changed=changed,
    )


def _summary(catalog: Catalog) -> str:
    """How many types each group has, and how many of them build and run."""
    parts = []
    for group in _GROUP_NAMES:
        entries = catalog.group(group)
        part = f"{group}: {len(entries)} types, {sum(1 for entry in entries if entry.builds)} build"
        if group in _RUN_GROUPS:
            part += f", {sum(1 for entry in entries if entry.runs)} run"
        parts.append(part)
    return "; ".join(parts)


def main_generate(path: Path | None = None, *, check: bool = False, probe: bool = True) -> int:
    """``hf-neuron matrix catalog --generate [--check]``: regenerate the catalog and print what changed.

    With ``check``, write nothing and return 1 when the committed catalog is out of date (for CI); otherwise write
    it and return 0. Returns 2 when the committed catalog is malformed.
    """
    path = CATALOG_PATH if path is None else Path(path)
    catalog = generate_catalog(probe=probe)
    try:
        before = load_catalog(path) if path.exists() else Catalog("none", "none", "", ())
    except CompatFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    diff = diff_catalogs(before, catalog)
    print(diff.describe())
    print(_summary(catalog))
    for model_type in unexpected_runs(catalog):
        print(f"warning: {model_type} runs although compat/tiny_overrides.toml says runs = false; remove that",
              file=sys.stderr)
    if check:
        return 1 if diff else 0
    write_catalog(catalog, path)
    print(f"wrote {path}")
    return 0
