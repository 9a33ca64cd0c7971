"""Mixed precision with accelerate on neuron: fp16 (autocast + a neuron GradScaler) and bf16 train like fp32 and like
the same mixed precision on the CPU (bf16 step for step; fp16 to the same loss, since accelerate scales no CPU
gradients and the neuron run skips its first, overflowing steps)."""

from __future__ import annotations

import pytest
import torch


def _train(mixed_precision: str, steps: int = 30, cpu: bool = False) -> tuple[list[float], object]:
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    accelerator = Accelerator(mixed_precision=mixed_precision, cpu=cpu)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer = accelerator.prepare(model, optimizer)
    inputs = torch.randn(64, 8, generator=torch.Generator().manual_seed(1)).to(accelerator.device)
    targets = inputs.sum(1, keepdim=True)
    losses = []
    for _ in range(steps):
        with accelerator.autocast():
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert next(model.parameters()).device == torch.device("cpu" if cpu else "neuron:0")
    return losses, accelerator.scaler


@pytest.mark.parametrize("mixed_precision", ["fp16", "bf16"])
@pytest.mark.usefixtures("neuron")
def test_mixed_precision_trains_on_neuron_like_fp32(mixed_precision: str) -> None:
    reference, _ = _train("no")
    losses, scaler = _train(mixed_precision)
    if mixed_precision == "fp16":
        assert isinstance(scaler, torch.amp.GradScaler) and scaler._device == "neuron" and scaler.is_enabled()
        assert scaler.get_scale() < 2.0**16  # the first steps overflowed and were skipped, as on a GPU
    assert losses[-1] < 0.2 * losses[0]
    assert abs(losses[-1] - reference[-1]) < 0.05 * reference[0]
    cpu, _ = _train(mixed_precision, cpu=True)
    if mixed_precision == "bf16":
        assert losses == pytest.approx(cpu, rel=1e-5)
    else:
        assert abs(losses[-1] - cpu[-1]) < 0.05 * cpu[0]
