"""Saving and loading from the device: torch.save/load, safetensors, save_pretrained, tied weights."""

from __future__ import annotations

import io
from pathlib import Path

import torch


def test_torch_save_and_load_keep_the_device() -> None:
    tensors = {"a": torch.randn(3, 4).to("neuron:1"), "b": torch.arange(5, device="neuron")}
    tensors["view"] = tensors["a"][1:]
    buffer = io.BytesIO()
    torch.save(tensors, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert loaded["a"].device == torch.device("neuron:1") and loaded["b"].device == torch.device("neuron:0")
    assert torch.equal(loaded["a"].cpu(), tensors["a"].cpu())
    assert loaded["view"].untyped_storage().data_ptr() == loaded["a"].untyped_storage().data_ptr()
    buffer.seek(0)
    on_cpu = torch.load(buffer, map_location="cpu")
    assert on_cpu["a"].device.type == "cpu" and torch.equal(on_cpu["a"], tensors["a"].cpu())


def test_safetensors_round_trip(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = {"w": torch.randn(4, 4).to("neuron"), "b": torch.zeros(4, device="neuron")}
    save_file(tensors, tmp_path / "t.safetensors")
    loaded = load_file(tmp_path / "t.safetensors", device=0)  # safetensors accepts an index, not "neuron"
    assert loaded["w"].device == torch.device("neuron:0")
    assert torch.equal(loaded["w"].cpu(), tensors["w"].cpu())


def test_tied_weights_stay_tied_across_to_neuron() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=64, n_embd=32, n_layer=1, n_head=2, n_positions=32)
    model = GPT2LMHeadModel(config).eval()
    parameter = model.transformer.wte.weight
    model.to("neuron")
    assert model.lm_head.weight is model.transformer.wte.weight
    assert model.transformer.wte.weight is parameter, "the Parameter object survives the move"
    ids = torch.randint(0, 64, (2, 8))
    cpu_model = GPT2LMHeadModel(config).eval()
    cpu_model.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    cpu_model(ids, labels=ids).loss.backward()
    model(ids.to("neuron"), labels=ids.to("neuron")).loss.backward()
    torch.testing.assert_close(model.transformer.wte.weight.grad.cpu(), cpu_model.transformer.wte.weight.grad,
                               rtol=1e-5, atol=1e-6)


def test_save_pretrained_round_trip(tmp_path: Path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1)
    model = LlamaForCausalLM(config).to("neuron").eval()
    model.save_pretrained(tmp_path)
    reloaded = LlamaForCausalLM.from_pretrained(tmp_path, device_map="neuron").eval()
    assert next(reloaded.parameters()).device == torch.device("neuron:0")
    ids = torch.randint(0, 64, (1, 6), device="neuron")
    with torch.no_grad():
        assert torch.equal(model(ids).logits.cpu(), reloaded(ids).logits.cpu())
