"""Checkpoints load straight onto neuron: safetensors with a neuron device, accelerate's loaders, `load_state`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron")




@pytest.mark.parametrize(("device", "expected"), [
    ("neuron", "neuron:0"), ("neuron:1", "neuron:1"), (torch.device("neuron", 1), "neuron:1"), ("cpu", "cpu"),
])
def test_safetensors_loads_onto_a_neuron_device(tmp_path: Path, device: object, expected: str) -> None:
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    tensors = {"a": torch.randn(3, 4), "b": torch.arange(5)}
    save_file(tensors, tmp_path / "t.safetensors")
    loaded = load_file(tmp_path / "t.safetensors", device=device)
    for name, tensor in tensors.items():
        assert loaded[name].device == torch.device(expected) and torch.equal(loaded[name].cpu(), tensor)
    with safe_open(tmp_path / "t.safetensors", framework="pt", device=device) as opened:
        assert opened.get_slice("a")[1:].device == torch.device(expected)


def test_accelerate_loads_a_checkpoint_onto_neuron(tiny_llama: Path) -> None:
    from accelerate import init_empty_weights, load_checkpoint_and_dispatch
    from accelerate.utils import load_checkpoint_in_model
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM

    expected = load_file(tiny_llama / "model.safetensors")
    for device_map, device in (({"": "neuron"}, "neuron:0"), ({"": "neuron:1"}, "neuron:1")):
        with init_empty_weights():
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(tiny_llama))
        model = load_checkpoint_and_dispatch(model, str(tiny_llama / "model.safetensors"), device_map=device_map)
        for name, parameter in model.state_dict().items():
            assert parameter.device == torch.device(device), name
            if name in expected:
                assert torch.equal(parameter.cpu(), expected[name])
    model = AutoModelForCausalLM.from_pretrained(tiny_llama)
    load_checkpoint_in_model(model, str(tiny_llama / "model.safetensors"), device_map={"": "neuron:1"})
    assert next(model.parameters()).device == torch.device("neuron:1")


def test_accelerator_state_round_trip_on_neuron(tmp_path: Path) -> None:
    from accelerate import Accelerator

    accelerator = Accelerator()
    model = accelerator.prepare(torch.nn.Linear(4, 4))
    saved = {name: tensor.cpu().clone() for name, tensor in model.state_dict().items()}
    accelerator.save_state(tmp_path)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
    accelerator.load_state(tmp_path)
    for name, tensor in model.state_dict().items():
        assert tensor.device == torch.device("neuron:0") and torch.equal(tensor.cpu(), saved[name])
