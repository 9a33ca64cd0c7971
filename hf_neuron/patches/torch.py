"""torch: integer histograms on neuron (the router of every mixture-of-experts model counts tokens with them), and
LSTMs on neuron made of operators the device runs (torch's LSTM cell on any device but the CPU is a fused kernel only
CUDA has)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["PATCHES"]

VERSIONS = ">=2.13,<2.15"


def _integer_histc_on_neuron(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def histc(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - torch.histc's own parameter name
        on_neuron = input.device.type == neuron_device.DEVICE and not input.is_floating_point()
        # a float copy is exact for the integers a histogram counts (below 2**24)
        return original(input.float() if on_neuron else input, *args, **kwargs)

    return histc


#: The fused LSTM cell torch calls on every device but the CPU (aten/src/ATen/native/RNN.cpp, ``LSTMCell``).
_FUSED_LSTM_CELL = "aten::_thnn_fused_lstm_cell"


def _backend_fuses_lstm_cells() -> bool:
    """Whether the backend that owns ``neuron`` registers its own kernel for the fused LSTM cell."""
    import torch

    return bool(torch._C._dispatch_has_kernel_for_dispatch_key(_FUSED_LSTM_CELL, "PrivateUse1"))


def _lstm_layer(inputs: Any, h: Any, c: Any, weights: Sequence[Any], has_biases: bool, reverse: bool
                ) -> tuple[Any, Any, Any]:
    """One direction of one LSTM layer over ``inputs`` ``(time, batch, features)`` from state ``h``, ``c``: the cell
    torch's CPU kernel runs (gates = W_ih x + b_ih + W_hh h + b_hh; i, f, g, o; c' = f c + i g; h' = o tanh(c'),
    projected by W_hr when the layer has one), made of linear, sigmoid, tanh and elementwise operators."""
    import torch
    from torch.nn import functional

    w_ih, w_hh, *rest = weights
    b_ih, b_hh = (rest[0], rest[1]) if has_biases else (None, None)
    w_hr = rest[-1] if len(rest) % 2 else None
    input_gates = functional.linear(inputs, w_ih, b_ih)
    steps = range(inputs.shape[0] - 1, -1, -1) if reverse else range(inputs.shape[0])
    outputs = [inputs] * inputs.shape[0]
    for step in steps:
        i, f, g, o = (input_gates[step] + functional.linear(h, w_hh, b_hh)).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        if w_hr is not None:
            h = functional.linear(h, w_hr)
        outputs[step] = h
    return torch.stack(outputs), h, c


def _decomposed_lstm(inputs: Any, hx: Sequence[Any], params: Sequence[Any], has_biases: bool, num_layers: int,
                     dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple[Any, Any, Any]:
    """``torch._VF.lstm(input, hx, params, ...)`` (``aten::lstm.input``: every layer and direction, projections,
    dropout between layers in training, batch-first and unbatched inputs) with :func:`_lstm_layer`'s cell."""
    import torch
    from torch.nn import functional

    directions = 2 if bidirectional else 1
    per_layer = len(params) // (num_layers * directions)
    unbatched = inputs.dim() == 2
    x = inputs.unsqueeze(1) if unbatched else inputs.transpose(0, 1) if batch_first else inputs
    h0, c0 = (state.unsqueeze(1) for state in hx) if unbatched else hx
    last_h, last_c = [], []
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            out, h, c = _lstm_layer(x, h0[index], c0[index], params[index * per_layer:(index + 1) * per_layer],
                                    has_biases, reverse=direction == 1)
            outputs.append(out)
            last_h.append(h)
            last_c.append(c)
        x = torch.cat(outputs, dim=-1) if directions == 2 else outputs[0]
        if dropout and train and layer < num_layers - 1:
            x = functional.dropout(x, dropout, training=True)
    h_n, c_n = torch.stack(last_h), torch.stack(last_c)
    if unbatched:
        return x.squeeze(1), h_n.squeeze(1), c_n.squeeze(1)
    return (x.transpose(0, 1) if batch_first else x), h_n, c_n


def _lstm_on_neuron(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def lstm(*args: Any, **kwargs: Any) -> Any:
        # aten::lstm.input takes the state as a list second; lstm.data (a packed sequence) its batch sizes
        if (not kwargs and len(args) == 9 and isinstance(args[1], (list, tuple))
                and getattr(getattr(args[0], "device", None), "type", None) == neuron_device.DEVICE
                and not _backend_fuses_lstm_cells()):
            return _decomposed_lstm(*args)
        return original(*args, **kwargs)

    return lstm


PATCHES: list[Patch] = [
    Patch(
        id="torch.integer-histc-on-neuron",
        library="torch",
        module="torch",
        attribute="histc",
        versions=VERSIONS,
        reason="transformers counts tokens per expert with `torch.histc` on an int32 tensor on every device but "
        "cpu and mps: in `grouped_mm_experts_forward()` (transformers/integrations/moe.py, the default experts of "
        "every MoE model) and in the `load_balancing_loss_func()` of every MoE model (the router's auxiliary loss, "
        "computed with `output_router_logits=True`, the usual setting for fine-tuning). `histc` has no integer CPU "
        "kernel, which is where neuron runs it (the reference device, and the real one when the op falls back), so "
        "MoE forward and training fail on neuron with \"histogram_cpu\" not implemented for 'Int'. On a neuron "
        "tensor of integers the replacement computes the histogram of a float copy, as the cpu branch does; every "
        "caller is covered, however it reached `torch.histc`.",
        replace=_integer_histc_on_neuron,
        upstream_fix="transformers: `expert_ids.int() if device.type == 'cuda' else expert_ids.float()` (only CUDA "
        "needs the integer input); or an integer histogram kernel on the CPU in torch.",
        reference_device_gap=True,  # Trainium may compute integer histograms natively
    ),
    Patch(
        id="torch.lstm-of-native-operators-on-neuron",
        library="torch",
        module="torch",
        attribute="_VF.lstm",
        versions=VERSIONS,
        reason="torch/nn/modules/rnn.py `LSTM.forward` runs `_VF.lstm` (`aten::lstm.input`), a composite whose cell "
        "(aten/src/ATen/native/RNN.cpp, `LSTMCell`) calls the fused `aten::_thnn_fused_lstm_cell` on every device but "
        "the CPU; only CUDA has a kernel for it. TorchNeuron does not implement it "
        "(hf_neuron/device/trainium_ops.toml), so it reaches the catch-all CPU fallback, which finds no CPU kernel "
        "either: every LSTM fails on neuron (EnCodec's decoder: bark, musicgen and musicgen_melody generate; "
        "parakeet's and the Nemotron ASR models' prediction networks). On neuron inputs the replacement computes "
        "the LSTM with the CPU kernel's unfused cell, of linear, sigmoid, tanh and elementwise operators that "
        "TorchNeuron runs natively (forward and backward); a backend that registers its own fused cell keeps it. "
        "Packed sequences (`lstm.data`) are left to torch.",
        replace=_lstm_on_neuron,
        upstream_fix="torch: take the unfused cell where the device has no `_thnn_fused_lstm_cell` kernel (test "
        "the dispatch key, not `is_privateuseone()`); or TorchNeuron: a kernel for the fused cell.",
    ),
]
