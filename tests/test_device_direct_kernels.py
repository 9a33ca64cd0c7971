"""The reference device's direct kernels (the hottest operators, called unboxed) give what the boxed CPU fallback
gives: the same values, dtype, strides, contiguity, dispatch keys and device, the same operator log, the same errors,
and for an in-place or out= operator the same tensor written — on both profiles.

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
    "x.abs().sqrt()", "x.sin()", "x.cos()", "torch.index_select(x, 0, i[:, 0].long() // 3)", "torch.where(m, x, y)",
    # out= operators: a fresh out, one to resize (empty, or of another shape: a warning and a resize), a transposed
    # one, the same tensor as input and out, a 64-bit out
    "torch.mul(x, y, out=torch.empty(4, 3, device='neuron'))",
    "torch.add(x, y, alpha=3, out=torch.empty(0, device='neuron'))",
    "torch.sub(x, y, out=torch.empty(2, device='neuron'))", "torch.div(x, y, out=torch.empty_like(x).t())",
    "(lambda t: torch.mul(t, t, out=t))(x.clone())",
    "torch.mul(i, 3, out=torch.empty(4, 3, dtype=torch.int64, device='neuron'))",
    "torch.addcmul(x, x, y, value=0.5, out=torch.empty_like(x))",
    "torch.addcdiv(x, x, y.abs() + 1, out=torch.empty_like(x))", "torch.pow(x, 2, out=torch.empty_like(x))",
    "torch.le(x, y, out=torch.empty(4, 3, dtype=torch.bool, device='neuron'))",
    "torch.arange(2, 9, 2, out=torch.empty(0, dtype=torch.int64, device='neuron'))",
    "torch.arange(0.5, 3.0, 0.5, out=torch.empty(0, device='neuron'))",
    "torch.sqrt(x.abs(), out=torch.empty_like(x))", "torch.mm(x, s, out=torch.empty(4, 3, device='neuron'))",
    "torch.bmm(b, b, out=torch.empty(0, device='neuron'))",
    # in-place operators: on a copy, a 64-bit one the rounding changes, a view, a view another argument overlaps
    "x.clone().add_(y, alpha=2)", "x.clone().sub_(1)", "x.clone().mul_(y)", "x.clone().div_(torch.tensor(2.0))",
    "x.clone().addcmul_(x, y, value=2)", "x.clone().addcdiv_(x, y.abs() + 1)", "x.clone().lerp_(y, 0.3)",
    "x.clone().zero_()", "x.clone().fill_(2.5)", "i.clone().mul_(5)", "d.clone().add_(d)",
    "(d * 0).add_(2**40 + 1)", "(lambda t: (t[0].add_(t[1]), t)[1])(x.clone())",
    "(lambda t: (t.t().mul_(2), t)[1])(x.clone())",
]

#: Calls the device must refuse, with the fallback's message: an input on another device, an out that overlaps an
#: input in part, an in-place operand that would have to broadcast, and an out that is also an input and would have to
#: broadcast (the kernel sees one tensor, as on the CPU, and refuses to resize it: a direct kernel, and the fallback's
#: `logical_and_`, which calls `logical_and_out(self, self, other)`).
REFUSED = [
    "x + torch.ones(4, 3)", "x * y.to('neuron:1')", "torch.mul(x, y, out=torch.empty(4, 3))",
    "(lambda t: torch.add(t[1:], t[:-1], out=t[:-1]))(x.clone())", "x.clone()[:1].mul_(y)",
    "x.clone().add_(y.to('neuron:1'))", "(lambda t: torch.mul(t, y, out=t))(x.clone()[:1])",
    "(lambda t: t.logical_and_(m))(m.clone()[:1])",
]

_SCRIPT = """
import json, torch, warnings
torch.manual_seed(0)
x, y, s, b = (torch.randn(*shape).to("neuron") for shape in [(4, 3), (4, 3), (3, 3), (2, 3, 3)])
i = torch.arange(12, dtype=torch.int32).reshape(4, 3).to("neuron")
m = (torch.arange(12).reshape(4, 3) % 2 == 0).to("neuron")
d = torch.randn(4, 3, dtype=torch.float64).to("neuron")
z = torch.randn(4, 3, dtype=torch.complex64).to("neuron")
out = {}
for expression in EXPRESSIONS:
    torch.neuron.reset_op_log()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = eval(expression)
    out[expression] = {
        "warnings": sorted(str(w.message).splitlines()[0] for w in caught),
        "device": str(result.device), "dtype": str(result.dtype), "stride": list(result.stride()),
        "keys": str(torch._C._dispatch_keys(result)), "contiguous": result.is_contiguous(),
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


#: Results the CPU lays out after their transposed or permuted inputs, so that the trainium profile copies them into
#: contiguous strides: rows of stride 1 and others, one to three outer dimensions, elements of 2, 4 and 8 bytes, and
#: one past the size below which the copy is the device's own (`gather_small`) rather than ATen's.
RELAID = [
    "x.t() + y.t()", "b.transpose(0, 1) * 2", "b.permute(2, 0, 1) - 1", "b.half().transpose(0, 1) * 2",
    "i.t() * 3", "i.long().t() * 3", "r.permute(1, 0, 2, 3) * 2", "big.t() * 2",
]


def test_a_result_relaid_contiguous_keeps_the_cpus_values() -> None:
    """The comparison with the fallback cannot see a wrong copy (both take the same one): here the values of each
    relaid result are the CPU's, and its strides contiguous."""
    script = f"""
import json, torch
torch.manual_seed(0)
x, y, s, b = (torch.randn(*shape) for shape in [(4, 3), (4, 3), (3, 3), (2, 3, 5)])
i = torch.arange(12, dtype=torch.int32).reshape(4, 3)
r, big = torch.randn(2, 3, 4, 5), torch.randn(200, 100)
cpu = {{name: value for name, value in globals().items() if isinstance(value, torch.Tensor)}}
out = {{}}
for expression in {RELAID!r}:
    expected = eval(expression, None, cpu)
    result = eval(expression, None, {{name: value.to("neuron") for name, value in cpu.items()}})
    out[expression] = [not expected.is_contiguous(), result.is_contiguous(), torch.equal(result.cpu(), expected)]
print(json.dumps(out))
"""
    result = run(script, PROFILES["trainium"].switches)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.splitlines()[-1])
    wrong = {expression: checks for expression, checks in out.items() if checks != [True, True, True]}
    assert not wrong, f"[the CPU's is not contiguous, the device's is, same values]: {wrong}"
