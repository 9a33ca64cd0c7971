"""Where the reviewed data lives (``compat/`` in the checkout), and the error for a malformed file."""

from __future__ import annotations

from pathlib import Path

from hf_neuron.errors import InputError

__all__ = ["COMPAT_DIR", "REPO_ROOT", "CompatFileError"]

#: The checkout that holds ``hf_neuron/``, ``compat/`` and ``matrix/``.
REPO_ROOT = Path(__file__).resolve().parents[2]
#: Reviewed data files: catalog, overrides, ranking, slices, known failures, baselines. Each file's path is defined by
#: the module of this package that reads it.
COMPAT_DIR = REPO_ROOT / "compat"


class CompatFileError(InputError):
    """A reviewed data file in ``compat/`` is malformed; the message names the file and the problem."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem
