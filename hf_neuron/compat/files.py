"""Where the reviewed data lives (``compat/`` in the checkout), and the one TOML loader every reader of a
``compat/*.toml`` file uses: :func:`read_toml` reads a file as UTF-8 TOML and turns a syntax error into a
:class:`~hf_neuron.vocabulary.datafiles.DataFileError` with its line and column.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from hf_neuron.vocabulary.datafiles import DataFileError

__all__ = ["COMPAT_DIR", "NOT_A_CHECKOUT", "REPO_ROOT", "missing_file", "read_toml"]

#: The checkout that holds ``hf_neuron/``, ``compat/`` and ``matrix/``.
REPO_ROOT = Path(__file__).resolve().parents[2]
#: Reviewed data files: catalog, overrides, ranking, slices, known failures, baselines. Each file's path is defined by
#: the module of this package that reads it.
COMPAT_DIR = REPO_ROOT / "compat"

#: Why a reviewed data file is missing when hf-neuron was installed as a package (a wheel or sdist in
#: site-packages): ``compat/`` and the matrix suite come with a clone of the repository only.
NOT_A_CHECKOUT = (
    "hf-neuron is installed as a package, which holds the shim and the reference device but not the checkout's "
    "compat/ and matrix/: run the matrix and `hf-neuron check`, and build reports, from a clone of the hf-neuron "
    "repository (./scripts/setup.sh there), or name the data files explicitly"
)


def missing_file(path: Path, hint: str = "") -> DataFileError:
    """The error for a data file that does not exist: when it is one of ``compat/``'s and there is no ``compat/``
    (a package install), it says that the file comes with a checkout; otherwise ``no such file`` and ``hint``."""
    if not COMPAT_DIR.is_dir() and path.is_relative_to(COMPAT_DIR):
        return DataFileError(path, f"no such file: {NOT_A_CHECKOUT}")
    return DataFileError(path, f"no such file: {hint}" if hint else "no such file")


_TOML_POSITION = re.compile(r"\(at line (\d+), column \d+\)")


def read_toml(path: Path, *, required: bool = True, hint: str = "") -> dict[str, Any]:
    """The TOML document of ``path`` (UTF-8). A missing file raises :func:`missing_file`'s error, or is an empty
    document when not ``required``; a syntax error raises :class:`DataFileError` with its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not required:
            return {}
        raise missing_file(path, hint) from None
    except UnicodeDecodeError as error:
        raise DataFileError(path, f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = _TOML_POSITION.search(str(error))
        raise DataFileError(path, f"not valid TOML: {error}", line=int(found[1]) if found else None) from None
