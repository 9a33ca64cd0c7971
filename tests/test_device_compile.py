"""torch.compile(backend="neuron"): AOTAutograd on the device, results equal eager, the documented rules."""

from __future__ import annotations

import pytest
import torch


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                               torch.nn.Linear(16, 4)).to("neuron")


def test_forward_and_backward_equal_eager() -> None:
    torch._dynamo.reset()
    model = _model()
    compiled = torch.compile(model, backend="neuron")
    x = torch.randn(5, 8, device="neuron")
    eager = model(x)
    out = compiled(x)
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), eager.cpu())
    (grads_eager,) = torch.autograd.grad(eager.sum(), [model[0].weight])
    (grads_compiled,) = torch.autograd.grad(compiled(x).sum(), [model[0].weight])
    torch.testing.assert_close(grads_compiled.cpu(), grads_eager.cpu())


def test_dynamic_true_is_rejected() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_model(), backend="neuron", dynamic=True)
    with pytest.raises(Exception, match="Neuron backend does not support dynamic=True"):
        compiled(torch.randn(3, 8, device="neuron"))


def test_other_modes_warn_and_fall_back_to_default() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_model(), backend="neuron", mode="max-autotune")
    with pytest.warns(UserWarning, match="Neuron backend does not support mode='max-autotune', falling back to "
                                         "default mode."):
        compiled(torch.randn(2, 8, device="neuron"))


def test_compile_failures_raise() -> None:
    torch._dynamo.reset()

    def broken(x: torch.Tensor) -> torch.Tensor:
        return x + torch.ones(3, device="neuron:1")  # a device mismatch

    with pytest.raises(Exception, match="same device"):
        torch.compile(broken, backend="neuron")(torch.ones(3, device="neuron:0"))


def test_each_new_shape_recompiles_statically() -> None:
    torch._dynamo.reset()
    model = _model()
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    for batch in (2, 3, 4):
        x = torch.randn(batch, 8, device="neuron")
        torch.testing.assert_close(compiled(x).cpu(), model(x).cpu())
