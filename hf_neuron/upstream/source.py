"""A transformers source tree to take tests from: checked, fetched, and laid out for a run.

``--source DIR`` is a transformers checkout, or any tree with its layout:
``tests/models/<arch>/test_modeling_<arch>.py``, the common test modules they import, ``conftest.py`` at the root.
``--fetch`` clones the tag matching the installed transformers into a cache first. Either way the tests run
against the *installed* transformers, the one hf-neuron patches: :func:`prepare_worktree` builds a working
directory of links to the tree's top-level entries, with ``src/transformers`` pointing at the installed package (as
an editable install would; the tests import it from there), and the device spec file beside them (transformers
imports it by a path relative to the working directory). Nothing is written into the source tree.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from hf_neuron.errors import InputError

__all__ = [
    "MODEL_TESTS",
    "TRANSFORMERS_GIT",
    "available_archs",
    "fetch",
    "has_tests",
    "installed_package",
    "model_test_files",
    "prepare_worktree",
]

TRANSFORMERS_GIT = "https://github.com/huggingface/transformers"
#: Where a source tree keeps each architecture's tests.
MODEL_TESTS = Path("tests") / "models"
_PACKAGE = "transformers"


def _folder(arch: str) -> str:
    """The test folder of an architecture: a model type's ``-`` is ``_`` there (``xlm-roberta`` -> ``xlm_roberta``)."""
    return arch.replace("-", "_")


def _test_file(source: Path, arch: str) -> Path:
    folder = _folder(arch)
    return source / MODEL_TESTS / folder / f"test_modeling_{folder}.py"


def has_tests(source: Path, arch: str) -> bool:
    """True when ``source`` holds the model tests of ``arch``."""
    return _test_file(source, arch).is_file()


def available_archs(source: Path) -> list[str]:
    """The architectures whose model tests ``source`` holds."""
    models = source / MODEL_TESTS
    folders = sorted(path.name for path in models.iterdir() if path.is_dir()) if models.is_dir() else []
    return [folder for folder in folders if has_tests(source, folder)]


def model_test_files(source: Path, archs: Sequence[str]) -> dict[str, Path]:
    """Each architecture's model test file, relative to ``source``; :class:`InputError` when ``source`` is not a
    source tree or lacks an architecture's tests (the message lists what it has)."""
    if not source.is_dir():
        raise InputError(f"--source {source}: no such directory; pass a transformers checkout (or use --fetch)")
    if not (source / MODEL_TESTS).is_dir():
        raise InputError(f"--source {source}: no {MODEL_TESTS}/ folder: is it a transformers checkout? "
                         "(it needs tests/models/<arch>/test_modeling_<arch>.py and the common test modules)")
    if not archs:
        raise InputError("--arch: name at least one architecture")
    missing = [arch for arch in archs if not has_tests(source, arch)]
    if missing:
        have = ", ".join(available_archs(source)) or "none"
        raise InputError(f"--arch {' '.join(missing)}: no {MODEL_TESTS}/<arch>/test_modeling_<arch>.py in "
                         f"{source} (it has tests for: {have})")
    return {arch: _test_file(source, arch).relative_to(source) for arch in archs}


def installed_package() -> Path:
    """The installed transformers package directory (found without importing it)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InputError("transformers is not installed: pip install 'hf-neuron[upstream]'")
    return Path(next(iter(spec.submodule_search_locations)))


def prepare_worktree(source: Path, directory: Path, package: Path | None = None) -> Path:
    """Lay out ``directory`` to run ``source``'s tests against the installed transformers; return it."""
    directory.mkdir(parents=True, exist_ok=True)
    for entry in sorted(source.iterdir()):
        if entry.name not in ("src", ".git"):
            (directory / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
    (directory / "src").mkdir()
    (directory / "src" / _PACKAGE).symlink_to(package or installed_package(), target_is_directory=True)
    return directory


def fetch(cache: Path, *, url: str | None = None, version: str | None = None) -> Path:
    """The source tree of the installed transformers version's tag (``v<version>``) in ``cache``, cloned there
    first if it is not yet; :class:`InputError` when it cannot be cloned (no network, no such tag, no git)."""
    url = url or TRANSFORMERS_GIT
    version = version or importlib.metadata.version(_PACKAGE)
    tag = f"v{version}"
    tree = cache / f"transformers-{tag}"
    if (tree / MODEL_TESTS).is_dir():
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    staging = cache / f".transformers-{tag}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    command = ["git", "clone", "--quiet", "--depth", "1", "--branch", tag, url, str(staging)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"--fetch: cannot run git to clone transformers {tag}: {exc}; pass --source DIR "
                         "(a transformers checkout of that tag) instead") from exc
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise InputError(f"--fetch: could not clone transformers {tag} from {url}: {reason}. Without network "
                         f"access, pass --source DIR (a transformers checkout of tag {tag}) instead")
    staging.rename(tree)
    return tree
