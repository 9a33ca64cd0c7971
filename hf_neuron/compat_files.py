"""Where hf-neuron's reviewed data lives (``compat/`` in the checkout), and the error for a malformed file."""

from __future__ import annotations

from pathlib import Path

__all__ = ["COMPAT_DIR", "CompatFileError", "REPO_ROOT"]

#: The checkout that holds ``hf_neuron/``, ``compat/`` and ``matrix/``.
REPO_ROOT = Path(__file__).resolve().parent.parent
#: Reviewed data files: catalog, overrides, ranking, slices, known failures, baselines.
COMPAT_DIR = REPO_ROOT / "compat"


class CompatFileError(ValueError):
    """A reviewed data file in ``compat/`` is malformed; the message names the file and the problem."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem
