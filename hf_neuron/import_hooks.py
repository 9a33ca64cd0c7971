"""Run code right after a module is first imported (post-import hooks), without importing it.

A finder placed first on ``sys.meta_path`` wraps the loader of each watched module so that, once the module
has executed, its callbacks run, before any other module can copy names out of it with ``from x import f``.
A module that is already imported gets its callbacks at once. Installing the finder costs microseconds,
which matters because hf-neuron installs hooks from inside ``import torch``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType

__all__ = ["Callback", "pending", "when_imported"]

Callback = Callable[[ModuleType], None]

_lock = threading.RLock()
_callbacks: dict[str, list[Callback]] = {}


def _run(module: ModuleType, callbacks: list[Callback]) -> None:
    for callback in callbacks:
        callback(module)


class _LoaderWithHooks(importlib.abc.Loader):
    """Delegates to the real loader, then runs the callbacks registered for the module."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # Code that inspects the loader (resources, source) sees the real one.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        with _lock:
            callbacks = _callbacks.pop(module.__name__, [])
        _run(module, callbacks)

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds watched modules through the other finders and wraps their loaders."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _LoaderWithHooks(spec.loader)
                return spec
        return None


_finder = _Finder()


def when_imported(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` once module ``name`` has been imported: now if it already is."""
    with _lock:
        module = sys.modules.get(name)
        if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
            _callbacks.setdefault(name, []).append(callback)
            if _finder not in sys.meta_path:
                sys.meta_path.insert(0, _finder)
            return
    callback(module)


def pending() -> dict[str, int]:
    """Modules still awaited, with how many callbacks each (for diagnostics)."""
    with _lock:
        return {name: len(callbacks) for name, callbacks in _callbacks.items()}
