"""Device generators: torch.Generator(device="neuron"), seeding, state round trips, CPU-identical streams."""

from __future__ import annotations

import torch


def test_device_generator_objects() -> None:
    generator = torch.Generator(device="neuron")
    assert generator.device == torch.device("neuron:0")
    generator.manual_seed(42)
    first = torch.randn(8, device="neuron", generator=generator).cpu()
    generator.manual_seed(42)
    assert torch.equal(first, torch.randn(8, device="neuron", generator=generator).cpu())
    assert torch.Generator(device="neuron:1").device == torch.device("neuron:1")


def test_device_streams_equal_cpu_streams_for_the_same_seed() -> None:
    cpu = torch.Generator().manual_seed(7)
    dev = torch.Generator(device="neuron").manual_seed(7)
    assert torch.equal(torch.rand(16, generator=cpu), torch.rand(16, device="neuron", generator=dev).cpu())
    assert torch.equal(torch.randint(0, 100, (16,), generator=cpu),
                       torch.randint(0, 100, (16,), device="neuron", generator=dev).cpu())


def test_torch_manual_seed_reaches_the_device() -> None:
    torch.manual_seed(123)
    a = torch.randn(4, device="neuron").cpu()
    torch.manual_seed(123)
    assert torch.equal(a, torch.randn(4, device="neuron").cpu())


def test_device_default_generator_is_independent_of_the_cpu_one() -> None:
    torch.manual_seed(0)
    a = torch.randn(4, device="neuron").cpu()
    torch.manual_seed(0)
    torch.randn(100)  # consumes the CPU generator only
    assert torch.equal(a, torch.randn(4, device="neuron").cpu())


def test_generator_state_round_trip() -> None:
    generator = torch.Generator(device="neuron").manual_seed(1)
    state = generator.get_state()
    a = torch.rand(5, device="neuron", generator=generator).cpu()
    generator.set_state(state)
    assert torch.equal(a, torch.rand(5, device="neuron", generator=generator).cpu())
    clone = torch.Generator(device="neuron").set_state(generator.get_state())
    assert torch.equal(torch.rand(3, device="neuron", generator=clone).cpu(),
                       torch.rand(3, device="neuron", generator=generator).cpu())


def test_fork_rng_restores_device_state() -> None:
    torch.manual_seed(9)
    with torch.random.fork_rng(device_type="neuron"):
        torch.rand(10, device="neuron")
    after = torch.rand(3, device="neuron").cpu()
    torch.manual_seed(9)
    assert torch.equal(after, torch.rand(3, device="neuron").cpu())


def test_dropout_draws_from_the_device_generator() -> None:
    x = torch.ones(1000, device="neuron")
    torch.neuron.manual_seed(3)
    state = torch.neuron.get_rng_state()
    first = torch.nn.functional.dropout(x, 0.5).cpu()
    torch.randn(100)  # moves the CPU generator only
    torch.neuron.set_rng_state(state)
    assert torch.equal(torch.nn.functional.dropout(x, 0.5).cpu(), first)
    assert set(first.unique().tolist()) == {0.0, 2.0} and 350 < (first == 0).sum().item() < 650
