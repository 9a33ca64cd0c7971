"""The reference ``neuron`` device: a PrivateUse1 backend whose memory is host memory.

:func:`activate` registers it exactly as a vendor backend does: the C++ runtime (allocator, device guard,
hooks, generators, kernels, zero-copy CPU fallback, autocast policies), then ``rename_privateuse1_backend``,
``_register_device_module`` and ``generate_methods_for_privateuse1_backend``, then the ``neuron`` dynamo
backend and the ``neuron`` c10d backend (:mod:`hf_neuron.device.distributed`), and an exit handler that lets
autograd's device threads finish before the interpreter finalizes
(:func:`~hf_neuron.device.runtime.drain_autograd_threads`). Called by the autoload when
``HF_NEURON_EMULATOR=1``; never when the real backend is installed.
"""

from __future__ import annotations

from hf_neuron.settings import ReferenceDeviceSettings

__all__ = ["activate"]


def activate(settings: ReferenceDeviceSettings) -> None:
    """Build (first use) or load the runtime and register it as the ``neuron`` device."""
    import atexit

    import torch

    from hf_neuron.device import distributed, dynamo_backend, flex_attention, neuron, runtime, topology, trainium_ops

    devices = topology.topology(settings.devices)
    ops = trainium_ops.load()
    runtime.load().configure(
        devices.count, devices.current, settings.narrow_64bit, settings.strict_memory_formats,
        -1 if settings.capacity_bytes is None else settings.capacity_bytes, settings.op_log,
        settings.warn_fallback, settings.copy_aliasing, settings.trainium_dispatch, settings.rng_on_cpu,
        sorted(ops.native), sorted(ops.unlogged), sorted(ops.measured_fallback or {}), ops.kind == "measured",
    )
    torch.utils.rename_privateuse1_backend("neuron")
    neuron.bind()
    torch._register_device_module("neuron", neuron)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    dynamo_backend.register_when_dynamo_loads()
    flex_attention.register_when_flex_attention_loads()
    distributed.register()
    atexit.register(runtime.drain_autograd_threads)
