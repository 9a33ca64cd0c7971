"""torch.autocast("neuron") applies CUDA's op policies in bfloat16 and float16."""

from __future__ import annotations

import pytest
import torch


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_dtypes_per_op_class(dtype: torch.dtype) -> None:
    a = torch.randn(4, 8, device="neuron")
    b = torch.randn(8, 3, device="neuron")
    linear = torch.nn.Linear(8, 3).to("neuron")
    conv = torch.nn.Conv1d(4, 2, 3).to("neuron")
    with torch.autocast("neuron", dtype=dtype):
        assert torch.is_autocast_enabled("neuron")
        # lower precision: matmuls, linear, convolutions
        assert (a @ b).dtype == dtype
        assert linear(a).dtype == dtype
        assert conv(a[None]).dtype == dtype
        assert torch.bmm(a[None], b[None]).dtype == dtype
        # float32: softmax, norms, losses, exp/log
        low = (a @ b)
        assert torch.softmax(low, -1).dtype == torch.float32
        assert torch.log_softmax(low, -1).dtype == torch.float32
        assert torch.nn.functional.layer_norm(low, (3,)).dtype == torch.float32
        assert torch.nn.functional.mse_loss(low, low).dtype == torch.float32
        assert torch.exp(low).dtype == torch.float32
        # promote: mixed inputs widen
        assert torch.addcmul(a, a.to(dtype), a).dtype == torch.float32
        # untouched: elementwise ops keep their input dtype
        assert (low + low).dtype == dtype
    assert not torch.is_autocast_enabled("neuron")


def test_autocast_matches_cpu_autocast_numerics() -> None:
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = a @ b
    with torch.autocast("neuron", dtype=torch.bfloat16):
        actual = a.to("neuron") @ b.to("neuron")
    assert torch.equal(actual.cpu(), expected)


def test_backward_through_autocast() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).to("neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        loss = model(torch.randn(4, 8, device="neuron")).float().pow(2).mean()
    loss.backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in model.parameters())
