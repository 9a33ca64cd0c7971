"""``compat/catalog.json``: every generative architecture of the installed transformers and diffusers, as reviewed
data, and the catalog groups.

The file holds one architecture per line under a header with the transformers and diffusers versions and the
generation date; each entry names its group and classes and says whether its tiny model ``builds`` and ``runs`` on
the CPU (and, for the image-text group, what the tiny model is: ``tiny``), and the class users load it through
(``load_class``). The groups are the registry's (:mod:`hf_neuron.vocabulary.groups`); a catalog written before a group
was renamed names it by its old name, read as the new one. :func:`load_catalog` reads and validates it,
:func:`write_catalog` writes it, :func:`diff_catalogs` tells what changed.
:mod:`hf_neuron.matrix.catalog` generates it from the installed libraries.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from hf_neuron.compat.files import COMPAT_DIR, missing_file
from hf_neuron.vocabulary.datafiles import DataFileError
from hf_neuron.vocabulary.gaps import GAPS, Gap
from hf_neuron.vocabulary.groups import GROUPS, Group, group_name

__all__ = [
    "CATALOG_PATH",
    "Catalog",
    "CatalogDiff",
    "CatalogEntry",
    "Group",
    "catalog_order",
    "diff_catalogs",
    "load_catalog",
    "write_catalog",
]

CATALOG_PATH = COMPAT_DIR / "catalog.json"
SCHEMA_VERSION = 1

#: The libraries whose installed version the catalog was generated from (header fields of the file).
_LIBRARIES = ("transformers", "diffusers")
#: Fields a catalog line may leave out (older catalogs lack the later ones).
_OPTIONAL_FIELDS = ("reason", "gap", "features", "tiny", "load_class")
#: Optional fields a line carries only when known (the tiny summary: the image-text group's), so rows stay short.
_WRITTEN_WHERE_KNOWN = ("tiny",)
_SOURCE = (
    "hf_neuron.matrix.catalog.generate: each group of hf_neuron.vocabulary.groups.REGISTRY, in its order "
    "(transformers groups from their auto mappings, diffusion from diffusers' denoiser backbones); builds/runs "
    "checked with tiny models on the CPU"
)


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """One architecture: its group, classes, whether its tiny model builds and runs (null: not checked), why not,
    the harness gap the reviewed data gives it (``gap``), and the ``features`` that decide which scenario variants
    apply to it (e.g. ``router-logits``, ``sdpa``, ``flex-attention``)."""

    model_type: str
    group: Group
    model_class: str
    config_class: str
    builds: bool | None
    runs: bool | None
    reason: str | None = None
    gap: Gap | None = None
    features: tuple[str, ...] = ()
    #: What the tiny model is (layers, widths, vision tower, image size), recorded at generation for readers that
    #: must not build models, such as the report; null when not recorded (the text groups) or it did not build.
    tiny: str | None = None
    #: The class users load the architecture through, which its cases test (a transformers auto class, or the
    #: backbone's own class); null in catalogs written before it was recorded.
    load_class: str | None = None


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
        return [entry for entry in self.entries if entry.group == group_name(name)]


def catalog_order(entry: CatalogEntry) -> tuple[int, str]:
    """The order of the file: by group (the registry's order), then by ``model_type``."""
    return GROUPS.index(entry.group), entry.model_type


def write_catalog(catalog: Catalog, path: Path | None = None) -> Path:
    """Write ``catalog`` as JSON, one architecture per line, so that reviews diff line by line."""
    path = CATALOG_PATH if path is None else Path(path)
    header = {"schema": SCHEMA_VERSION, **{library: getattr(catalog, library) for library in _LIBRARIES},
              "generated": catalog.generated, "source": _SOURCE}
    lines = ["{"] + [f"  {json.dumps(key)}: {json.dumps(value)}," for key, value in header.items()]
    rows = [json.dumps({key: value for key, value in dataclasses.asdict(entry).items()
                        if value is not None or key not in _WRITTEN_WHERE_KNOWN}, ensure_ascii=False)
            for entry in catalog.entries]
    lines += ['  "architectures": [', ",\n".join(f"    {row}" for row in rows), "  ]", "}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _entry(path: Path, index: int, row: Any) -> CatalogEntry:
    where = f"architectures[{index}]"
    if not isinstance(row, dict):
        raise DataFileError(path, f"{where} must be an object, got {type(row).__name__}")
    fields = {field.name: field for field in dataclasses.fields(CatalogEntry)}
    missing = [name for name in fields if name not in row and name not in _OPTIONAL_FIELDS]
    if missing:
        raise DataFileError(path, f"{where} misses {missing}")
    unknown = sorted(set(row) - set(fields))
    if unknown:
        raise DataFileError(path, f"{where} has unknown keys {unknown}")
    for name in ("model_type", "group", "model_class", "config_class"):
        if not isinstance(row[name], str) or not row[name]:
            raise DataFileError(path, f"{where}.{name} must be a non-empty string")
    for name in ("builds", "runs"):
        if row[name] is not None and not isinstance(row[name], bool):
            raise DataFileError(path, f"{where}.{name} must be true, false or null, got {row[name]!r}")
    for name in ("reason", "gap", "tiny", "load_class"):
        if row.get(name) is not None and not isinstance(row[name], str):
            raise DataFileError(path, f"{where}.{name} must be a string or null")
    if row.get("gap") is not None and row["gap"] not in GAPS:
        raise DataFileError(path, f"{where} ({row['model_type']}) has gap {row['gap']!r}; gaps are "
                                    f"{', '.join(GAPS)}")
    features = row.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) and f for f in features):
        raise DataFileError(path, f"{where}.features must be a list of names")
    group = group_name(row["group"])
    if group is None:
        raise DataFileError(path, f"{where} ({row['model_type']}) has unknown group {row['group']!r}; "
                                    f"groups are {', '.join(GROUPS)}")
    return CatalogEntry(**{**row, "group": group, "features": tuple(features)})


def load_catalog(path: Path | None = None) -> Catalog:
    """Read and validate the catalog; a malformed file raises :class:`DataFileError` naming file and problem."""
    path = CATALOG_PATH if path is None else Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise missing_file(path, "generate it with `hf-neuron matrix catalog --generate`") from None
    except json.JSONDecodeError as error:
        raise DataFileError(path, f"not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise DataFileError(path, "the top level must be an object")
    if document.get("schema") != SCHEMA_VERSION:
        raise DataFileError(path, f"schema must be {SCHEMA_VERSION}, got {document.get('schema')!r}")
    for key in (*_LIBRARIES, "generated"):
        if not isinstance(document.get(key), str):
            raise DataFileError(path, f"the header needs a string {key!r}")
    rows = document.get("architectures")
    if not isinstance(rows, list):
        raise DataFileError(path, "'architectures' must be a list")
    entries = [_entry(path, index, row) for index, row in enumerate(rows)]
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if entry.model_type in seen:
            raise DataFileError(path, f"duplicate model_type {entry.model_type!r} "
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


