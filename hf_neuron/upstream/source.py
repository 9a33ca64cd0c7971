"""Where a library's tests come from: a source tree, checked, fetched, and laid out for a run.

A tree comes from one of four places, and says so in its **provenance** (carried by every record of the run, in
``env["upstream_source"]``):

==============  =====================================================================================================
``directory``   ``--source DIR``: a checkout, or any tree with the library's test layout, used in place. Its
                ``SOURCE.txt`` (where a kept copy says where it came from) and its git commit, when it has them, are
                part of the provenance.
``git``         ``--source REPO``, a git repository without a test tree of its own (a bare mirror), or any
                repository with ``--revision REV``: the tests of that commit are exported (``git archive``) into the
                cache, named for the commit.
``sdist``       ``--fetch`` for a library whose source distribution carries its tests (PEFT, accelerate):
                ``pip download --no-deps --no-binary :all: <package>==<installed version>``, unpacked in the cache.
``git-tag``     ``--fetch`` for the others (transformers, diffusers, TRL): ``git clone --depth 1 --branch v<installed
                version>`` into the cache. Needs network access to the forge.
==============  =====================================================================================================

A fetched or exported tree is kept in the cache with its provenance (``hf-neuron-source.json``) and reused. Either
way the tests run against the *installed* library, the one hf-neuron patches (or, for a tree written for another
release than the installed one, that release installed beside it: :func:`install_beside`, ``--against VERSION``):
:func:`prepare_worktree` builds a working directory of links to the tree's top-level entries (never its ``src/`` or
``.git``), with extra links where a suite needs them (transformers' tests import ``src/transformers``) and a package
``__init__.py`` where a source distribution left it out (PEFT's test modules import each other relatively). Nothing
is written into the source tree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from hf_neuron.errors import InputError

__all__ = [
    "MODEL_TESTS",
    "PROVENANCE_FILE",
    "SourceTree",
    "available_archs",
    "export_git",
    "fetch_git_tag",
    "fetch_sdist",
    "from_directory",
    "has_tests",
    "install_beside",
    "installed_in",
    "installed_package",
    "installed_version",
    "is_git_repository",
    "model_test_files",
    "prepare_worktree",
]

#: Where a transformers tree keeps each architecture's tests.
MODEL_TESTS = Path("tests") / "models"
#: The provenance of a tree the command fetched or exported, kept in the tree.
PROVENANCE_FILE = "hf-neuron-source.json"
#: How much of a kept copy's ``SOURCE.txt`` the provenance quotes.
_SOURCE_TXT_CHARS = 600
_GIT_TIMEOUT_S = 1800


@dataclasses.dataclass(frozen=True)
class SourceTree:
    """A tree of a library's tests, and where it came from (``kind`` and the fields of that kind)."""

    root: Path
    provenance: Mapping[str, str]

    def describe(self) -> str:
        """One line for the progress output."""
        details = ", ".join(f"{key} {value}" for key, value in self.provenance.items()
                            if key not in ("kind", "source_txt"))
        return f"{self.provenance['kind']}: {details}"


def installed_version(distribution: str) -> str:
    """The installed version of ``distribution``; :class:`InputError` when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise InputError(f"{distribution} is not installed: its tests run against the installed package "
                         f"(pip install {distribution})") from exc


def installed_package(package: str = "transformers") -> Path:
    """The installed package directory of import name ``package`` (found without importing it)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"{package} is not installed: pip install 'hf-neuron[upstream]'")
    return Path(next(iter(spec.submodule_search_locations)))


def _git(*args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def is_git_repository(path: Path) -> bool:
    """True when ``path`` is a git repository of its own: a checkout's top or a bare repository."""
    try:
        done = _git("-C", str(path), "rev-parse", "--absolute-git-dir")
    except (OSError, subprocess.TimeoutExpired):
        return False
    git_dir = Path(done.stdout.strip()).resolve()
    return done.returncode == 0 and git_dir in (path.resolve(), (path / ".git").resolve())


def _kept(tree: Path) -> dict[str, str] | None:
    try:
        provenance = json.loads((tree / PROVENANCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return provenance if isinstance(provenance, dict) else None


def _publish(staging: Path, tree: Path, provenance: Mapping[str, str]) -> SourceTree:
    (staging / PROVENANCE_FILE).write_text(json.dumps(dict(provenance), indent=1) + "\n", encoding="utf-8")
    try:
        staging.rename(tree)
    except OSError:  # a concurrent run published the same tree first
        shutil.rmtree(staging, ignore_errors=True)
    return SourceTree(tree, _kept(tree) or dict(provenance))


def from_directory(path: Path, *, what: str, needs: str) -> SourceTree:
    """``--source DIR`` used in place; ``needs`` (a relative path) must exist in it. ``what`` names the library."""
    if not path.is_dir():
        raise InputError(f"--source {path}: no such directory; pass a {what} checkout (or use --fetch)")
    if not (path / needs).exists():
        raise InputError(f"--source {path}: no {needs} in it: is it a {what} checkout?")
    provenance = {"kind": "directory", "path": str(path.resolve())}
    if (source_txt := path / "SOURCE.txt").is_file():
        provenance["source_txt"] = source_txt.read_text(encoding="utf-8", errors="replace")[:_SOURCE_TXT_CHARS]
    if (path / ".git").exists():
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            done = _git("-C", str(path), "rev-parse", "HEAD")
            if done.returncode == 0:
                provenance["commit"] = done.stdout.strip()
    return SourceTree(path, provenance)


def export_git(repository: Path, revision: str, cache: Path, *, name: str, paths: Sequence[str],
               needs: str) -> SourceTree:
    """The ``paths`` (those that exist) of ``repository`` at ``revision``, exported into ``cache`` once."""
    try:
        done = _git("-C", str(repository), "rev-parse", "--verify", f"{revision}^{{commit}}")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"--source {repository}: cannot run git: {exc}") from exc
    if done.returncode != 0:
        raise InputError(f"--source {repository}: no commit {revision!r} in that git repository "
                         f"({(done.stderr.strip().splitlines() or ['git failed'])[-1]})")
    commit = done.stdout.strip()
    tree = cache / f"{name}-{commit[:12]}"
    if (kept := _kept(tree)) is not None:
        return SourceTree(tree, kept)
    def has(path: str) -> bool:
        return _git("-C", str(repository), "cat-file", "-e", f"{commit}:{path}").returncode == 0

    present = [path for path in paths if has(path)]
    if not has(needs):
        raise InputError(f"--source {repository}: commit {commit[:12]} has no {needs}")
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{tree.name}.", dir=cache))
    archive = staging / "export.tar"
    done = _git("-C", str(repository), "archive", "--format=tar", "-o", str(archive), commit, *present,
                timeout=_GIT_TIMEOUT_S)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise InputError(f"--source {repository}: git archive failed: {done.stderr.strip()}")
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    archive.unlink()
    info = _git("-C", str(repository), "log", "-1", "--format=%cI%n%s", commit).stdout.splitlines()
    remote = _git("-C", str(repository), "config", "--get", "remote.origin.url").stdout.strip()
    described = _git("-C", str(repository), "describe", "--tags", "--always", commit).stdout.strip()
    provenance = {"kind": "git", "repository": remote or str(repository.resolve()), "commit": commit,
                  "committed": info[0] if info else "", "describe": described, "subject": info[1] if len(info) > 1
                  else "", "paths": " ".join(present)}
    return _publish(staging, tree, provenance)


def fetch_git_tag(url: str, tag: str, cache: Path, *, name: str, needs: str) -> SourceTree:
    """The tree of ``tag`` of the repository at ``url`` in ``cache``, cloned there first if it is not yet;
    :class:`InputError` when it cannot be cloned (no network, no such tag, no git)."""
    tree = cache / f"{name}-{tag}"
    if (tree / needs).exists():
        return SourceTree(tree, _kept(tree) or {"kind": "git-tag", "repository": url, "tag": tag})
    cache.mkdir(parents=True, exist_ok=True)
    staging = cache / f".{name}-{tag}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    command = ["clone", "--quiet", "--depth", "1", "--branch", tag, url, str(staging)]
    try:
        done = _git(*command, timeout=_GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"--fetch: cannot run git to clone {name} {tag}: {exc}; pass --source DIR "
                         "(a checkout of that tag) instead") from exc
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        reason = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise InputError(f"--fetch: could not clone {name} {tag} from {url}: {reason}. Without network "
                         f"access, pass --source DIR (a {name} checkout of tag {tag}, or a git repository that "
                         "has it, with --revision) instead")
    commit = _git("-C", str(staging), "rev-parse", "HEAD").stdout.strip()
    return _publish(staging, tree, {"kind": "git-tag", "repository": url, "tag": tag, "commit": commit})


def fetch_sdist(package: str, version: str, cache: Path, *, needs: str) -> SourceTree:
    """The unpacked source distribution of ``package==version`` in ``cache``, downloaded with pip first if it is not
    yet; :class:`InputError` when pip cannot get it or it holds no ``needs``."""
    tree = cache / f"{package}-{version}"
    if (tree / needs).exists() and (kept := _kept(tree)) is not None:
        return SourceTree(tree, kept)
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{tree.name}.", dir=cache))
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
               "--dest", str(staging), f"{package}=={version}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise InputError(f"--fetch: cannot run pip to download the {package} {version} sdist: {exc}") from exc
    archives = sorted(staging.glob("*.tar.gz"))
    if done.returncode != 0 or len(archives) != 1:
        shutil.rmtree(staging, ignore_errors=True)
        reason = (done.stderr.strip().splitlines() or ["no archive"])[-1]
        raise InputError(f"--fetch: pip could not download the {package} {version} source distribution: {reason}. "
                         f"Without access to the package index, pass --source DIR (an unpacked {package} {version} "
                         "sdist or a checkout of that tag) instead")
    archive = archives[0]
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    unpacked = [path for path in staging.iterdir() if path.is_dir()]
    if len(unpacked) != 1 or not (unpacked[0] / needs).exists():
        shutil.rmtree(staging, ignore_errors=True)
        raise InputError(f"--fetch: the {package} {version} source distribution ({archive.name}) holds no {needs}: "
                         "pass --source DIR (a checkout of that tag) instead")
    provenance = {"kind": "sdist", "package": package, "version": version, "archive": archive.name,
                  "sha256": digest}
    inner = unpacked[0]
    archive.unlink()
    (inner / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1) + "\n", encoding="utf-8")
    with contextlib.suppress(OSError):  # published by a concurrent run
        inner.rename(tree)
    shutil.rmtree(staging, ignore_errors=True)
    return SourceTree(tree, _kept(tree) or provenance)


def prepare_worktree(source: Path, directory: Path, *, links: Mapping[str, Path] | None = None,
                     packages: Sequence[str] = ()) -> Path:
    """Lay out ``directory`` to run ``source``'s tests against the installed library; return it.

    Every top-level entry of ``source`` but ``src`` and ``.git`` is linked; ``links`` adds more (a relative path ->
    its target); each folder of ``packages`` (relative) is rebuilt of links to its entries, with an empty
    ``__init__.py`` when the source has none."""
    directory.mkdir(parents=True, exist_ok=True)
    rebuilt = {Path(package).parts[0] for package in packages}
    for entry in sorted(source.iterdir()):
        if entry.name not in ("src", ".git", PROVENANCE_FILE) and entry.name not in rebuilt:
            (directory / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
    for package in packages:
        target = directory / package
        target.mkdir(parents=True, exist_ok=True)
        for entry in sorted((source / package).iterdir()):
            (target / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
        (target / "__init__.py").touch(exist_ok=True)
    for relative, target_path in (links or {}).items():
        link = directory / relative
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target_path, target_is_directory=target_path.is_dir())
    return directory


# transformers: one architecture's tests are tests/models/<arch>/test_modeling_<arch>.py


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
    """Each architecture's model test file, relative to ``source``; :class:`InputError` when ``source`` lacks an
    architecture's tests (the message lists what it has)."""
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


def installed_in(directory: Path, distribution: str) -> str | None:
    """The version of ``distribution`` installed in ``directory`` (a ``pip install --target`` directory), or None."""
    found = [dist.version for dist in importlib.metadata.distributions(path=[str(directory)])
             if (dist.metadata["Name"] or "").lower().replace("_", "-") == distribution.lower()]
    return found[0] if found else None


def install_beside(distribution: str, version: str, cache: Path) -> Path:
    """``distribution==version`` alone (``--no-deps``: its dependencies are the environment's) installed with pip
    into a directory of ``cache``, once, for test processes that put it first on ``PYTHONPATH``: a release beside the
    installed one, which stays as it is. :class:`InputError` when pip cannot install it."""
    target = cache / "beside" / f"{distribution}-{version}"
    if installed_in(target, distribution) == version:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target",
               str(staging), f"{distribution}=={version}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise InputError(f"--against {version}: cannot run pip to install {distribution} {version}: {exc}") from exc
    if done.returncode != 0 or installed_in(staging, distribution) != version:
        shutil.rmtree(staging, ignore_errors=True)
        reason = (done.stderr.strip().splitlines() or ["nothing installed"])[-1]
        raise InputError(f"--against {version}: pip could not install {distribution} {version} beside the installed "
                         f"one: {reason}")
    with contextlib.suppress(OSError):  # published by a concurrent run
        staging.rename(target)
    shutil.rmtree(staging, ignore_errors=True)
    return target
