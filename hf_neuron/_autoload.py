"""PyTorch's device-backend autoload entry point (``torch.backends`` group): runs at the end of ``import torch``.

It must stay cheap when the reference device is off: it reads one environment variable and installs the
patches' post-import hooks; nothing else is imported.
"""

from __future__ import annotations

import sys

from hf_neuron import settings

__all__ = ["autoload", "reference_device_active", "status"]

_status = "HF_NEURON_EMULATOR is not set"
_reference_active = False


def _reason_not_to_register() -> str | None:
    import torch

    from hf_neuron.backends import REAL_PACKAGE, real_backend_installed

    if real_backend_installed():
        return f"the real TorchNeuron package `{REAL_PACKAGE}` is installed and owns `neuron`"
    name = torch._C._get_privateuse1_backend_name()
    if name != "privateuseone":
        return f"PrivateUse1 is already registered as `{name}` in this process"
    return None


def autoload() -> None:
    """Register the reference device when asked to and allowed to, then install the patch hooks."""
    global _status, _reference_active
    if settings.read("HF_NEURON_EMULATOR"):
        reason = _reason_not_to_register()
        if reason is None:
            from hf_neuron import device

            device.activate(settings.emulator_settings())
            _reference_active = True
            _status = "reference device registered (HF_NEURON_EMULATOR=1)"
        else:
            _status = f"HF_NEURON_EMULATOR=1 ignored: {reason}"
            print(f"hf-neuron: {_status}", file=sys.stderr)
    if settings.read("HF_NEURON_PATCHES"):
        from hf_neuron import patches

        patches.install()


def reference_device_active() -> bool:
    """True when this process registered the reference device as ``neuron``."""
    return _reference_active


def status() -> str:
    """Why the reference device is, or is not, registered in this process."""
    return _status
