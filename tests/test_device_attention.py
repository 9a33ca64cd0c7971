"""scaled_dot_product_attention on the device, with the real backend's routes: the overrideable fused kernel for 4-D
inputs (native on Trainium), computed as the CPU computes attention, forward and backward."""

from __future__ import annotations

from _helpers import run

TRAINIUM = {"HF_NEURON_EMULATOR_OP_LOG": "1", "HF_NEURON_EMULATOR_DISPATCH": "trainium"}

_COMPARE = """
    import torch
    import torch.nn.functional as F

    def leaves(*tensors):
        return [t.detach().clone().requires_grad_() for t in tensors]

    def attend(q, k, v, mask, **kwargs):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kwargs)
        (out * weights.to(out.device)).sum().backward()
        return [out, q.grad, k.grad, v.grad] + ([mask.grad] if mask is not None and mask.requires_grad else [])

    def worst(kwargs, bias_grad=False, mask_shape=(2, 1, 5, 7), dtype=torch.float32, lowest_rows=False):
        torch.manual_seed(0)
        q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 2, 7, 8), torch.randn(2, 2, 7, 8)
        mask = torch.randn(mask_shape) if mask_shape else None
        if lowest_rows:  # rows masked everywhere with the lowest float, as transformers masks a padded query
            mask[:, :, 1:3] = torch.finfo(mask.dtype).min
        tensors = [t.to(dtype) for t in (q, k, v)] + ([mask.to(dtype)] if mask is not None else [])
        cpu = leaves(*tensors)
        dev = leaves(*(t.to("neuron") for t in tensors))
        if not bias_grad and mask is not None:
            cpu[3].requires_grad_(False); dev[3].requires_grad_(False)
        expected = attend(*cpu, *([None] if mask is None else []), enable_gqa=True, **kwargs)
        got = attend(*dev, *([None] if mask is None else []), enable_gqa=True, **kwargs)
        return largest([float((g.cpu().float() - e.float()).abs().max()) for g, e in zip(got, expected, strict=True)])

    def largest(errors):  # NaN when any is one: Python's max keeps a NaN only when it comes first
        return float(torch.tensor(errors, dtype=torch.float64).max())

    weights = torch.randn(2, 4, 5, 8)
"""


def test_fused_attention_computes_what_the_cpu_computes() -> None:
    result = run(_COMPARE + """
    torch.neuron.reset_op_log()
    print(worst({}))                                      # the CPU's flash kernel applies: float mask
    print(worst({"is_causal": True}, mask_shape=None))    # causal, no mask
    print(worst({}, bias_grad=True))                      # a mask that wants its gradient: written out
    print(worst({}, dtype=torch.bfloat16) < 2e-2)
    print(sorted(torch.neuron.get_executed_ops()))
    print(torch.neuron.get_fallback_ops())
    """, TRAINIUM)
    assert result.returncode == 0, result.stderr
    *errors, bf16, executed, fallback = result.stdout.splitlines()
    assert all(float(error) < 1e-5 for error in errors), errors
    assert bf16 == "True"
    assert "aten::_scaled_dot_product_fused_attention_overrideable" in executed
    assert "aten::_scaled_dot_product_fused_attention_overrideable_backward" in executed
    assert "flash" not in executed
    assert "scaled_dot_product" not in fallback, "the fused kernel is native on Trainium"


def test_rows_masked_with_the_lowest_float_get_the_cpus_gradients() -> None:
    """A row of the mask that is the dtype's lowest value everywhere (a padded query, pix2struct's decoder) attends
    uniformly, as on the CPU; the written-out attention (a mask that wants its gradient) once normalised it by a
    logsumexp that rounds to that value, giving every position 1, and gradients thousands of times the CPU's."""
    result = run(_COMPARE + """
    print(largest([0.0, float("nan")]), largest([float("nan"), 0.0]))  # a NaN gradient after a good output
    print(worst({}, bias_grad=True, lowest_rows=True))
    print(worst({}, lowest_rows=True))
    """, TRAINIUM)
    assert result.returncode == 0, result.stderr
    nan_last, nan_first, *errors = result.stdout.split()
    assert (nan_last, nan_first) == ("nan", "nan"), "a NaN anywhere is the worst error (Python's max dropped it)"
    assert all(float(error) < 1e-5 for error in errors), result.stdout


def test_dropout_draws_one_mask_for_forward_and_backward() -> None:
    result = run("""
        import torch
        import torch.nn.functional as F
        q, k, v = (torch.randn(1, 2, 6, 8, device="neuron", requires_grad=True) for _ in range(3))
        w = torch.randn(1, 2, 6, 8, device="neuron")
        torch.manual_seed(1)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
        (out * w).sum().backward()
        # the output is linear in v under a fixed mask: <w, out> = <dL/dv, v>
        print(torch.allclose((out * w).sum().cpu(), (v.grad * v).sum().cpu(), atol=1e-4))
        torch.manual_seed(1)
        again = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
        no_dropout = F.scaled_dot_product_attention(q, k, v)
        print(torch.equal(out.cpu(), again.cpu()), torch.equal(out.cpu(), no_dropout.cpu()))
        """, {**TRAINIUM, "HF_NEURON_EMULATOR_RNG": "cpu"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", "False"], "the seed makes the mask; no dropout differs"


def test_the_route_is_the_real_backends_choice() -> None:
    code = """
        import torch
        import torch.nn.functional as F
        torch.neuron.reset_op_log()
        F.scaled_dot_product_attention(*(torch.randn(1, 2, 4, 8, device="neuron") for _ in range(3)))
        four_d = torch.neuron.get_executed_ops()
        torch.neuron.reset_op_log()
        F.scaled_dot_product_attention(*(torch.randn(2, 4, 8, device="neuron") for _ in range(3)))
        print(sorted(four_d)); print(sorted(torch.neuron.get_executed_ops()))
        print(torch.neuron.get_fallback_ops())
        """
    trainium = run(code, TRAINIUM)
    assert trainium.returncode == 0, trainium.stderr
    four_d, three_d, fallback = trainium.stdout.splitlines()[-3:]
    assert "aten::_scaled_dot_product_fused_attention_overrideable" in four_d
    assert "overrideable" not in three_d and "aten::bmm" in three_d, "3-D inputs: the math decomposition"
    assert "scaled_dot_product" not in fallback
    cpu = run(code, {**TRAINIUM, "HF_NEURON_EMULATOR_DISPATCH": "cpu"})
    assert cpu.returncode == 0, cpu.stderr
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in cpu.stdout.splitlines()[-3], \
        "without the routes: the CPU's flash kernel, which would count as a fallback"


def test_an_attention_whose_output_gets_no_gradient_passes_none_back() -> None:
    # DDP's output sink passes no gradient (an undefined tensor) for an output the loss does not use: the
    # attention's backward then gets none, and must give none, as the CPU's does.
    result = run("""
    import torch
    import torch.nn.functional as F

    class Sink(torch.autograd.Function):
        @staticmethod
        def forward(ctx, used, unused):
            ctx.set_materialize_grads(False)
            return used.clone(), unused.clone()

        @staticmethod
        def backward(ctx, used, unused):
            return used, unused

    for device in ("cpu", "neuron"):
        x = torch.randn(1, 2, 4, 8, device=device, requires_grad=True)
        attended = F.scaled_dot_product_attention(x, x, x)
        used, _ = Sink.apply(x * 2, attended)
        used.sum().backward()
        print(device, torch.equal(x.grad.cpu(), torch.full((1, 2, 4, 8), 2.0)))
    """, TRAINIUM)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["cpu", "True", "neuron", "True"]
