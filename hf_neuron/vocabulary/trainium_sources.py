"""``hf_neuron/device/trainium_sources.toml``: the torch-neuronx releases the ``trainium`` profile can predict, the one
it predicts, and the sources of its facts — the file's one reader, and the one check of a citation (no torch needed).
In the vocabulary because every layer cites it: the device's rules and operator list, ``compat/``'s known failures,
the matrix's profile, the records and the report.

Every fact the profile holds cites this file: a rule of :mod:`hf_neuron.device.trainium_rules` and a check of the
compile contract (in Python), the operator list ``trainium_ops.toml`` (its ``[provenance]``) and an entry of
``compat/known_failures.toml`` each carry a :class:`Citation` — the ids of their sources, the releases they hold for,
and what no released source confirms. :meth:`TrainiumSources.check` refuses a citation without a source or a release,
or with an id the file does not define; the readers of those files call it. ``docs/trainium-profile.md`` is generated
from the file and the citations (``scripts/update_docs.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from hf_neuron.vocabulary.datafiles import DataFileError, toml_document

__all__ = [
    "RELEASED_KINDS", "SOURCES_FILE", "Citation", "CitationError", "Release", "Source", "SourceKind",
    "TrainiumSources", "load", "predicted_release",
]

SOURCES_FILE = Path(__file__).parents[1] / "device" / "trainium_sources.toml"

SourceKind = Literal["released-page", "release-note", "compiler-page", "pre-release-tree", "study-notes",
                     "upstream-code"]
#: The kinds that speak for a released backend: a fact no source of these kinds states is unconfirmed there.
RELEASED_KINDS: frozenset[SourceKind] = frozenset({"released-page", "release-note", "compiler-page"})
Dated = Literal["modified", "released", "read"]

_ID = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_VERSION = re.compile(r"^\d+(\.\d+)+$")
_RELEASE_KEYS = ("id", "torch_neuronx", "neuron_sdk", "torch", "date", "what")
_SOURCE_KEYS = ("id", "kind", "title", "url", "date", "dated", "read")


class CitationError(ValueError):
    """A citation names no source or no release, or one the sources file does not define."""


@dataclasses.dataclass(frozen=True)
class Citation:
    """Where a fact comes from (source ids), the releases it holds for (release ids), and, when no released source
    states it for those releases, what is unconfirmed (empty when a released source does)."""

    sources: tuple[str, ...]
    releases: tuple[str, ...]
    unconfirmed: str = ""

    def __post_init__(self) -> None:
        if not self.sources:
            raise CitationError("a citation needs at least one source")
        if not self.releases:
            raise CitationError("a citation needs at least one release it holds for")

    def holds_for(self, release: str) -> bool:
        """Whether the fact holds for ``release``."""
        return release in self.releases


@dataclasses.dataclass(frozen=True)
class Release:
    """One torch-neuronx release (or the pre-release tree)."""

    id: str
    torch_neuronx: tuple[str, ...]
    neuron_sdk: str
    torch: str
    date: str
    what: str

    @property
    def label(self) -> str:
        """How the report, ``doctor`` and the docs name it: ``torch-neuronx 2.13.3.1 / 2.14.3.1 (Neuron 2.34.0,
        2026-11-30)``."""
        versions = " / ".join(self.torch_neuronx)
        if self.neuron_sdk == "none":
            return f"the pre-release tree (torch-neuronx {versions}, {self.date})"
        return f"torch-neuronx {versions} (Neuron {self.neuron_sdk}, {self.date})"


@dataclasses.dataclass(frozen=True)
class Source:
    """One source: a released page, a release note, a compiler page, the pre-release tree, our study notes, or an
    upstream library's code; its date and what that date is, and what of it could be read from here."""

    id: str
    kind: SourceKind
    title: str
    url: str
    date: str
    dated: Dated
    read: str

    @property
    def released(self) -> bool:
        """Whether it speaks for a released backend."""
        return self.kind in RELEASED_KINDS


@dataclasses.dataclass(frozen=True)
class TrainiumSources:
    """The file's content."""

    predicts: str
    releases: Mapping[str, Release]
    sources: Mapping[str, Source]

    @property
    def predicted(self) -> Release:
        """The release the ``trainium`` profile predicts."""
        return self.releases[self.predicts]

    def problem(self, citation: Citation) -> str | None:
        """What is wrong with ``citation`` (an unknown source or release id), or None."""
        if unknown := [name for name in citation.sources if name not in self.sources]:
            return f"cites unknown source(s) {unknown}: define them in {SOURCES_FILE.name} ({', '.join(self.sources)})"
        if unknown := [name for name in citation.releases if name not in self.releases]:
            return f"names unknown release(s) {unknown}: one of {', '.join(self.releases)}"
        return None

    def check(self, citation: Citation, where: str) -> Citation:
        """``citation``, after refusing it (:class:`CitationError` naming ``where``) when it is wrong."""
        if problem := self.problem(citation):
            raise CitationError(f"{where}: {problem}")
        return citation

    def confirmed(self, citation: Citation) -> bool:
        """Whether a released source states the fact (and nothing is said to be unconfirmed)."""
        return not citation.unconfirmed and any(self.sources[name].released for name in citation.sources)


def _strings(path: Path, where: str, key: str, value: Any, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not value.strip() and not allow_empty):
        raise DataFileError(path, "must be a non-empty string", table=where, key=key)
    return value


def _keys(path: Path, where: str, raw: Any, keys: Iterable[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise DataFileError(path, "is not a table", table=where)
    keys = tuple(keys)
    if unknown := sorted(set(raw) - set(keys)):
        raise DataFileError(path, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(keys)}", table=where)
    if missing := [key for key in keys if key not in raw]:
        raise DataFileError(path, f"missing {', '.join(missing)}", table=where)
    return raw


def _id(path: Path, where: str, raw: dict[str, Any], seen: Iterable[str]) -> str:
    name = _strings(path, where, "id", raw["id"])
    if not _ID.match(name):
        raise DataFileError(path, f"{name!r} is not an id (lower-case letters, digits, '.', '-')", table=where,
                            key="id")
    if name in seen:
        raise DataFileError(path, f"{name!r} is defined twice", table=where, key="id")
    return name


def _date(path: Path, where: str, raw: dict[str, Any]) -> str:
    date = _strings(path, where, "date", raw["date"])
    if not _DATE.match(date):
        raise DataFileError(path, f"{date!r} is not a date (YYYY-MM-DD)", table=where, key="date")
    return date


def parse(path: Path, text: str) -> TrainiumSources:
    """The content of ``text`` (the file at ``path``), after checking every rule its header states."""
    document = toml_document(path, text, ("predicts", "release", "source"))
    releases: dict[str, Release] = {}
    for index, raw in enumerate(document.get("release", [])):
        where = f"[[release]] #{index + 1}"
        raw = _keys(path, where, raw, _RELEASE_KEYS)
        name = _id(path, where, raw, releases)
        versions = raw["torch_neuronx"]
        if (not isinstance(versions, list) or not versions
                or not all(isinstance(v, str) and _VERSION.match(v) for v in versions)):
            raise DataFileError(path, "must be a non-empty list of versions (2.14.3.1)", table=where,
                                key="torch_neuronx")
        releases[name] = Release(name, tuple(versions), _strings(path, where, "neuron_sdk", raw["neuron_sdk"]),
                                 _strings(path, where, "torch", raw["torch"]), _date(path, where, raw),
                                 _strings(path, where, "what", raw["what"]))
    sources: dict[str, Source] = {}
    for index, raw in enumerate(document.get("source", [])):
        where = f"[[source]] #{index + 1}"
        raw = _keys(path, where, raw, _SOURCE_KEYS)
        name = _id(path, where, raw, sources)
        kind, dated = raw["kind"], raw["dated"]
        if kind not in get_args(SourceKind):
            raise DataFileError(path, f"{kind!r} is not one of {', '.join(get_args(SourceKind))}", table=where,
                                key="kind")
        if dated not in get_args(Dated):
            raise DataFileError(path, f"{dated!r} is not one of {', '.join(get_args(Dated))}", table=where,
                                key="dated")
        url = _strings(path, where, "url", raw["url"], allow_empty=kind == "study-notes")
        if url and not url.startswith("https://"):
            raise DataFileError(path, "must be a link (https://...)", table=where, key="url")
        sources[name] = Source(name, kind, _strings(path, where, "title", raw["title"]), url,
                               _date(path, where, raw), dated, _strings(path, where, "read", raw["read"]))
    predicts = document.get("predicts")
    if predicts not in releases:
        raise DataFileError(path, f"predicts = {predicts!r} must name a release ({', '.join(releases)})")
    return TrainiumSources(predicts, releases, sources)


@functools.lru_cache(maxsize=4)
def _load(path: Path, mtime_ns: int) -> TrainiumSources:
    return parse(path, path.read_text(encoding="utf-8"))


def load(path: Path = SOURCES_FILE) -> TrainiumSources:
    """The checked content of ``path`` (read once per modification)."""
    return _load(path, path.stat().st_mtime_ns)


def predicted_release() -> Release:
    """The release the ``trainium`` profile's verdicts predict."""
    return load().predicted
