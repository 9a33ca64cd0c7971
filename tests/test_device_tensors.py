"""Device tensors behave like CPU tensors: views, in-place writes, out=, copies, device checks, pinned memory."""

from __future__ import annotations

import pytest
import torch


def test_in_place_writes_through_views_reach_the_base() -> None:
    cpu = torch.arange(12.0).reshape(3, 4)
    dev = cpu.to("neuron")
    for view in (lambda t: t.unfold(1, 2, 2), lambda t: t[:, 1:3], lambda t: t.t(), lambda t: t.diagonal()):
        view(cpu).mul_(3).add_(1)
        view(dev).mul_(3).add_(1)
    torch.testing.assert_close(dev.cpu(), cpu)


def test_views_share_device_memory() -> None:
    base = torch.zeros(6, device="neuron")
    view = base.view(2, 3).t().select(0, 1)
    assert view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    view.fill_(7)
    assert base.cpu().tolist() == [0.0, 7.0, 0.0, 0.0, 7.0, 0.0]


def test_in_place_ops_return_their_input() -> None:
    t = torch.ones(3, device="neuron")
    assert t.add_(1) is t
    assert torch.relu_(t) is t


def test_out_variant_resizes_the_device_tensor() -> None:
    a = torch.randn(4, 5)
    out = torch.empty(0, device="neuron")
    returned = torch.mul(a.to("neuron"), 2, out=out)
    assert returned is out and out.shape == (4, 5)
    torch.testing.assert_close(out.cpu(), a * 2)


def test_ops_with_index_and_size_tensors() -> None:
    x = torch.randn(5, 3)
    index = torch.tensor([4, 0, 2])
    dev = x.to("neuron")
    torch.testing.assert_close(dev[index.to("neuron")].cpu(), x[index])
    torch.testing.assert_close(dev[index].cpu(), x[index])  # CPU indices are allowed, as on CUDA
    torch.testing.assert_close(torch.gather(dev, 0, index[:, None].expand(3, 3).to("neuron")).cpu(),
                               torch.gather(x, 0, index[:, None].expand(3, 3)))
    counts = torch.tensor([1, 2, 0, 1, 3])
    torch.testing.assert_close(torch.repeat_interleave(dev, counts.to("neuron"), dim=0).cpu(),
                               torch.repeat_interleave(x, counts, dim=0))
    assert torch.nonzero(dev > 0).device.type == "neuron"


def test_convolutions_and_ffts_match_cpu() -> None:
    torch.manual_seed(0)
    convolutions = (
        (torch.nn.Conv1d(4, 6, 3, groups=2), (2, 4, 9)),
        (torch.nn.Conv2d(3, 4, 3, padding=1), (1, 3, 8, 8)),
        (torch.nn.ConvTranspose2d(3, 2, 2, stride=2), (1, 3, 4, 4)),
        (torch.nn.Conv3d(2, 2, 2), (1, 2, 4, 4, 4)),
    )
    for conv, shape in convolutions:
        x = torch.randn(shape, requires_grad=True)
        expected = conv(x)
        expected.sum().backward()
        dx = x.detach().to("neuron").requires_grad_()
        weight_grad = conv.weight.grad.clone()
        conv.zero_grad()
        moved = conv.to("neuron")
        actual = moved(dx)
        actual.sum().backward()
        torch.testing.assert_close(actual.cpu(), expected.detach(), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(dx.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(moved.weight.grad.cpu(), weight_grad, rtol=1e-5, atol=1e-5)
        conv.to("cpu")
    signal = torch.randn(3, 64)
    torch.testing.assert_close(torch.fft.rfft(signal.to("neuron")).cpu(), torch.fft.rfft(signal))
    round_trip = torch.fft.ifft(torch.fft.fft(signal.to("neuron"))).real.cpu()
    torch.testing.assert_close(round_trip, signal, atol=1e-5, rtol=1e-5)


def test_group_norm_on_channels_last_strided_input() -> None:
    x = torch.randn(2, 4, 5, 5).to(memory_format=torch.channels_last)
    norm = torch.nn.GroupNorm(2, 4)
    expected = norm(x)
    torch.testing.assert_close(norm.to("neuron")(x.to("neuron")).cpu(), expected)


def test_cpu_tensor_beside_device_tensor_is_an_error() -> None:
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device, but found at least "
                                           r"two devices, neuron:0 and cpu!"):
        torch.ones(2, device="neuron") + torch.ones(2)
    with pytest.raises(RuntimeError, match="found at least two devices, neuron:0 and neuron:1"):
        torch.ones(2, device="neuron:0") * torch.ones(2, device="neuron:1")
    # zero-dim CPU tensors are scalars, as on every device
    assert (torch.ones(2, device="neuron") + torch.tensor(1.0)).cpu().tolist() == [2.0, 2.0]


def test_copies_between_devices() -> None:
    a = torch.randn(3, 4)
    on_0 = a.to("neuron:0")
    on_1 = on_0.to("neuron:1")
    assert on_1.device == torch.device("neuron:1")
    assert torch.equal(on_1.to("neuron:0").cpu(), a)
    strided = on_0.t().to("neuron:1")
    assert torch.equal(strided.cpu(), a.t())
    on_1.copy_(torch.zeros(3, 4, dtype=torch.float64))
    assert on_1.dtype == torch.float32 and on_1.cpu().abs().sum().item() == 0.0


def test_device_index_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"Invalid device neuron:5: this process has 2 neuron device\(s\), "
                                         r"neuron:0 to neuron:1 \(set HF_NEURON_EMULATOR_DEVICES"):
        torch.empty(1, device="neuron:5")
    with pytest.raises(ValueError, match="Invalid device neuron:2"):
        torch.ones(1).to("neuron:2")


def test_pinned_host_memory() -> None:
    host = torch.randn(16)
    pinned = host.pin_memory()
    assert pinned.is_pinned() and not host.is_pinned()
    assert pinned[4:].is_pinned(), "interior pointers of a pinned block are pinned"
    assert torch.equal(pinned.to("neuron", non_blocking=True).cpu(), host)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(8.0)), batch_size=4,
                                         pin_memory=True)
    assert all(batch.is_pinned() for (batch,) in loader)


def test_efficient_zero_tensors() -> None:
    zero = torch._efficientzerotensor((2, 3), device="neuron")
    assert zero._is_zerotensor() and zero.device.type == "neuron"
    assert (zero + 1).cpu().tolist() == [[1.0] * 3] * 2
    x = torch.randn(4, device="neuron", requires_grad=True)
    (grad,) = torch.autograd.grad(torch.sign(x).sum(), x)
    assert grad.cpu().tolist() == [0.0] * 4


def test_sparse_layouts_are_refused_clearly() -> None:
    with pytest.raises(RuntimeError, match="The neuron device supports dense strided tensors only: "
                                           "aten::_to_sparse returned a Sparse tensor"):
        torch.eye(3, device="neuron").to_sparse()
    with pytest.raises(RuntimeError, match="dense strided tensors only"):
        torch.empty(2, 2, device="neuron", layout=torch.sparse_coo)


def test_record_stream_is_accepted() -> None:
    t = torch.ones(4, device="neuron")
    t.record_stream(torch.neuron.Stream())  # FSDP1 and DDP call it; work is synchronous, so it is a no-op
    assert t.cpu().sum().item() == 4.0
