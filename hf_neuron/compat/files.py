"""Where the reviewed data lives (``compat/`` in the checkout), and the error for a malformed file."""

from __future__ import annotations

from pathlib import Path

from hf_neuron.errors import InputError

__all__ = ["COMPAT_DIR", "NOT_A_CHECKOUT", "REPO_ROOT", "CompatFileError", "missing_file"]

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


class CompatFileError(InputError):
    """A reviewed data file in ``compat/`` is malformed; the message names the file and the problem."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def missing_file(path: Path, hint: str = "") -> CompatFileError:
    """The error for a data file that does not exist: when it is one of ``compat/``'s and there is no ``compat/``
    (a package install), it says that the file comes with a checkout; otherwise ``no such file`` and ``hint``."""
    if not COMPAT_DIR.is_dir() and path.is_relative_to(COMPAT_DIR):
        return CompatFileError(path, f"no such file: {NOT_A_CHECKOUT}")
    return CompatFileError(path, f"no such file: {hint}" if hint else "no such file")
