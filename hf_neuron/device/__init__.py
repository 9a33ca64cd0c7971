"""The reference ``neuron`` device: a PrivateUse1 backend whose memory is host memory.

:func:`activate` registers it exactly as a vendor backend does: the C++ runtime (allocator, device guard,
hooks, generators, kernels, zero-copy CPU fallback, autocast policies), then ``rename_privateuse1_backend``,
``_register_device_module`` and ``generate_methods_for_privateuse1_backend``, then the ``neuron`` dynamo
backend and the ``neuron`` c10d backend (:mod:`hf_neuron.distributed`). Called by the autoload when
``HF_NEURON_EMULATOR=1``; never when the real backend is installed.
"""

from __future__ import annotations

from hf_neuron.settings import EmulatorSettings

__all__ = ["activate"]


def activate(emulator: EmulatorSettings) -> None:
    """Build (first use) or load the runtime and register it as the ``neuron`` device."""
    import torch

    from hf_neuron import distributed
    from hf_neuron.device import build, compile, module, topology

    runtime = build.load()
    devices = topology.topology(emulator.devices)
    runtime.configure(
        devices.count, devices.current, emulator.narrow_64bit, emulator.strict_memory_formats,
        -1 if emulator.capacity_bytes is None else emulator.capacity_bytes, emulator.op_log,
        emulator.warn_fallback, emulator.copy_aliasing, module.trainium_fallback_ops(),
    )
    torch.utils.rename_privateuse1_backend("neuron")
    module.bind(runtime)
    torch._register_device_module("neuron", module)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    compile.register_when_dynamo_loads()
    distributed.register()
