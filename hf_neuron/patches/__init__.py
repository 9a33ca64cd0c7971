"""Patches that make the Hugging Face libraries choose the ``neuron`` device by themselves.

:func:`install` runs inside ``import torch`` (from the backend autoload): it only puts a post-import hook on
``sys.meta_path`` and imports no library. Each library's patches (declared in the module of the same name in this
package) load and apply when that library is first imported and a ``neuron`` device is registered, whichever
backend registered it. :func:`install` returns a handle whose ``revert()`` (or ``with``-exit) restores everything.
The records and the registry are in :mod:`hf_neuron.patches.registry`.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hf_neuron.import_hooks import PostImportFinder
from hf_neuron.patches import neuron_device
from hf_neuron.patches.libraries import ALREADY_IMPORTED, HOOKED, LIBRARIES

if TYPE_CHECKING:
    from types import TracebackType

    from hf_neuron.patches.registry import Patch, Registry

__all__ = ["Installation", "applicable", "default_registry", "hook", "install", "installation"]

_registry: Registry | None = None
_installation: Installation | None = None


def _library_patches(library: str) -> Sequence[Patch]:
    return importlib.import_module(f"hf_neuron.patches.{library}").PATCHES


def default_registry() -> Registry:
    """The registry of every library's patches (built once; a library's patches load when it is imported)."""
    global _registry
    if _registry is None:
        from hf_neuron.patches.registry import Registry

        _registry = Registry({library: functools.partial(_library_patches, library) for library in LIBRARIES})
    return _registry


def applicable() -> list[Patch]:
    """Every declared patch whose library is installed at a version it was written for: what applies in a process
    with a neuron device, once the libraries are imported."""
    from hf_neuron.patches.registry import in_range, installed_version

    return [patch for patch in default_registry().patches()
            if (version := installed_version(patch.library)) is not None and in_range(version, patch.versions)]


class Installation:
    """A handle on hooked patches: ``revert()`` removes the hook and restores every original and every copy."""

    def __init__(self, finder: PostImportFinder[Registry], extra: Sequence[Registry] = ()) -> None:
        self.finder = finder
        #: Registries applied at install time besides the hooked one (the opt-in CUDA redirect).
        self.extra = tuple(extra)

    @property
    def registries(self) -> tuple[Registry, ...]:
        """Every registry of this installation: the hooked one (built on first need) first."""
        return (self.finder.registry, *self.extra)

    def revert(self) -> None:
        """Remove the hook and restore every original, newest first."""
        global _installation, _registry
        self.finder.remove()
        for registry in reversed(self.registries if self.finder.built else self.extra):
            registry.revert()
        if _installation is self:
            _installation, _registry = None, None

    def __enter__(self) -> Installation:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.revert()


def hook(registry: Registry, extra: Sequence[Registry] = ()) -> Installation:
    """Hook any registry into imports and apply the patches whose targets are already imported."""
    finder = PostImportFinder(registry.libraries, lambda: registry)
    finder.install()
    finder.registry.apply_ready()
    return Installation(finder, extra)


def install() -> Installation:
    """Hook :func:`default_registry` into imports: idempotent and cheap (imports no library, builds nothing).

    Patches of libraries imported before this call apply now: torch's too when a neuron device is registered
    (it is still initialising, inside its own import, so they apply to it directly). With
    ``HF_NEURON_CUDA_REDIRECT=1`` the CUDA redirect for user scripts is applied too (see
    :mod:`hf_neuron.patches.cuda_redirect`).
    """
    global _installation
    if _installation is None:
        extra = []
        if os.environ.get("HF_NEURON_CUDA_REDIRECT"):
            from hf_neuron import settings

            if settings.read("HF_NEURON_CUDA_REDIRECT"):
                from hf_neuron.patches import cuda_redirect

                extra.append(cuda_redirect.enable())
        finder = PostImportFinder(HOOKED, default_registry)
        finder.install()
        if finder.libraries_imported():
            finder.registry.apply_ready()
        if neuron_device.neuron_registered():
            for library in ALREADY_IMPORTED:
                finder.registry.module_executed(sys.modules[library])
        _installation = Installation(finder, extra)
    return _installation


def installation() -> Installation | None:
    """The current installation, or None when :func:`install` has not run (or was reverted)."""
    return _installation
