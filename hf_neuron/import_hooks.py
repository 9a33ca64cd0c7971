"""Post-import hooks: run code right after a module executes, without importing it first.

One mechanism serves the patch registry (:mod:`hf_neuron.patches`) and the reference device (its dynamo backend
registers when Dynamo is imported). A finder at the front of ``sys.meta_path`` lets the other finders locate a
watched module, then wraps its loader so that the watcher sees the module as soon as its code has run, before any
other module copies a name from it. The wrapper steps aside before the module code runs (``__loader__`` and
``__spec__.loader`` are the real loader again), so the module never sees it. Any import of a watched library also
gives the watcher a chance to catch up on modules imported before the hook existed, or still mid-import then.

This module runs inside ``import torch``: it imports nothing, and builds a watcher only when a watched library is
first imported.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["PostImportFinder", "Watcher", "when_imported"]


class Watcher(Protocol):
    """What a finder feeds (the patch registry is one)."""

    def watches(self, module_name: str) -> bool:
        """True when ``module_name`` must be seen right after it executes."""

    def module_executed(self, module: ModuleType) -> None:
        """A watched module has just executed."""

    def apply_ready(self) -> None:
        """Catch up on watched modules already imported (called on every import of a watched library)."""


W = TypeVar("W", bound=Watcher)


class _PatchingLoader:
    """Runs the real loader, then hands the executed module to the registry."""

    def __init__(self, loader: Any, registry: Watcher) -> None:
        self._loader = loader
        self._registry = registry

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._registry.module_executed(module)


class PostImportFinder(Generic[W]):
    """A meta-path finder that never finds anything itself: it wraps the loaders of a watcher's modules.

    ``libraries`` are the top-level packages watched; ``registry`` builds (or returns) the watcher on first need.
    """

    def __init__(self, libraries: Collection[str], registry: Callable[[], W]) -> None:
        self._libraries = frozenset(libraries)
        self._registry_factory = registry
        self._registry: W | None = None
        self._busy = threading.local()

    @property
    def registry(self) -> W:
        """The watcher this finder feeds (built on first use)."""
        if self._registry is None:
            self._registry = self._registry_factory()
        return self._registry

    @property
    def built(self) -> bool:
        """True once the registry exists (a watched library was imported)."""
        return self._registry is not None

    def libraries_imported(self) -> bool:
        """True when a watched library is already in ``sys.modules``."""
        return any(library in sys.modules for library in self._libraries)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname.partition(".")[0] not in self._libraries or getattr(self._busy, "active", False):
            return None
        self._busy.active = True
        try:
            registry = self.registry
            registry.apply_ready()
            if not registry.watches(fullname):
                return None
            spec = self._find_elsewhere(fullname, path, target)
        finally:
            self._busy.active = False
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader, registry)  # type: ignore[assignment]  # a loader by protocol
        return spec

    def _find_elsewhere(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def install(self) -> None:
        """Put the finder first on ``sys.meta_path`` (idempotent)."""
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def remove(self) -> None:
        """Take the finder off ``sys.meta_path``."""
        while self in sys.meta_path:
            sys.meta_path.remove(self)


class _OneModule:
    """A watcher of one module that calls back once."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.callback: Callable[[ModuleType], None] | None = callback
        self.finder: PostImportFinder[_OneModule] | None = None

    def watches(self, module_name: str) -> bool:
        return module_name == self.name and self.callback is not None

    def module_executed(self, module: ModuleType) -> None:
        if module.__name__ == self.name and self.callback is not None:
            callback, self.callback = self.callback, None
            if self.finder is not None:
                self.finder.remove()
            callback(module)

    def apply_ready(self) -> None:
        module = sys.modules.get(self.name)
        if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
            self.module_executed(module)


def when_imported(name: str, callback: Callable[[ModuleType], None]) -> None:
    """Call ``callback(module)`` once module ``name`` has executed: now if it already has."""
    watcher = _OneModule(name, callback)
    watcher.finder = PostImportFinder({name.partition(".")[0]}, lambda: watcher)
    watcher.finder.install()
    watcher.apply_ready()
