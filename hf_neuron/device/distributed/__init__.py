"""The ``neuron`` c10d backend of the reference device: ``init_process_group("neuron")``, DDP, FSDP2, accelerate.

:func:`register` is called by :func:`hf_neuron.device.activate` (never when the real TorchNeuron owns ``neuron``:
it registers its own backend of the same name). It declares the backend as the default for ``neuron`` tensors, so
``init_process_group()`` with no backend picks it when ``neuron`` is the accelerator. The process group runs gloo
over zero-copy CPU views of the device memory (:mod:`hf_neuron.device.distributed.process_group`), and a failing rank
brings the whole run down promptly (:mod:`hf_neuron.device.distributed.failure`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["BACKEND_NAME", "register"]

#: The backend name (same as the real backend's).
BACKEND_NAME = "neuron"


def _create(options: Any, backend_options: Any = None) -> Any:
    """The backend creator c10d calls with its ``_DistributedBackendOptions`` (extended API)."""
    from hf_neuron.device.distributed import failure
    from hf_neuron.device.distributed.process_group import NeuronProcessGroup

    group = NeuronProcessGroup(
        options.store, options.group_rank, options.group_size, options.timeout, str(options.group_id),
        backend_name=BACKEND_NAME,
    )
    failure.watch(group, options.store)
    return group


def register() -> None:
    """Register the ``neuron`` backend with ``torch.distributed`` (idempotent; nothing when c10d is not built)."""
    import torch.distributed as dist

    if not dist.is_available() or BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=[BACKEND_NAME])
