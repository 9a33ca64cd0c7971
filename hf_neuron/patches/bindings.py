"""Find and replace every binding of an object in modules.

``from x import f`` copies ``f`` into the importing module, and ``def g(fn=f)`` copies it into ``g``'s defaults:
replacing ``x.f`` alone leaves those copies behind. :func:`rebind` replaces them too; :func:`modules_in` lists the
imported modules of some top-level packages.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

__all__ = ["modules_in", "rebind"]


def modules_in(scope: Collection[str]) -> Iterator[types.ModuleType]:
    """The imported modules whose top-level package is in ``scope``."""
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in scope and isinstance(module, types.ModuleType):
            yield module


def _swap_defaults(function: types.FunctionType, swaps: Mapping[int, Any]) -> None:
    if function.__defaults__ and any(id(value) in swaps for value in function.__defaults__):
        function.__defaults__ = tuple(swaps.get(id(value), value) for value in function.__defaults__)
    kwdefaults = function.__kwdefaults__
    if kwdefaults and any(id(value) in swaps for value in kwdefaults.values()):
        function.__kwdefaults__ = {key: swaps.get(id(value), value) for key, value in kwdefaults.items()}


def rebind(swaps: Mapping[int, tuple[Any, Any]], modules: Iterable[types.ModuleType]) -> None:
    """Replace every module-level binding and function default found in ``modules``.

    ``swaps`` maps ``id(old)`` to ``(old, new)``; the caller keeps the old objects alive, so ids stay unique.
    """
    if not swaps:
        return
    news = {key: new for key, (_old, new) in swaps.items()}
    for module in modules:
        namespace = vars(module)
        for name, value in list(namespace.items()):
            if id(value) in news:
                namespace[name] = news[id(value)]
            elif type(value) is types.FunctionType:  # not isinstance: it asks a deprecated object its __class__
                _swap_defaults(value, news)
