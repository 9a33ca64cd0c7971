"""Transformers models on the device equal the CPU: tiny Llama and GPT-2 forward, train step, generate.

The device runs the CPU's kernels (attention included), so results are bit-identical, not merely close.
"""

from __future__ import annotations

import copy

import pytest
import torch


def _llama() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return LlamaForCausalLM(config).eval()


def _gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=64, bos_token_id=1,
                        eos_token_id=2, pad_token_id=0)
    return GPT2LMHeadModel(config).eval()


@pytest.fixture(params=["llama", "gpt2"])
def models(request: pytest.FixtureRequest) -> tuple[torch.nn.Module, torch.nn.Module]:
    cpu = _llama() if request.param == "llama" else _gpt2()
    return cpu, copy.deepcopy(cpu).to("neuron")


def test_forward_parity(models: tuple[torch.nn.Module, torch.nn.Module]) -> None:
    cpu, device = models
    ids = torch.randint(3, 128, (2, 16))
    with torch.no_grad():
        expected = cpu(ids).logits
        actual = device(ids.to("neuron")).logits
    assert actual.device == torch.device("neuron:0")
    assert torch.equal(actual.cpu(), expected)


def test_train_steps_parity(models: tuple[torch.nn.Module, torch.nn.Module]) -> None:
    cpu, device = models
    cpu.train()
    device.train()
    for model in (cpu, device):
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
    # AdamW picks foreach=True on a device and False on the CPU: pin it for a like-for-like comparison.
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3, foreach=False) for m in (cpu, device)]
    ids = torch.randint(3, 128, (2, 16))
    losses: list[tuple[float, float]] = []
    for _ in range(3):
        step = []
        for model, batch in zip((cpu, device), (ids, ids.to("neuron")), strict=False):
            loss = model(batch, labels=batch).loss
            loss.backward()
            step.append(loss.item())
        for p, q in zip(cpu.parameters(), device.parameters(), strict=False):
            assert torch.equal(q.grad.cpu(), p.grad)
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad()
        losses.append((step[0], step[1]))
    assert all(cpu_loss == device_loss for cpu_loss, device_loss in losses)
    assert losses[-1][1] < losses[0][1], "loss goes down"
    for p, q in zip(cpu.parameters(), device.parameters(), strict=False):
        assert torch.equal(q.detach().cpu(), p.detach())


@pytest.mark.parametrize("cache", [None, "static"])
def test_greedy_generate_equals_cpu(models: tuple[torch.nn.Module, torch.nn.Module], cache: str | None) -> None:
    cpu, device = models
    ids = torch.randint(3, 128, (2, 5))
    mask = torch.ones_like(ids)
    kwargs = {"max_new_tokens": 8, "do_sample": False, "cache_implementation": cache}
    expected = cpu.generate(ids, attention_mask=mask, **kwargs)
    actual = device.generate(ids.to("neuron"), attention_mask=mask.to("neuron"), **kwargs)
    assert actual.device.type == "neuron"
    assert torch.equal(actual.cpu(), expected)
