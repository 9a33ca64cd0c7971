"""PEFT on neuron: LoRA training and `merge_and_unload` equal to the CPU; adapters load straight onto neuron."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron")




def _lora(path: Path, device: str) -> Any:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(path).to(device)
    return get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights="gaussian"))


def _train(model: Any, steps: int = 5) -> list[float]:
    ids = torch.arange(1, 33).reshape(2, 16).to(model.device)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, foreach=False)
    losses = []
    for _ in range(steps):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def test_lora_training_and_merge_on_neuron_match_the_cpu(tiny_llama: Path) -> None:
    on_neuron, on_cpu = _lora(tiny_llama, "neuron"), _lora(tiny_llama, "cpu")
    assert {p.device for p in on_neuron.parameters()} == {torch.device("neuron:0")}
    neuron_losses, cpu_losses = _train(on_neuron), _train(on_cpu)
    assert neuron_losses[-1] < neuron_losses[0]
    assert max(abs(a - b) for a, b in zip(neuron_losses, cpu_losses, strict=False)) < 1e-4
    merged, merged_cpu = on_neuron.merge_and_unload(), on_cpu.merge_and_unload()
    assert {p.device for p in merged.parameters()} == {torch.device("neuron:0")}
    ids = torch.arange(1, 17)[None]
    with torch.no_grad():
        difference = (merged(ids.to("neuron")).logits.cpu() - merged_cpu(ids).logits).abs().max().item()
    assert difference < 1e-4


def test_adapters_load_straight_onto_neuron(tiny_llama: Path, tmp_path: Path) -> None:
    from peft import PeftModel
    from peft.utils import load_peft_weights
    from transformers import AutoModelForCausalLM

    trained = _lora(tiny_llama, "neuron")
    _train(trained, steps=1)
    trained.save_pretrained(tmp_path)
    weights = load_peft_weights(str(tmp_path), device="neuron")
    assert {tensor.device for tensor in weights.values()} == {torch.device("neuron:0")}
    base = AutoModelForCausalLM.from_pretrained(tiny_llama).to("neuron")
    loaded = PeftModel.from_pretrained(base, tmp_path)  # no torch_device: `infer_device()` answers neuron
    expected = dict(trained.named_parameters())
    for name, parameter in loaded.named_parameters():
        if "lora_" in name:
            assert parameter.device == torch.device("neuron:0")
            assert torch.equal(parameter.cpu(), expected[name].cpu())


def _sparse_adapter(kind: str, device: str) -> Any:
    """A small MLP with a SHiRA or FRoD adapter (both keep a sparse factor), on ``device``, same seed everywhere."""
    from peft import FrodConfig, ShiraConfig, get_peft_model

    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    config = ShiraConfig(r=2, target_modules=["0", "2"]) if kind == "shira" else FrodConfig(target_modules=["0", "2"])
    return get_peft_model(base, config).to(device)


def _steps(model: Any, steps: int = 3) -> tuple[list[float], Any]:
    torch.manual_seed(1)
    x, y = torch.randn(4, 16), torch.randn(4, 8)
    device = next(model.parameters()).device
    x, y = x.to(device), y.to(device)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, model.merge_and_unload()(x).detach().cpu()


@pytest.mark.parametrize("kind", ["shira", "frod"])
def test_sparse_adapters_train_and_merge_on_neuron_as_on_the_cpu(kind: str) -> None:
    """PEFT's SHiRA and FRoD build a sparse COO factor, which neuron has no kernels for: the patches build it dense."""
    neuron_losses, neuron_merged = _steps(_sparse_adapter(kind, "neuron"))
    cpu_losses, cpu_merged = _steps(_sparse_adapter(kind, "cpu"))
    assert neuron_losses[-1] < neuron_losses[0]
    assert max(abs(a - b) for a, b in zip(neuron_losses, cpu_losses, strict=True)) < 1e-5
    assert torch.allclose(neuron_merged, cpu_merged, atol=1e-5)


@pytest.mark.parametrize("kind", ["shira", "frod"])
def test_without_the_patches_the_sparse_factor_is_refused_on_neuron(kind: str) -> None:
    from _helpers_patches import reinstalled

    with reinstalled(), pytest.raises(RuntimeError, match="supports dense strided tensors only"):
        _steps(_sparse_adapter(kind, "neuron"), steps=1)
