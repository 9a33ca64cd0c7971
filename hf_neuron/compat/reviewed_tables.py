"""Files of reviewed per-architecture tables (``compat/tiny_overrides.toml``, ``compat/tiny_image_text.toml``): one
TOML table per ``model_type``, each with a ``reason``, an optional ``runs = false`` and with it an optional ``gap``
(the harness's gap that keeps the architecture from running, e.g. ``"inputs"``: the matrix then records its cases
that fail the same way on the CPU as untested); what else a table holds is its file's reader's.

:func:`load_tables` reads a file once per modification (a missing file is empty); :func:`check_table` checks what
every table shares and hands it back as a :class:`Reviewed`.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

from hf_neuron.compat.files import CompatFileError

__all__ = ["SHARED_KEYS", "Reviewed", "check_table", "load_tables"]

Entry = TypeVar("Entry")

#: The keys every reviewed table may hold; a file's reader adds its own.
SHARED_KEYS = frozenset({"reason", "runs", "gap"})


@dataclasses.dataclass(frozen=True)
class Reviewed:
    """What every reviewed table says: why, whether the architecture runs, and the harness's gap when it does not."""

    reason: str
    runs: bool = True
    gap: str | None = None


def check_table(path: Path, model_type: str, table: Any, keys: Collection[str]) -> Reviewed:
    """``table``'s shared part, after checking that it is a table with only :data:`SHARED_KEYS` and ``keys``, a
    non-empty reason, a boolean ``runs`` (default true) and a ``gap`` name only with ``runs = false``; raises
    :class:`CompatFileError` naming the file and the table."""
    if not isinstance(table, dict):
        raise CompatFileError(path, f"[{model_type}] must be a table, got {type(table).__name__}")
    allowed = SHARED_KEYS | set(keys)
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise CompatFileError(path, f"[{model_type}] has unknown keys {unknown}; allowed: {sorted(allowed)}")
    reason = table.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise CompatFileError(path, f"[{model_type}] needs a non-empty 'reason' string")
    runs = table.get("runs", True)
    if not isinstance(runs, bool):
        raise CompatFileError(path, f"[{model_type}] 'runs' must be true or false")
    gap = table.get("gap")
    if gap is not None and (not isinstance(gap, str) or runs):
        raise CompatFileError(path, f"[{model_type}] 'gap' is a name (e.g. \"inputs\"), given with runs = false")
    return Reviewed(reason.strip(), runs, gap)


@functools.lru_cache(maxsize=16)
def _read(path: Path, mtime_ns: int, parse: Callable[[Path, str, Any], Any]) -> dict[str, Any]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise CompatFileError(path, f"not valid TOML: {error}") from None
    return {model_type: parse(path, model_type, table) for model_type, table in sorted(document.items())}


def load_tables(path: Path, parse: Callable[[Path, str, Any], Entry]) -> dict[str, Entry]:
    """Every table of ``path`` by ``model_type``, each made an entry by ``parse(path, model_type, table)``; empty
    when the file does not exist."""
    if not path.exists():
        return {}
    return dict(_read(path, path.stat().st_mtime_ns, parse))
