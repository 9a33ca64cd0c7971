"""peft: ``infer_device()`` answers ``neuron``; SHiRA and FRoD compute with dense tensors on neuron."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["PATCHES"]

VERSIONS = ">=0.21,<0.22"


def _infers_neuron(original: Callable[[], str]) -> Callable[[], str]:
    @functools.wraps(original)
    def infer_device() -> str:
        device = original()
        return neuron_device.DEVICE if device == "cpu" and neuron_device.neuron_available() else device

    return infer_device


def _on_neuron(tensor: Any) -> bool:
    return bool(tensor.device.type == neuron_device.DEVICE)


def _dense(indices: Any, values: Any, size: tuple[int, ...]) -> Any:
    """The dense tensor of the COO tensor ``(indices, values, size)``, duplicates summed as ``to_dense()`` sums them;
    differentiable in ``values``."""
    return values.new_zeros(size).index_put(tuple(indices), values, accumulate=True)


def _dense_shira_delta(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def get_delta_weight(self: Any, adapter: str) -> Any:
        weight = self.shira_weight[adapter]
        if not _on_neuron(weight):
            return original(self, adapter)
        self.shira_indices[adapter] = self.shira_indices[adapter].to(weight.device)
        return _dense(self.shira_indices[adapter], weight * self.scaling[adapter], (self.out_features,
                                                                                     self.in_features))

    return get_delta_weight


def _dense_frod_tensors(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def _get_frod_tensors(self: Any, adapter: str, *, device: Any, dtype: Any) -> Any:
        import torch

        buffers = (self.frod_V, self.frod_s_indices, self.frod_s_size)
        if torch.device(device).type != neuron_device.DEVICE or any(buffer is None for buffer in buffers):
            return original(self, adapter, device=device, dtype=dtype)  # off neuron, or PEFT's own error

        def moved(table: Any, kind: Any = dtype) -> Any:
            return table[adapter].to(device=device, dtype=kind)

        shape = tuple(int(n) for n in self.frod_s_size[adapter].tolist())
        s_factor = _dense(moved(self.frod_s_indices, torch.long), moved(self.frod_lambda_s_values), shape)
        return moved(self.frod_U), moved(self.frod_V), s_factor, moved(self.frod_lambda_l)

    return _get_frod_tensors


def _dense_frod_product(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def _sparse_activation_mm(self: Any, z_flat: Any, s_factor: Any) -> Any:
        if s_factor.is_sparse:
            return original(self, z_flat, s_factor)
        return z_flat @ s_factor.t()  # the dense S of _dense_frod_tensors (all zeros when FRoD's S has no entry)

    return _sparse_activation_mm


_SPARSE_REASON = (
    "builds the adapter's {what} as a torch.sparse_coo_tensor: a sparse layout needs the backend's Sparse kernels, "
    "which the neuron device does not have (TorchNeuron registers dense PrivateUse1 kernels and a CPU fallback for "
    "them; the reference device refuses sparse layouts). On neuron the replacement builds the same values as a dense "
    "tensor (index_put with accumulate sums duplicate indices as the COO tensor's to_dense() does); elsewhere it "
    "calls the original."
)
_SPARSE_FIX = ("build the {what} densely (index_put/scatter) where the device has no sparse kernels, or check "
               "torch's sparse support for the device, as PEFT already densifies FRoD's S for fp16 and bf16")

PATCHES: list[Patch] = [
    Patch(
        id="peft.infer-device-neuron",
        library="peft",
        module="peft.utils.other",
        attribute="infer_device",
        versions=VERSIONS,
        reason="peft/utils/other.py `infer_device()` knows cuda, mps, mlu, xpu and npu, else 'cpu': "
        "`PeftModel.from_pretrained()` / `load_adapter()` without `torch_device` load adapters on the CPU, next "
        "to a base model on neuron. The replacement answers 'neuron' where the original would answer 'cpu'.",
        replace=_infers_neuron,
        upstream_fix="`torch.accelerator.current_accelerator().type` as the last resort of `infer_device()`.",
    ),
    Patch(
        id="peft.shira-dense-delta-on-neuron",
        library="peft",
        module="peft.tuners.shira.layer",
        attribute="Linear.get_delta_weight",
        versions=VERSIONS,
        reason="peft/tuners/shira/layer.py `Linear.get_delta_weight` " + _SPARSE_REASON.format(what="delta weight"),
        replace=_dense_shira_delta,
        upstream_fix=_SPARSE_FIX.format(what="delta weight"),
    ),
    Patch(
        id="peft.frod-dense-s-on-neuron",
        library="peft",
        module="peft.tuners.frod.layer",
        attribute="Linear._get_frod_tensors",
        versions=VERSIONS,
        reason="peft/tuners/frod/layer.py `Linear._get_frod_tensors` " + _SPARSE_REASON.format(what="S factor"),
        replace=_dense_frod_tensors,
        upstream_fix=_SPARSE_FIX.format(what="S factor"),
    ),
    Patch(
        id="peft.frod-dense-product-on-neuron",
        library="peft",
        module="peft.tuners.frod.layer",
        attribute="Linear._sparse_activation_mm",
        versions=VERSIONS,
        reason="peft/tuners/frod/layer.py `Linear._sparse_activation_mm` multiplies by FRoD's S with torch.sparse.mm "
        "(and asks it for _nnz()): with the dense S that peft.frod-dense-s-on-neuron gives on neuron, the replacement "
        "multiplies densely; a sparse S goes to the original.",
        replace=_dense_frod_product,
        upstream_fix=_SPARSE_FIX.format(what="S factor"),
    ),
]
