"""Opt-in redirect of CUDA to ``neuron`` for user scripts that hard-code CUDA (``HF_NEURON_CUDA_REDIRECT=1``).

Off by default: hf-neuron never pretends to be CUDA unless asked. When on, it is a registry of ordinary patches on
torch: ``torch.device("cuda[:N]")``, ``torch.Generator``, ``torch.autocast`` and ``torch.amp.GradScaler`` built
for "cuda", the strings ``"cuda"`` / ``"cuda:N"`` passed to ``.to()``, to factory functions or
``torch.set_default_device``, ``.cuda()`` on tensors and modules, and the ``torch.cuda`` functions a training
script calls (``is_available``, ``device_count``, ``set_device``, ``manual_seed``, memory statistics...), which
answer for ``torch.neuron``. A value is redirected only when it is exactly ``"cuda"`` or ``"cuda:N"`` (or a
``torch.device`` of type cuda): no substring is ever rewritten. Each distinct redirect is logged once, as a warning
of the ``hf_neuron.cuda_redirect`` logger. Enabling it refuses a machine without a neuron device or with CUDA.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

from hf_neuron.backends import NO_NEURON_DEVICE
from hf_neuron.patches import neuron_device
from hf_neuron.patches.libraries import LIBRARIES
from hf_neuron.patches.registry import Patch, Registry

__all__ = ["PATCHES", "CudaRedirectError", "enable", "redirect"]

logger = logging.getLogger("hf_neuron.cuda_redirect")

VERSIONS = ">=2.13,<2.15"

_CUDA = re.compile(r"cuda(?::(\d+))?")
_logged: set[tuple[str, str]] = set()


class CudaRedirectError(RuntimeError):
    """``HF_NEURON_CUDA_REDIRECT=1`` was asked for where it cannot work."""


def _log(where: str, change: str) -> None:
    if (where, change) not in _logged:
        _logged.add((where, change))
        logger.warning("HF_NEURON_CUDA_REDIRECT: %s: %s", where, change)


def redirect(value: Any, where: str = "") -> Any:
    """``value`` with CUDA replaced by neuron when it is exactly ``"cuda"``, ``"cuda:N"`` or a cuda ``torch.device``."""
    torch = sys.modules["torch"]
    if isinstance(value, str):
        match = _CUDA.fullmatch(value)
        if match is None:
            return value
        after: Any = neuron_device.DEVICE if match[1] is None else f"{neuron_device.DEVICE}:{match[1]}"
    elif isinstance(value, torch.device) and value.type == "cuda":
        after = torch.device(neuron_device.DEVICE, value.index)
    else:
        return value
    _log(where, f"{value!r} -> {after!r}")
    return after


def _redirect_all(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], where: str
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return tuple(redirect(arg, where) for arg in args), {key: redirect(arg, where) for key, arg in kwargs.items()}


def _redirects_arguments(where: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def factory(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def redirected(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = _redirect_all(args, kwargs, where)
            return original(*args, **kwargs)

        return redirected

    return factory


def _redirects_construction(where: str) -> Callable[[type], type]:
    """Stands in for a torch class: construction redirects its arguments, ``isinstance`` sees the real class."""

    def factory(original: type) -> type:
        class _RedirectedType(type):
            def __instancecheck__(cls, instance: Any) -> bool:
                return isinstance(instance, original)

            def __subclasscheck__(cls, subclass: type) -> bool:
                return issubclass(subclass, original)

        def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: N807 - replaces a class's __new__
            args, kwargs = _redirect_all(args, kwargs, where)
            return original(*args, **kwargs)

        namespace = {"__new__": __new__, "__doc__": original.__doc__, "__module__": original.__module__,
                     "__qualname__": original.__qualname__, "__wrapped__": original}
        return _RedirectedType(original.__name__, (), namespace)

    return factory


def _neuron_device(device: Any) -> Any:
    torch = sys.modules["torch"]
    if device is None:
        return torch.device(neuron_device.DEVICE, torch.neuron.current_device())
    if isinstance(device, int):
        return torch.device(neuron_device.DEVICE, device)
    return redirect(device, ".cuda")


def _moves_to_neuron(where: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def factory(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def cuda(self: Any, device: Any = None, *args: Any, **kwargs: Any) -> Any:
            target = _neuron_device(device)
            _log(where, f"{device!r} -> {target!r}")
            return self.to(target, *args, **kwargs)

        return cuda

    return factory


def _answers_for_neuron(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def factory(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def redirected(*args: Any, **kwargs: Any) -> Any:
            _log(f"torch.cuda.{name}", f"answered by torch.neuron.{name}")
            args, kwargs = _redirect_all(args, kwargs, f"torch.cuda.{name}")
            return getattr(sys.modules["torch"].neuron, name)(*args, **kwargs)

        return redirected

    return factory


def _label(module: str, attribute: str) -> str:
    """How a script spells the target: ``Tensor.to``, ``torch.zeros``."""
    return attribute if "." in attribute else f"{module}.{attribute}"


def _patch(module: str, attribute: str, what: str, replace: Callable[[Any], Any]) -> Patch:
    return Patch(
        id=f"torch.cuda-redirect.{module}.{attribute}",
        library="torch",
        module=module,
        attribute=attribute,
        versions=VERSIONS,
        reason=f"HF_NEURON_CUDA_REDIRECT=1: {what}",
        replace=replace,
        upstream_fix="None wanted: scripts should use `torch.accelerator` instead of hard-coding CUDA.",
    )


_CLASSES = (("torch", "device"), ("torch", "Generator"), ("torch", "autocast"), ("torch.amp", "autocast"),
            ("torch.amp", "GradScaler"))
_ARGUMENT_TAKERS = (
    ("torch._tensor", "Tensor.to"), ("torch.nn.modules.module", "Module.to"), ("torch", "set_default_device"),
    *(("torch", name) for name in (
        "tensor", "as_tensor", "asarray", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
        "arange", "linspace", "logspace", "eye", "empty_strided", "zeros_like", "ones_like", "empty_like",
        "full_like", "rand_like", "randn_like", "randint_like",
    )),
)
_CUDA_FUNCTIONS = (
    "is_available", "device_count", "current_device", "set_device", "synchronize", "get_device_name",
    "get_device_properties", "is_bf16_supported", "manual_seed", "manual_seed_all", "seed", "initial_seed",
    "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all", "empty_cache", "mem_get_info",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
    "memory_stats", "memory_summary",
)

PATCHES: list[Patch] = [
    *(_patch(module, name, f"`{_label(module, name)}(\"cuda[:N]\")` builds it for neuron",
             _redirects_construction(_label(module, name))) for module, name in _CLASSES),
    *(_patch(module, name, f"`{_label(module, name)}` given \"cuda[:N]\" uses neuron",
             _redirects_arguments(_label(module, name))) for module, name in _ARGUMENT_TAKERS),
    _patch("torch._tensor", "Tensor.cuda", "`Tensor.cuda()` moves to neuron", _moves_to_neuron("Tensor.cuda")),
    _patch("torch.nn.modules.module", "Module.cuda", "`Module.cuda()` moves to neuron",
           _moves_to_neuron("Module.cuda")),
    *(_patch("torch.cuda", name, f"`torch.cuda.{name}` answers for `torch.neuron.{name}`", _answers_for_neuron(name))
      for name in _CUDA_FUNCTIONS),
]


def enable() -> Registry:
    """Apply the redirect now (torch is imported); raise :class:`CudaRedirectError` where it cannot work."""
    torch = sys.modules.get("torch")
    if not neuron_device.neuron_registered():
        raise CudaRedirectError(
f"HF_NEURON_CUDA_REDIRECT=1 but {NO_NEURON_DEVICE}"
        )
    if torch.cuda.is_available():  # type: ignore[union-attr]
        raise CudaRedirectError("HF_NEURON_CUDA_REDIRECT=1 refused: this machine has CUDA devices, use them")
    registry = Registry.from_patches(PATCHES, scope=LIBRARIES)
    registry.apply_ready()
    # Called from the autoload, at the end of torch/__init__.py: torch is still marked as initialising, but every
    # name the redirect replaces is defined by then, so its patches apply now rather than wait for a later import.
    registry.module_executed(torch)  # type: ignore[arg-type]
    return registry
