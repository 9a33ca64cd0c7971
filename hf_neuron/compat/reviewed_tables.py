"""Files of reviewed per-architecture tables (``compat/tiny_overrides.toml``, ``compat/tiny_multimodal.toml``): one
TOML table per ``model_type``, each with a ``reason`` and an optional ``runs = false``; what else a table holds is
its file's reader's.

:func:`load_tables` reads a file once per modification (a missing file is empty); :func:`check_table` checks what
every table shares and hands back its reason and whether the architecture runs.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

from hf_neuron.compat.files import CompatFileError

__all__ = ["check_table", "load_tables"]

Entry = TypeVar("Entry")


def check_table(path: Path, model_type: str, table: Any, keys: Collection[str]) -> tuple[str, bool]:
    """``table``'s ``(reason, runs)``, after checking that it is a table with only ``keys``, a non-empty reason and
    a boolean ``runs`` (default true); raises :class:`CompatFileError` naming the file and the table."""
    if not isinstance(table, dict):
        raise CompatFileError(path, f"[{model_type}] must be a table, got {type(table).__name__}")
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise CompatFileError(path, f"[{model_type}] has unknown keys {unknown}; allowed: {sorted(keys)}")
    reason = table.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise CompatFileError(path, f"[{model_type}] needs a non-empty 'reason' string")
    runs = table.get("runs", True)
    if not isinstance(runs, bool):
        raise CompatFileError(path, f"[{model_type}] 'runs' must be true or false")
    return reason.strip(), runs


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
