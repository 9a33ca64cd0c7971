"""Fidelity switches: the real backend's 64-bit behaviour, memory formats, the op log, copy-instead-of-alias
(the fallback prediction itself: tests/test_device_fallback_prediction.py)."""

from __future__ import annotations

from _helpers import run


def test_64bit_types_are_computed_in_32_bits_when_narrow() -> None:
    code = """
        import torch
        x = torch.tensor([1.0 + 1e-12, 3.0], dtype=torch.float64)
        print(repr((x.to("neuron") * 1).cpu()[0].item() == 1.0), (x.to("neuron") * 1).dtype)
        big = torch.tensor([2**40 + 1], dtype=torch.int64)
        print(repr((big.to("neuron") + 0).cpu().item()))
        """
    exact = run(code)
    narrow = run(code, {"HF_NEURON_EMULATOR_64BIT": "narrow"})
    assert exact.returncode == narrow.returncode == 0, exact.stderr + narrow.stderr
    assert exact.stdout.split() == ["False", "torch.float64", str(2**40 + 1)]
    assert narrow.stdout.split() == ["True", "torch.float64", "1"], "values round through float32 / int32"


def test_narrowing_keeps_python_numbers_weak_in_type_promotion() -> None:
    code = """
        import torch
        index = torch.arange(3, device="neuron")
        print((index + 0.5).dtype, (index * 2).dtype, (torch.ones(2, device="neuron") * 2.5).dtype)
        print((index.double() + 1).dtype, (index + 2**40).cpu().tolist())
        """
    narrow = run(code, {"HF_NEURON_EMULATOR_64BIT": "narrow"})
    assert narrow.returncode == 0, narrow.stderr
    assert narrow.stdout.splitlines() == ["torch.float32 torch.int64 torch.float32", "torch.float64 [0, 1, 2]"], \
        "as on the CPU, except that a 64-bit value rounds through 32 bits"


def test_narrowing_converts_only_what_a_32_bit_rounding_changes() -> None:
    """A 64-bit tensor whose values are all exact in 32 bits is used as it is (no conversion is dispatched for it or
    for such a result); a single value that is not makes the whole tensor round, strided or not, and so does a
    result that is not."""
    code = """
        import torch
        from torch.profiler import profile
        small = torch.tensor([[5, 7], [-3, 2**31 - 1]], device="neuron")
        with profile() as trace:
            product = small * 1
        print(sum(event.name == "aten::_to_copy" for event in trace.events()), product.cpu().tolist())
        print((small + 1).cpu().tolist())
        mixed = torch.tensor([[5, 2**40 + 1], [7, 9]], device="neuron")
        print((mixed * 1).cpu().tolist(), (mixed.t() * 1).cpu().tolist())
        """
    narrow = run(code, {"HF_NEURON_EMULATOR_64BIT": "narrow"})
    assert narrow.returncode == 0, narrow.stderr
    assert narrow.stdout.splitlines() == [
        "0 [[5, 7], [-3, 2147483647]]",
        "[[6, 8], [-2, -2147483648]]",
        "[[5, 1], [7, 9]] [[5, 7], [1, 9]]",
    ]


def test_strict_memory_formats_refuse_channels_last() -> None:
    code = """
        import torch
        x = torch.randn(1, 3, 4, 4, device="neuron")
        print(x.contiguous(memory_format=torch.contiguous_format).is_contiguous())
        try:
            x.contiguous(memory_format=torch.channels_last)
            print("allowed")
        except RuntimeError as error:
            print("refused:", error)
        """
    assert run(code).stdout.splitlines()[-1] == "allowed"
    strict = run(code, {"HF_NEURON_EMULATOR_MEMORY_FORMATS": "strict"})
    assert strict.stdout.splitlines() == [
        "True", "refused: Neuron tensors only support contiguous or preserve memory format"]


def test_op_log_records_what_ran() -> None:
    result = run(
        """
        import torch
        torch.neuron.reset_op_log()
        x = torch.randn(4, 4, device="neuron")
        (x @ x).relu().sum()
        torch.nonzero(x)
        ops = torch.neuron.get_executed_ops()
        print(sorted(op for op in ("aten::mm", "aten::relu", "aten::sum.dim_IntList", "aten::nonzero") if op in ops))
        print(torch.neuron.get_fallback_ops())
        """,
        {"HF_NEURON_EMULATOR_OP_LOG": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["['aten::mm', 'aten::nonzero', 'aten::relu', 'aten::sum.dim_IntList']",
                                          "{'aten::normal_': 1}"], "randn's normal_ is not native on Trainium"


def test_copy_aliasing_mode_computes_the_same_but_views_are_copies() -> None:
    code = """
        import torch
        a = torch.arange(12.0).reshape(3, 4)
        x = a.to("neuron")
        x.add_(1).mul_(2)
        print(torch.equal(x.cpu(), (a + 1) * 2))
        y = torch.zeros(4, 4, device="neuron")
        y.unfold(1, 2, 2).fill_(5)      # unfold has no device kernel: its view is made by a CPU kernel
        print(y.cpu().sum().item())
        """
    assert run(code).stdout.split() == ["True", "80.0"]
    assert run(code, {"HF_NEURON_EMULATOR_ALIASING": "copy"}).stdout.split() == ["True", "0.0"]
