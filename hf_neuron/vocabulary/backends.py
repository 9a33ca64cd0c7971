"""Which backend owns the ``neuron`` device: the closed set of backend kinds (a module of its own, because the
autoload reads it inside ``import torch``, where nothing else of the vocabulary is needed)."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["BACKEND_KINDS", "BackendKind"]

BackendKind = Literal["real", "reference", "none"]
#: ``real``: TorchNeuron (``torch_neuronx``); ``reference``: hf-neuron's reference device; ``none``: no backend (a
#: CPU-only baseline run of the matrix).
BACKEND_KINDS: tuple[BackendKind, ...] = get_args(BackendKind)
