"""Files of reviewed per-architecture tables (``compat/tiny_overrides.toml``, ``compat/tiny_image_text.toml``): one
TOML table per ``model_type``, each with a ``reason``, an optional ``runs = false`` and with it an optional ``gap``
(the harness's gap that keeps the architecture from running, one of :data:`~hf_neuron.vocabulary.gaps.GAPS`, e.g.
``"inputs"``: the matrix then records its cases that fail the same way on the CPU as untested); what else a table holds
is its file's reader's. The tables are sorted by ``model_type``, as the files' headers say.

:func:`load_tables` reads a file once per modification (a missing file is empty) and checks that its tables are
sorted; :func:`check_table` checks what every table shares and hands it back as a :class:`Reviewed`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

from hf_neuron.compat.files import read_toml
from hf_neuron.vocabulary.datafiles import DataFileError, check_sorted
from hf_neuron.vocabulary.gaps import GAPS, Gap

__all__ = ["SHARED_KEYS", "Reviewed", "check_table", "load_tables"]

Entry = TypeVar("Entry")

#: The keys every reviewed table may hold; a file's reader adds its own.
SHARED_KEYS = frozenset({"reason", "runs", "gap"})


@dataclasses.dataclass(frozen=True)
class Reviewed:
    """What every reviewed table says: why, whether the architecture runs, and the harness's gap when it does not."""

    reason: str
    runs: bool = True
    gap: Gap | None = None


def check_table(path: Path, model_type: str, table: Any, keys: Collection[str]) -> Reviewed:
    """``table``'s shared part, after checking that it is a table with only :data:`SHARED_KEYS` and ``keys``, a
    non-empty reason, a boolean ``runs`` (default true) and a ``gap`` name only with ``runs = false``; raises
    :class:`DataFileError` naming the file and the table."""
    if not isinstance(table, dict):
        raise DataFileError(path, f"must be a table, got {type(table).__name__}", table=model_type)
    allowed = SHARED_KEYS | set(keys)
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise DataFileError(path, f"unknown keys {unknown}; allowed: {sorted(allowed)}", table=model_type)
    reason = table.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise DataFileError(path, "needs a non-empty string: why", table=model_type, key="reason")
    runs = table.get("runs", True)
    if not isinstance(runs, bool):
        raise DataFileError(path, "must be true or false", table=model_type, key="runs")
    gap = table.get("gap")
    if gap is not None and runs:
        raise DataFileError(path, "goes with runs = false", table=model_type, key="gap")
    if gap is not None and gap not in GAPS:
        raise DataFileError(path, f"{gap!r} is not a gap; gaps are {', '.join(GAPS)}", table=model_type, key="gap")
    return Reviewed(reason.strip(), runs, gap)


@functools.lru_cache(maxsize=16)
def _read(path: Path, mtime_ns: int, parse: Callable[[Path, str, Any], Any]) -> dict[str, Any]:
    document = read_toml(path)
    check_sorted(path, document, "the tables (one per model_type)")
    return {model_type: parse(path, model_type, table) for model_type, table in document.items()}


def load_tables(path: Path, parse: Callable[[Path, str, Any], Entry]) -> dict[str, Entry]:
    """Every table of ``path`` by ``model_type``, each made an entry by ``parse(path, model_type, table)``; empty
    when the file does not exist."""
    if not path.exists():
        return {}
    return dict(_read(path, path.stat().st_mtime_ns, parse))
