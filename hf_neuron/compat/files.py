"""Where the reviewed data lives (``compat/`` in the checkout), the one error for a malformed file, and the one TOML
loader every reader of a ``compat/*.toml`` file uses.

A :class:`CompatFileError` names the file and, where it can, the line, the table and the key that are wrong, and what
to do; :func:`read_toml` reads a file as UTF-8 TOML and turns a syntax error into one (with its line and column).
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hf_neuron.errors import InputError

__all__ = ["COMPAT_DIR", "NOT_A_CHECKOUT", "REPO_ROOT", "CompatFileError", "check_sorted", "missing_file",
           "read_toml"]

#: The checkout that holds ``hf_neuron/``, ``compat/`` and ``matrix/``.
REPO_ROOT = Path(__file__).resolve().parents[2]
#: Reviewed data files: catalog, overrides, ranking, slices, known failures, baselines. Each file's path is defined by
#: the module of this package that reads it.
COMPAT_DIR = REPO_ROOT / "compat"

#: Why a reviewed data file is missing when hf-neuron was installed as a package (a wheel or sdist in
#: site-packages): ``compat/`` and the matrix suite come with a clone of the repository only.
NOT_A_CHECKOUT = (
    "hf-neuron is installed as a package, which holds the shim and the reference device but not the checkout's "
    "compat/ and matrix/: run the matrix and build reports from a clone of the hf-neuron repository "
    "(./scripts/setup.sh there), or name the data files explicitly"
)


def _header_line(path: Path, table: str) -> int | None:
    """The line of ``[table]`` (or of the ``#N``-th ``[[array]]`` for ``table = "array #N"``) in ``path``."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    array = re.fullmatch(r"\[\[(.+)\]\] #(\d+)", table)
    if array:
        name, wanted = array[1], int(array[2])
        found = [number for number, line in enumerate(lines, start=1) if line.strip() == f"[[{name}]]"]
        return found[wanted - 1] if len(found) >= wanted else None
    header = re.compile(r"\[\s*" + r"\s*\.\s*".join(re.escape(part) for part in table.split(".")) + r"\s*\]")
    return next((number for number, line in enumerate(lines, start=1) if header.fullmatch(line.strip())), None)


class CompatFileError(InputError):
    """A reviewed data file in ``compat/`` is malformed; the message names the file, the line, the table and the key
    where it can, and the problem.

    ``table`` is written as the file writes it (``mistral3``, ``backbones.FluxTransformer2DModel``, or
    ``[[known_failure]] #3`` for the third table of an array); the line is looked up from it when not given.
    """

    def __init__(self, path: Path, problem: str, *, table: str | None = None, key: str | None = None,
                 line: int | None = None) -> None:
        if line is None and table is not None:
            line = _header_line(path, table)
        where = f"{path}:{line}" if line is not None else str(path)
        if table is not None:
            where += f": {table if table.startswith('[[') else f'[{table}]'}"
        if key is not None:
            where += f" {key}"
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.problem = problem
        self.table = table
        self.key = key
        self.line = line


def missing_file(path: Path, hint: str = "") -> CompatFileError:
    """The error for a data file that does not exist: when it is one of ``compat/``'s and there is no ``compat/``
    (a package install), it says that the file comes with a checkout; otherwise ``no such file`` and ``hint``."""
    if not COMPAT_DIR.is_dir() and path.is_relative_to(COMPAT_DIR):
        return CompatFileError(path, f"no such file: {NOT_A_CHECKOUT}")
    return CompatFileError(path, f"no such file: {hint}" if hint else "no such file")


_TOML_POSITION = re.compile(r"\(at line (\d+), column \d+\)")


def read_toml(path: Path, *, required: bool = True, hint: str = "") -> dict[str, Any]:
    """The TOML document of ``path`` (UTF-8). A missing file raises :func:`missing_file`'s error, or is an empty
    document when not ``required``; a syntax error raises :class:`CompatFileError` with its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not required:
            return {}
        raise missing_file(path, hint) from None
    except UnicodeDecodeError as error:
        raise CompatFileError(path, f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = _TOML_POSITION.search(str(error))
        raise CompatFileError(path, f"not valid TOML: {error}", line=int(found[1]) if found else None) from None


def check_sorted(path: Path, names: Iterable[str], what: str) -> None:
    """Raise :class:`CompatFileError` unless ``names`` (the file's tables, in file order) are sorted, as the file's
    header says they must be; the error names the first one out of place."""
    seen = list(names)
    for before, name in itertools.pairwise(seen):
        if name < before:
            raise CompatFileError(path, f"{what} must be sorted: {name!r} comes after {before!r}; move it up",
                                  table=name)
