"""Every operator the CPU runs, runs on the neuron device with the same result.

Walks PyTorch's own operator database (OpInfo: ~700 operators with sample inputs). Sample inputs are created on
the device, the expected result comes from the CPU on copies of those same inputs, and the two are compared
exactly as PyTorch's device tests compare them. Functional, in-place and ``out=`` variants are covered, and
gradients for operators that support autograd.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._pytree import tree_map

DTYPE = torch.float32
SAMPLES_PER_OP = 4

#: Operators whose device result legitimately differs from the CPU's, with the reason.
DIFFERENT_BY_DESIGN = {
    "as_strided": "reads raw storage, whose layout after a copy between devices is the copy's, not the source's",
    "as_strided_scatter": "reads raw storage, like as_strided",
}
#: Sparse layouts are refused, with this message, when an operator would create one on the device.
DENSE_ONLY = "The neuron device supports dense strided tensors only"
#: Outputs with unspecified values (only shape and dtype are compared).
UNINITIALIZED = ("empty", "new_empty", "empty_like", "new_empty_strided", "empty_strided", "empty_permuted")

OPS = [op for op in op_db if DTYPE in op.supported_dtypes("cpu")]


def _cpu(value: Any) -> Any:
    return value.cpu() if isinstance(value, torch.Tensor) else value


def _is_sparse_op(op: Any) -> bool:
    return op.name.startswith("sparse.") or "to_sparse" in op.name


def _device_samples(op: Any, requires_grad: bool = False) -> Iterator[Any]:
    """The op's first sample inputs, created on the device; for a sparse op, check that it is refused."""
    torch.manual_seed(0)
    samples = iter(op.sample_inputs("neuron", DTYPE, requires_grad=requires_grad))
    for _ in range(SAMPLES_PER_OP):
        try:
            sample = next(samples)
            if _is_sparse_op(op):
                op(sample.input, *sample.args, **sample.kwargs)
        except StopIteration:
            return
        except RuntimeError as error:
            if _is_sparse_op(op) and DENSE_ONLY in str(error):
                return
            raise
        assert not _is_sparse_op(op), f"{op.name} ran on the device instead of refusing its sparse layout"
        yield sample


def _outputs_on_device(result: Any) -> None:
    for leaf in torch.utils._pytree.tree_leaves(result):
        if isinstance(leaf, torch.Tensor):
            assert leaf.device.type == "neuron", f"an output is on {leaf.device}"


def _compare(op_name: str, actual: Any, expected: Any) -> None:
    _outputs_on_device(actual)
    actual = tree_map(_cpu, actual)
    if op_name in UNINITIALIZED:
        leaves = torch.utils._pytree.tree_leaves
        for a, e in zip(leaves(actual), leaves(expected), strict=True):
            assert (a.shape, a.dtype) == (e.shape, e.dtype)
        return
    torch.testing.assert_close(actual, expected, equal_nan=True, check_device=False)


def _first_line(error: Exception) -> str:
    """The first line of an error message (later lines may print the arguments, whose repr names their device)."""
    return str(error).split("\n", 1)[0]


def _run_on_both(op_name: str, call: Callable[[Any], Any], sample: Any) -> tuple[Any, Any] | None:
    """(device result, CPU result), or None when the CPU rejects the sample and the device rejects it the same way
    (the same exception type and message); a sample the CPU rejects and the device accepts fails the test."""
    cpu_sample = sample.transform(lambda t: t.detach().cpu().requires_grad_(t.requires_grad)
                                  if isinstance(t, torch.Tensor) else t)
    torch.manual_seed(1)
    try:
        expected = call(cpu_sample)
    except Exception as error:  # noqa: BLE001 - a sample the CPU rejects must be rejected on the device too
        cpu_error = error
    else:
        torch.manual_seed(1)
        return call(sample), expected
    torch.manual_seed(1)
    try:
        call(sample)
    except Exception as error:  # noqa: BLE001 - compared with the CPU's error below
        device_error = error
    else:
        raise AssertionError(f"{op_name}: the CPU rejects this sample ({type(cpu_error).__name__}: {cpu_error}), "
                             "the device accepted it") from cpu_error
    assert (type(device_error), _first_line(device_error)) == (type(cpu_error), _first_line(cpu_error)), (
        f"{op_name}: the device rejects this sample with {type(device_error).__name__}: {device_error}, "
        f"the CPU with {type(cpu_error).__name__}: {cpu_error}")
    return None


def _params(variant: str) -> list[Any]:
    params = []
    for op in OPS:
        marks = []
        if op.name in DIFFERENT_BY_DESIGN:
            marks.append(pytest.mark.skip(reason=DIFFERENT_BY_DESIGN[op.name]))
        if variant == "inplace" and op.inplace_variant is None:
            continue
        if variant == "out" and not op.supports_out:
            continue
        if variant == "grad" and not op.supports_autograd:
            continue
        params.append(pytest.param(op, id=op.name + (f".{op.variant_test_name}" if op.variant_test_name else ""),
                                   marks=marks))
    return params


@pytest.mark.parametrize("op", _params("functional"))
def test_functional_matches_cpu(op: Any) -> None:
    for sample in _device_samples(op):
        pair = _run_on_both(op.name, lambda s: op(s.input, *s.args, **s.kwargs), sample)
        if pair is not None:
            _compare(op.name, *pair)


@pytest.mark.parametrize("op", _params("inplace"))
def test_inplace_matches_cpu(op: Any) -> None:
    def call(s: Any) -> Any:
        target = s.input.clone()
        result = op.inplace_variant(target, *s.args, **s.kwargs)
        assert result is target, "an in-place op must return its input"
        return target

    for sample in _device_samples(op):
        if isinstance(sample.input, torch.Tensor):
            pair = _run_on_both(op.name, call, sample)
            if pair is not None:
                _compare(op.name, *pair)


@pytest.mark.parametrize("op", _params("out"))
def test_out_variant_matches_cpu(op: Any) -> None:
    def call(s: Any) -> Any:
        reference = op(s.input, *s.args, **s.kwargs)
        if isinstance(reference, torch.Tensor):
            out = torch.empty(0, dtype=reference.dtype, device=reference.device)  # resized by the op
            assert op(s.input, *s.args, **s.kwargs, out=out) is out
            return out
        outs = tuple(torch.empty(0, dtype=r.dtype, device=r.device) for r in reference)  # out= of several tensors
        if isinstance(op.op, torch._ops.OpOverloadPacket):  # an aten op called directly takes each out by name
            names = [a.name for a in op.op.out._schema.arguments if a.is_out]
            returned = op(s.input, *s.args, **s.kwargs, **dict(zip(names, outs, strict=True)))
        else:
            returned = op(s.input, *s.args, **s.kwargs, out=outs)
        assert len(returned) == len(outs) and all(r is o for r, o in zip(returned, outs, strict=True)), (
            f"{op.name} did not return the tensors given as out=")
        return outs

    for sample in _device_samples(op):
        pair = _run_on_both(op.name, call, sample)
        if pair is not None:
            _compare(op.name, *pair)


@pytest.mark.slow
@pytest.mark.parametrize("op", _params("grad"))
def test_gradients_match_cpu(op: Any) -> None:
    def call(s: Any) -> Any:
        result = op(s.input, *s.args, **s.kwargs)
        leaves = [t for t in torch.utils._pytree.tree_leaves(result)
                  if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()]
        if not leaves:
            return None
        inputs = [t for t in torch.utils._pytree.tree_leaves((s.input, s.args, s.kwargs))
                  if isinstance(t, torch.Tensor) and t.requires_grad]
        total = sum(leaf.sum() for leaf in leaves)
        return torch.autograd.grad(total, inputs, allow_unused=True)

    for sample in _device_samples(op, requires_grad=True):
        pair = _run_on_both(op.name, call, sample)
        if pair is not None and pair[1] is not None:
            _compare(op.name, *pair)
