"""The reference device's direct kernels (the hottest operators, called unboxed) give what the boxed CPU fallback
gives: the same values, dtype, strides and device, the same operator log, the same errors — on both profiles.

The fallback is the reference: with ``HF_NEURON_EMULATOR_ALIASING=copy`` (its debug mode) every call takes it, so
each expression below runs once through the direct kernels and once through the fallback, in two processes, and
the two must agree. A direct kernel that skipped the real backend's result layout (contiguous strides after a
transposed input), the 64-bit narrowing of a Python number, or the operator log would differ here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from _helpers import run

from hf_neuron.matrix.profiles import PROFILES

#: Expressions over ``x``, ``y`` (4x3 float32), ``s`` (3x3), ``b`` (2x3x3), ``i`` (int32), ``m`` (bool), ``d``
#: (float64) and ``z`` (complex64), all on the device: every direct kernel, with the arguments that could send a
#: call another way (Python numbers, zero-dim CPU tensors, transposed inputs, 64-bit and complex tensors).
EXPRESSIONS = [
    "x * y", "x + y", "torch.add(x, y, alpha=2)", "x - y", "x / y", "x * 0.1", "x + 1", "1 - x",
    "x * torch.tensor(3.0)", "x.t() + y.t()", "x.t() * 2", "i + i", "i * 3", "m + 2**40", "x + 2**40", "x + 0",
    "m * 1.5", "d * d", "d + 0.1", "z * z",
    "x @ s", "x.t().mm(x)", "torch.bmm(b, b)", "torch.addmm(y, x, s, beta=0.5)",
    "torch.cat([x, y])", "torch.cat([x, y.t().t()], dim=1)", "torch.cat([x, i.float()])", "torch.cat([i, i])",
    "-x", "x.abs().rsqrt()", "torch.nn.functional.silu(x)", "x.pow(2)", "x.mean(-1, keepdim=True)",
    "x.sum(0, dtype=torch.float64)", "x.softmax(-1)", "x.t().softmax(0)", "x.exp()", "x.tanh()", "x.sigmoid()",
    "torch.nn.functional.gelu(x, approximate='tanh')",
    "torch.ops.aten.silu_backward(y, x)", "torch.ops.aten.gelu_backward(y, x)",
    "torch.ops.aten._softmax_backward_data(y, x.softmax(-1), -1, torch.float32)",
    "torch.ops.aten.threshold_backward(y, x, 0.0)",
]

#: Calls the device must refuse, with the fallback's message.
REFUSED = ["x + torch.ones(4, 3)", "x * y.to('neuron:1')"]

_SCRIPT = """
import json, torch
torch.manual_seed(0)
x, y, s, b = (torch.randn(*shape).to("neuron") for shape in [(4, 3), (4, 3), (3, 3), (2, 3, 3)])
i = torch.arange(12, dtype=torch.int32).reshape(4, 3).to("neuron")
m = (torch.arange(12).reshape(4, 3) % 2 == 0).to("neuron")
d = torch.randn(4, 3, dtype=torch.float64).to("neuron")
z = torch.randn(4, 3, dtype=torch.complex64).to("neuron")
out = {}
for expression in EXPRESSIONS:
    torch.neuron.reset_op_log()
    result = eval(expression)
    out[expression] = {
        "device": str(result.device), "dtype": str(result.dtype), "stride": list(result.stride()),
        "values": torch.view_as_real(result.cpu()).tolist() if result.is_complex() else result.cpu().tolist(),
        "executed": torch.neuron.get_executed_ops(), "fallback": torch.neuron.get_fallback_ops(),
    }
for expression in REFUSED:
    try:
        eval(expression)
        out[expression] = "no error"
    except RuntimeError as error:
        out[expression] = str(error).splitlines()[0]
print(json.dumps(out))
"""


def _results(switches: Mapping[str, str]) -> dict[str, object]:
    script = f"EXPRESSIONS = {EXPRESSIONS!r}\nREFUSED = {REFUSED!r}\n{_SCRIPT}"
    result = run(script, {**switches, "HF_NEURON_EMULATOR_DEVICES": "2"})
    assert result.returncode == 0, result.stderr
    out: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
    return out


@pytest.mark.parametrize("profile", ["trainium", "cpu-parity"])
def test_direct_kernels_give_what_the_fallback_gives(profile: str) -> None:
    switches = {**PROFILES[profile].switches, "HF_NEURON_EMULATOR_OP_LOG": "1"}
    direct = _results(switches)
    fallback = _results({**switches, "HF_NEURON_EMULATOR_ALIASING": "copy"})
    differing = [expression for expression in direct if direct[expression] != fallback[expression]]
    assert not differing, "\n".join(f"{e}: direct {direct[e]}, fallback {fallback[e]}" for e in differing)
    assert all(direct[expression] != "no error" for expression in REFUSED)


def test_the_direct_path_keeps_the_real_backends_result_layout_and_narrowing() -> None:
    """What the comparison above protects, stated: on the trainium profile the sum of transposed inputs has
    contiguous strides (the CPU's follows the inputs), and a Python integer beyond 32 bits reaches the kernel
    narrowed (2**40 is 0 in 32 bits), as on Trainium: a float tensor plus 2**40 is the tensor itself."""
    direct = _results(PROFILES["trainium"].switches)
    transposed = direct["x.t() + y.t()"]
    assert isinstance(transposed, dict) and transposed["stride"] == [4, 1]
    narrowed, unchanged = direct["x + 2**40"], direct["x + 0"]
    assert isinstance(narrowed, dict) and isinstance(unchanged, dict) and narrowed["values"] == unchanged["values"]
    narrowed = direct["m + 2**40"]
    assert isinstance(narrowed, dict) and narrowed["values"][0] == [1, 0, 1]
    exact = _results(PROFILES["cpu-parity"].switches)["m + 2**40"]
    assert isinstance(exact, dict) and exact["values"][0] == [2**40 + 1, 2**40, 2**40 + 1]
