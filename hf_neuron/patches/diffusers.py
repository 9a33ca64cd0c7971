"""diffusers: detect ``neuron`` by device; give the spectrogram pipeline's encoders the attention-mask method
transformers 5 removed."""

from __future__ import annotations

from typing import Any

from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["PATCHES"]

VERSIONS = ">=0.42,<0.43"
_SPECTROGRAM = "diffusers.pipelines.deprecated.spectrogram_diffusion"


def _extended_attention_mask(original: Any) -> Any:
    """transformers 4's ``ModuleUtilsMixin.get_extended_attention_mask`` (``modeling_utils.py``), which the encoders
    call and transformers 5 removed: a padding mask of 1 (attend) and 0 as an additive mask of 0 and the dtype's
    lowest value, broadcast over heads (and over queries for a 2-D mask; causal as well for a decoder's). Where a
    transformers that still has it provides one (``original``), that one."""
    if original is not None:
        return original

    def get_extended_attention_mask(self: Any, attention_mask: Any, input_shape: Any, device: Any = None,
                                    dtype: Any = None) -> Any:
        import torch

        dtype = self.dtype if dtype is None else dtype
        if attention_mask.dim() == 3:
            extended = attention_mask[:, None, :, :]
        elif attention_mask.dim() == 2 and getattr(self.config, "is_decoder", False):
            batch, length = input_shape[0], input_shape[1]
            positions = torch.arange(length, device=attention_mask.device)
            causal = positions[None, None, :].repeat(batch, length, 1) <= positions[None, :, None]
            extended = causal.to(attention_mask.dtype)[:, None, :, :] * attention_mask[:, None, None, :]
        elif attention_mask.dim() == 2:
            extended = attention_mask[:, None, None, :]
        else:
            raise ValueError(f"Wrong shape for input_ids (shape {tuple(input_shape)}) or attention_mask (shape "
                             f"{tuple(attention_mask.shape)})")
        extended = extended.to(dtype=dtype)
        return (1.0 - extended) * torch.finfo(dtype).min

    return get_extended_attention_mask


def _restores_mask(encoder: str, cls: str) -> Patch:
    return Patch(
        id=f"diffusers.{encoder.replace('_', '-')}-builds-its-attention-mask",
        library="diffusers",
        module=f"{_SPECTROGRAM}.{encoder}",
        attribute=f"{cls}.get_extended_attention_mask",
        versions=VERSIONS,
        reason=f"diffusers/pipelines/deprecated/spectrogram_diffusion/{encoder}.py `{cls}.forward()` calls "
        "`self.get_extended_attention_mask()`, which it inherits from transformers' `ModuleUtilsMixin`; transformers "
        "5 removed that method, so SpectrogramDiffusionPipeline fails on every device (\"object has no attribute "
        "'get_extended_attention_mask'\"). The patch adds transformers 4's method back to the encoder (a padding mask "
        "as an additive mask); a transformers that still has it keeps its own.",
        replace=_extended_attention_mask,
        upstream_fix=f"`{cls}.forward()` builds its additive mask itself (`(1 - mask[:, None, None, :]) * "
        "torch.finfo(dtype).min`) instead of calling the transformers 4 method.",
        needs_device=False,  # the library's bug on every device: the CPU's run is the device's reference
        adds=True,
    )

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
    _restores_mask("notes_encoder", "SpectrogramNotesEncoder"),
    _restores_mask("continuous_encoder", "SpectrogramContEncoder"),
]
