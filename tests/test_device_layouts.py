"""The layouts of the device's results under the real backend's routes (the trainium profile): a native operator's
result is contiguous, as TorchNeuron allocates it, so code that the CPU runs on its channels-last-strided results —
a diffusers UNet's attention block (a transpose and reshape, then the residual add), a convolution, then a group norm
whose composite views its input — runs on the device too, with the CPU's values."""

from __future__ import annotations

from _helpers import run

TRAINIUM_ROUTES = {"HF_NEURON_EMULATOR_DISPATCH": "trainium", "HF_NEURON_EMULATOR_MEMORY_FORMATS": "strict"}

#: The UNet2DModel pattern that failed with "view size is not compatible with input tensor's size and stride": an
#: attention block's output (B, C, H, W) reshaped from (B, H*W, C) plus its residual is channels-last-strided on the
#: CPU; a convolution keeps that layout there, and group_norm's composite (TorchNeuron has no native_group_norm) views
#: its input, which a channels-last tensor refuses. Then F.pad and interpolate, which ask for their input's layout
#: (a channels-last request is refused on Trainium).
_UNET_BLOCK = """
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    tokens, residual = torch.randn(2, 16, 8), torch.randn(2, 8, 4, 4)
    weight, gamma, beta = torch.randn(8, 8, 3, 3), torch.randn(8), torch.randn(8)
    def block(tokens, residual, weight, gamma, beta):
        x = tokens.transpose(-1, -2).reshape(2, 8, 4, 4) + residual
        x = F.conv2d(x, weight, padding=1)
        x = F.group_norm(x, 4, gamma, beta)
        x = F.pad(x, (0, 1, 0, 1))
        return F.interpolate(x, scale_factor=2.0, mode="nearest")
    expected = block(tokens, residual, weight, gamma, beta)
    actual = block(*(t.to("neuron") for t in (tokens, residual, weight, gamma, beta)))
    print(actual.device.type, torch.allclose(actual.cpu(), expected, atol=1e-5, rtol=1e-5))
"""


def test_a_unet_block_of_channels_last_strided_results_runs_under_the_trainium_routes() -> None:
    result = run(_UNET_BLOCK, TRAINIUM_ROUTES)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["neuron", "True"]


def test_the_native_results_are_contiguous_and_the_views_are_not() -> None:
    result = run("""
        import torch
        x = torch.randn(2, 16, 8).transpose(-1, -2).reshape(2, 8, 4, 4)  # channels-last strides
        on_cpu = x + 1
        on_device = x.to("neuron") + 1
        print(on_cpu.is_contiguous(), on_device.is_contiguous(), on_device.transpose(1, 2).is_contiguous())
        """, TRAINIUM_ROUTES)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "False"]


def test_with_the_cpu_routes_the_device_keeps_the_cpu_kernel_layout() -> None:
    """The control: without the real backend's routes the device runs the CPU's kernels and keeps their layouts."""
    result = run("""
        import torch
        x = torch.randn(2, 16, 8).transpose(-1, -2).reshape(2, 8, 4, 4)
        print((x.to("neuron") + 1).stride() == (x + 1).stride())
        """, {"HF_NEURON_EMULATOR_DISPATCH": "cpu"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True"]


def test_a_compiled_graph_keeps_the_strides_it_was_traced_with() -> None:
    # The attention's result is (batch, heads, tokens, dim) over memory laid out (batch, tokens, heads, dim) on the
    # CPU, so the traced graph drops the `.contiguous()` after the transpose and views the result: with the eager
    # rule's contiguous result the view fails ("view size is not compatible"), as every compile case of the CI slice
    # did. Eager on the device keeps the rule; the compiled graph runs with the traced strides.
    result = run("""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 6, 8) for _ in range(3))
    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).contiguous().view(2, 6, 32)
    expected = attend(q, k, v)
    on_device = [t.to("neuron") for t in (q, k, v)]
    eager = attend(*on_device)
    compiled = torch.compile(attend, backend="neuron", dynamic=False)(*on_device)
    print(torch.equal(eager.cpu(), expected), torch.allclose(compiled.cpu(), expected, atol=1e-6))
    print(F.scaled_dot_product_attention(*on_device).is_contiguous())
    """, {**TRAINIUM_ROUTES, "HF_NEURON_EMULATOR_OP_LOG": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True", "True", "True"], result.stdout  # the eager rule still holds


#: qwen2_audio's encoder and nemotron3_diarization's speaker cache (nemo_speechlm) pool the time axis of a
#: (batch, time, channels) result with avg_pool1d of its transpose. TorchNeuron has no avg_pool2d: its structured
#: composite allocates the output in the layout the input's strides suggest, channels-last for this unsqueezed
#: transpose, and TorchNeuron's allocation (empty.memory_format) honours that request. The device refused it ("Neuron
#: tensors only support contiguous or preserve memory format") before it placed the refusal where TorchNeuron does.
_POOLED_TRANSPOSE = """
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x = torch.randn(2, 6, 8)
    def pool(x):
        return F.avg_pool1d((x + 1).transpose(1, 2), 2, 2).transpose(1, 2)
    actual = pool(x.to("neuron"))
    print(actual.device.type, torch.equal(actual.cpu(), pool(x)))
"""


def test_a_pooled_transpose_runs_under_the_trainium_routes() -> None:
    result = run(_POOLED_TRANSPOSE, TRAINIUM_ROUTES)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["neuron", "True"]


def test_the_allocation_honours_channels_last_and_the_user_requests_refuse_it() -> None:
    """TorchNeuron's empty.memory_format lays out channels-last (4-D) and channels-last-3d (5-D) and every other
    request contiguously; its contiguous and _to_copy kernels refuse any format but contiguous and preserve."""
    result = run("""
    import torch
    x = torch.randn(1, 3, 4, 4, device="neuron")
    print(torch.empty(1, 3, 4, 4, device="neuron", memory_format=torch.channels_last).stride(),
          torch.empty(1, 3, 2, 4, 4, device="neuron", memory_format=torch.channels_last_3d).is_contiguous(
              memory_format=torch.channels_last_3d),
          torch.empty(3, 4, 4, device="neuron", memory_format=torch.channels_last).is_contiguous(),
          x.clone(memory_format=torch.channels_last).is_contiguous(memory_format=torch.channels_last))
    for request in (lambda: x.contiguous(memory_format=torch.channels_last),
                    lambda: x.to(memory_format=torch.channels_last),
                    lambda: x.requires_grad_().contiguous(memory_format=torch.channels_last)):
        try:
            request()
            print("allowed")
        except RuntimeError as error:
            print("refused" if "only support contiguous or preserve memory format" in str(error) else error)
    """, TRAINIUM_ROUTES)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[:4] == ["(48, 1, 12, 3) True True True", "refused", "refused", "refused"]


def test_a_compiled_group_norm_of_a_permuted_input_runs_under_the_trainium_routes() -> None:
    """TorchNeuron has no native_group_norm: eagerly its ATen composite runs on the device and views its input. In a
    graph the trace keeps a permuted (channels-last) input as it is (UNetMotionModel, UNet2DModel), which that view
    refuses, while the Neuron compiler lowers the operator itself: the backend decomposes it while tracing
    (``TRACE_DECOMPOSED``), so the graph's reshapes follow the traced strides and the values are the CPU's."""
    result = run("""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x, gamma, beta = torch.randn(2, 4, 4, 8), torch.randn(8), torch.randn(8)
    def norm(x, gamma, beta):
        return F.group_norm(x.permute(0, 3, 1, 2) * 2, 4, gamma, beta)
    compiled = torch.compile(norm, backend="neuron", dynamic=False)
    actual = compiled(*(t.to("neuron") for t in (x, gamma, beta)))
    print(actual.device.type, torch.allclose(actual.cpu(), norm(x, gamma, beta), atol=1e-5, rtol=1e-5))
    """, TRAINIUM_ROUTES)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["neuron", "True"]


def test_a_compiled_view_of_the_fused_attention_output_follows_its_traced_layout() -> None:
    """Under the trainium routes 4-D attention is TorchNeuron's overrideable fused kernel, whose meta function lays its
    output out in the query's dimension order. kimi_linear transposes that output and views it, which the trace allows
    for a transposed query: with a value head size other than the query's (the attention written out, not the CPU's
    flash kernel) the result must still have the traced layout inside the graph."""
    result = run("""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 12, 4, size).transpose(1, 2) for size in (32, 32, 16))
    def attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).view(2, 12, -1)
    actual = torch.compile(attention, backend="neuron", dynamic=False)(*(t.to("neuron") for t in (q, k, v)))
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 12, -1)
    print(actual.device.type, torch.allclose(actual.cpu(), expected, atol=1e-5, rtol=1e-5))
    """, TRAINIUM_ROUTES)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["neuron", "True"]


def test_a_traced_decomposition_asking_for_channels_last_compiles() -> None:
    """torch.compile traces interpolate with FakeTensors, through a decomposition that asks ``contiguous`` for the
    channels-last layout its input's strides suggest (UNet2DModel's upsampler at 1x1, deepseek_vl_hybrid, hy_v4_vl).
    TorchNeuron's contiguous kernel sits at the backend key, below the FakeTensor's mode, which decomposes the call
    itself: the trace compiles and runs on Trainium. (The same request of a device tensor, eagerly, with or without a
    gradient, is still refused: the test of the allocation and the user requests above.)"""
    result = run("""
    import torch
    import torch.nn.functional as F
    x = torch.randn(2, 32, 1, 1).to("neuron").as_strided((2, 32, 1, 1), (32, 1, 32, 32))
    def upsample(t):
        return F.interpolate(t, scale_factor=2.0, mode="nearest") * 2
    print(torch.equal(torch.compile(upsample, backend="neuron", dynamic=False)(x).cpu(), upsample(x).cpu()))
    """, TRAINIUM_ROUTES)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["True"]


#: UNet3DConditionModel's and I2VGenXLUNet's temporal transformer at the tiny model's 1x1 resolution, one video per
#: rank (the ddp scenario): (frames, channels, 1, 1) from a native operator, viewed as (1, channels, frames, 1, 1), then
#: group_norm. The CPU's kernel returned that result with channels-last strides, which its size-1 dimensions leave
#: contiguous; ATen then suggests channels-last-3d for the view, group_norm's .contiguous() of it does nothing, and the
#: composite's view (TorchNeuron has no native_group_norm) failed: "view size is not compatible with input tensor's
#: size and stride". TorchNeuron allocates the result with the contiguous strides of its shape, for which ATen suggests
#: the contiguous format.
_TEMPORAL_NORM = """
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x = torch.randn(2, 32, 1, 1).to(memory_format=torch.channels_last)
    gamma, beta = torch.randn(32), torch.randn(32)
    def temporal_norm(x, gamma, beta):
        y = x + 1
        return y.stride(), F.group_norm(y[None, :].reshape(1, 2, 32, 1, 1).permute(0, 2, 1, 3, 4), 8, gamma, beta)
    (cpu_strides, expected), (strides, actual) = (temporal_norm(x, gamma, beta),
                                                 temporal_norm(*(t.to("neuron") for t in (x, gamma, beta))))
    print(cpu_strides, strides, torch.allclose(actual.cpu(), expected, atol=1e-5, rtol=1e-5))
"""


def test_a_native_result_has_the_contiguous_strides_of_its_shape() -> None:
    result = run(_TEMPORAL_NORM, TRAINIUM_ROUTES)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[0] == "(32, 1, 32, 32) (32, 1, 1, 1) True"
