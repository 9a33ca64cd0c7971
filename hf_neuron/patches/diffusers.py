"""diffusers: detect ``neuron`` by device."""

from __future__ import annotations

from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["PATCHES"]

VERSIONS = ">=0.42,<0.43"

PATCHES: list[Patch] = [
    Patch(
        id="diffusers.detect-neuron-by-device",
        library="diffusers",
        module="diffusers.utils.import_utils",
        attribute="is_torch_neuronx_available",
        versions=VERSIONS,
        reason="diffusers/utils/import_utils.py `is_torch_neuronx_available()` returns a package check made at "
        "import (`_is_package_available('torch_neuronx')`); `TorchDeviceBackend._detect_device_type()` and the "
        "test device selection (`utils/testing_utils.py`) use it to recognise neuron. The replacement asks torch.",
        replace=neuron_device.detection,
        upstream_fix="Test the registered device (`torch.accelerator`) rather than the package.",
    ),
]
