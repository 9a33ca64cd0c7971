"""hf-neuron: the Hugging Face stack on PyTorch's native ``neuron`` device.

Importing this package is cheap and imports neither torch nor any Hugging Face library. The device and the
patches are installed by PyTorch's backend autoload (:mod:`hf_neuron._autoload`), so user code never needs to
import hf_neuron; :func:`backend` tells which backend owns ``neuron``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hf_neuron._version import __version__

if TYPE_CHECKING:
    from hf_neuron.backends import BackendInfo, backend

__all__ = ["BackendInfo", "__version__", "backend"]


def __getattr__(name: str) -> Any:
    # Lazy, so that the autoload inside `import torch` does not pay for what it does not use.
    if name in ("BackendInfo", "backend"):
        from hf_neuron import backends

        return getattr(backends, name)
    raise AttributeError(f"module 'hf_neuron' has no attribute {name!r}")
