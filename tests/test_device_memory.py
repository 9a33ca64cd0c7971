"""Per-device memory accounting, peaks, and the optional capacity with a device-style out-of-memory error."""

from __future__ import annotations

import torch
from _helpers import run


def test_accounting_is_per_device() -> None:
    before = [torch.neuron.memory_allocated(i) for i in range(2)]
    t = torch.empty(1000, dtype=torch.float64, device="neuron:1")
    assert torch.neuron.memory_allocated(1) - before[1] == 8000
    assert torch.neuron.memory_allocated(0) == before[0]
    moved = t.to("neuron:0")
    assert torch.neuron.memory_allocated(0) - before[0] == 8000
    del t, moved
    assert [torch.neuron.memory_allocated(i) for i in range(2)] == before


def test_results_of_cpu_kernels_are_accounted() -> None:
    x = torch.randn(256, 256, device="neuron")
    before = torch.neuron.memory_allocated()
    y = x @ x
    assert torch.neuron.memory_allocated() - before == y.numel() * 4
    del y
    assert torch.neuron.memory_allocated() == before


def test_a_resized_kernel_result_is_accounted_at_its_new_size() -> None:
    x = torch.ones(16, device="neuron")
    before = torch.neuron.memory_allocated()
    y = x * 2                      # an adopted CPU result
    y.resize_(1000)                # its memory replaced while its storage lives: the old memory is released now
    assert torch.neuron.memory_allocated() - before == 1000 * 4
    assert y[:16].cpu().tolist() == [2.0] * 16
    del y
    assert torch.neuron.memory_allocated() == before


def test_capacity_raises_a_device_out_of_memory_error() -> None:
    result = run(
        """
        import torch
        kept = torch.empty(2**20, dtype=torch.uint8, device="neuron")       # 1 MiB
        try:
            torch.empty(2**21, dtype=torch.uint8, device="neuron")          # 2 MiB more than fits
        except torch.OutOfMemoryError as error:
            print("OOM", error)
        print("stats", torch.neuron.memory_stats()["num_ooms"], torch.neuron.mem_get_info()[1])
        y = torch.ones(2**20, dtype=torch.uint8, device="neuron:1")         # the other device has its own
        print("other device ok", y.sum().item())
        """,
        {"HF_NEURON_EMULATOR_MEMORY_GB": str(2.5 / 1024)},
    )
    assert result.returncode == 0, result.stderr
    assert ("OOM neuron out of memory. Tried to allocate 0.00 GiB on neuron:0 (0.00 GiB total capacity; "
            "0.00 GiB already allocated). Reduce the batch size, sequence length or model size, or raise "
            "HF_NEURON_EMULATOR_MEMORY_GB.") in result.stdout
    assert f"stats 1 {int(2.5 * 2**20)}" in result.stdout
    assert "other device ok 1048576" in result.stdout


def test_torch_accelerator_memory_functions_work_on_neuron() -> None:
    """TorchNeuron 2.34: "the torch.accelerator memory functions work on Neuron" (the device's allocator is a
    c10::DeviceAllocator; before it, each raised "Allocator for PrivateUse1 is not a DeviceAllocator")."""
    accelerator = torch.accelerator
    assert accelerator.current_accelerator() == torch.device("neuron")
    x = torch.empty(1000, dtype=torch.float32, device="neuron")
    assert accelerator.memory_allocated() == torch.neuron.memory_allocated()
    assert accelerator.memory_reserved() == torch.neuron.memory_reserved()
    peak = torch.empty(10_000, dtype=torch.float32, device="neuron")
    del peak
    assert accelerator.max_memory_allocated() == torch.neuron.max_memory_allocated() >= accelerator.memory_allocated()
    accelerator.reset_peak_memory_stats()
    assert accelerator.max_memory_allocated() == torch.neuron.memory_allocated()
    stats = accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.neuron.memory_allocated()
    assert stats["num_ooms"] == torch.neuron.memory_stats()["num_ooms"]
    accelerator.empty_cache()
    free, total = accelerator.get_memory_info()
    assert (free, total) == torch.neuron.mem_get_info() or abs(free - torch.neuron.mem_get_info()[0]) < 2**26
    assert 0 < free <= total
    del x
