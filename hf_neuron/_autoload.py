"""PyTorch's device-backend autoload entry point (``torch.backends`` group): runs at the end of ``import torch``.

It must stay cheap when the reference device is off: it reads its environment switches and installs the
patches' post-import hooks; nothing else is imported (unless ``HF_NEURON_DEVICE_PROBE`` asks for a device probe
at exit, as ``hf-neuron upstream`` does for the processes of the tests it runs). What it decided is kept by
:mod:`hf_neuron.backends`.
"""

from __future__ import annotations

import sys

from hf_neuron import backends, settings

__all__ = ["autoload"]


def _reason_not_to_register() -> str | None:
    import torch

    if backends.real_backend_installed():
        return f"the real TorchNeuron package `{backends.REAL_PACKAGE}` is installed and owns `neuron`"
    name = torch._C._get_privateuse1_backend_name()
    if name != "privateuseone":
        return f"PrivateUse1 is already registered as `{name}` in this process"
    return None


def autoload() -> None:
    """Register the reference device when asked to and allowed to, then install the patch hooks. A bad setting is
    said on stderr first (torch reports only "Failed to load the backend extension", the cause deep in its chained
    traceback), then raised."""
    try:
        _autoload()
    except settings.SettingError as error:
        print(f"hf-neuron: {error}", file=sys.stderr)
        raise


def _autoload() -> None:
    if settings.read("HF_NEURON_EMULATOR"):
        reason = _reason_not_to_register()
        if reason is None:
            from hf_neuron import device

            device.activate(settings.reference_device_settings())
            backends.record_autoload("reference device registered (HF_NEURON_EMULATOR=1)", reference_active=True)
        else:
            backends.record_autoload(f"HF_NEURON_EMULATOR=1 ignored: {reason}", reference_active=False)
            print(f"hf-neuron: {backends.autoload_status()}", file=sys.stderr)
    if settings.read("HF_NEURON_PATCHES"):
        from hf_neuron import patches

        patches.install()
    if probes := settings.read("HF_NEURON_DEVICE_PROBE"):
        from hf_neuron.testing.device import probe_at_exit

        probe_at_exit(probes)
