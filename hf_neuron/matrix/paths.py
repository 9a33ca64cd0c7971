"""Where the matrix finds the parts that live in the source tree rather than in the package."""

from __future__ import annotations

from hf_neuron.compat_files import COMPAT_DIR, REPO_ROOT

__all__ = ["COMPAT_DIR", "KNOWN_FAILURES_FILE", "REPO_ROOT", "SLICES_FILE", "SUITE_DIR"]

#: The matrix as a pytest suite.
SUITE_DIR = REPO_ROOT / "matrix"
KNOWN_FAILURES_FILE = COMPAT_DIR / "known_failures.toml"
SLICES_FILE = COMPAT_DIR / "slices.toml"
