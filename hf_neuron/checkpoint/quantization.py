"""What a quantized checkpoint does on neuron, by its ``quantization_config.quant_method``: one table, read from
transformers 5.24's quantizers (``transformers/quantizers/quantizer_*.py``).

A method either *runs dequantized* (transformers loads the weights dequantized to bfloat16 where the method's kernels
cannot run, and a neuron device is such a place: the checkpoint runs, at bfloat16's memory) or is *not runnable* on
neuron (its quantized layers call a library's CUDA or CPU kernels, which have no neuron implementation). Either way
``hf-neuron check`` slices the checkpoint dequantized, so its other verdicts say whether the architecture runs at real
width; this verdict says what loading the checkpoint as published does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal, get_args

__all__ = ["METHODS", "QUANTIZATION_VERDICTS", "Quantization", "QuantizationVerdict", "quantization"]

QuantizationVerdict = Literal["runs-dequantized", "not-runnable"]
QUANTIZATION_VERDICTS: tuple[QuantizationVerdict, ...] = get_args(QuantizationVerdict)

_NO_KERNEL = ("its quantized layers run {library}'s kernels (CUDA, or the CPU), which have no neuron implementation: "
              "load the unquantized checkpoint in bfloat16 instead")

#: ``quant_method`` -> (verdict, why, and what a user does).
METHODS: Mapping[str, tuple[QuantizationVerdict, str]] = {
    "fp8": ("runs-dequantized", "transformers' fine-grained FP8 kernels need a CUDA or XPU device; elsewhere it loads "
                                "a pre-quantized checkpoint dequantized to bfloat16 (FP8 matmuls on Trainium, new in "
                                "Neuron 2.34, are not what transformers calls)"),
    "mxfp4": ("runs-dequantized", "transformers runs MXFP4 on cuda, xpu or the CPU only; on any other accelerator it "
                                  "loads the checkpoint dequantized to bfloat16"),
    "compressed-tensors": ("runs-dequantized", "with `quantization_config.dequantize=True` (CompressedTensorsConfig) "
                                               "transformers decompresses the weights to bfloat16 on load; without "
                                               "it the compressed layers call compressed-tensors' kernels"),
    "gptq": ("not-runnable", _NO_KERNEL.format(library="gptqmodel")),
    "awq": ("not-runnable", _NO_KERNEL.format(library="gptqmodel's AWQ")),
    "bitsandbytes": ("not-runnable", _NO_KERNEL.format(library="bitsandbytes")),
    "fbgemm_fp8": ("not-runnable", "transformers refuses it without a CUDA or XPU device (fbgemm-gpu's kernels): load "
                                   "the unquantized checkpoint in bfloat16"),
    "torchao": ("not-runnable", _NO_KERNEL.format(library="torchao")),
    "hqq": ("not-runnable", _NO_KERNEL.format(library="hqq")),
    "quanto": ("not-runnable", _NO_KERNEL.format(library="optimum-quanto")),
    "eetq": ("not-runnable", _NO_KERNEL.format(library="eetq")),
    "aqlm": ("not-runnable", _NO_KERNEL.format(library="aqlm")),
    "gguf": ("runs-dequantized", "transformers dequantizes GGUF weights to float32 or bfloat16 when it loads them"),
}


@dataclasses.dataclass(frozen=True)
class Quantization:
    """A checkpoint's quantization: its ``method``, the ``verdict`` on neuron, and ``why``."""

    method: str
    verdict: QuantizationVerdict
    why: str


def quantization(config: Mapping[str, Any] | None) -> Quantization | None:
    """What the ``quantization_config`` ``config`` does on neuron (None for an unquantized checkpoint); a method this
    table does not know is not runnable until someone has read how transformers loads it."""
    if not config:
        return None
    method = str(config.get("quant_method") or (config.get("load_in_4bit") and "bitsandbytes") or "unknown")
    verdict, why = METHODS.get(method, ("not-runnable", f"hf-neuron has not reviewed how transformers loads "
                                                        f"{method!r} checkpoints on a neuron device"))
    return Quantization(method, verdict, why)
