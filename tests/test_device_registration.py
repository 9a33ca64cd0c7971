"""The reference device registers as a vendor backend does, only when asked, and never over the real one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from _helpers import run

import hf_neuron


def test_backend_reports_the_reference_device() -> None:
    info = hf_neuron.backend()
    assert info.kind == "reference"
    assert info.version == hf_neuron.__version__
    assert info.device_count == 2
    assert "reference device" in str(info)


def test_registered_as_privateuse1_named_neuron() -> None:
    assert torch._C._get_privateuse1_backend_name() == "neuron"
    assert torch.get_device_module("neuron") is torch.neuron
    assert torch.accelerator.current_accelerator() == torch.device("neuron")
    assert torch.accelerator.device_count() == 2


def test_tensors_are_plain_tensors_in_device_memory() -> None:
    t = torch.arange(4.0, device="neuron")
    assert type(t) is torch.Tensor
    assert t.device == torch.device("neuron:0") and t.is_neuron
    assert t.untyped_storage().device == torch.device("neuron:0")


def test_host_cannot_read_device_memory_directly() -> None:
    t = torch.ones(2, device="neuron")
    with pytest.raises(TypeError, match="can't convert neuron:0 device type tensor to numpy"):
        t.numpy()
    assert t.cpu().numpy().tolist() == [1.0, 1.0]


def test_generated_methods() -> None:
    module = torch.nn.Linear(2, 2).neuron()
    assert module.weight.device.type == "neuron"
    assert torch.ones(1).neuron(1).device == torch.device("neuron:1")
    assert torch.ones(1).untyped_storage().neuron().device.type == "neuron"


def test_off_by_default() -> None:
    result = run(
        "import torch, hf_neuron; print(hasattr(torch, 'neuron'), hf_neuron.backend().kind, "
        "torch._C._get_privateuse1_backend_name())",
        {"HF_NEURON_EMULATOR": None},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "none", "privateuseone"]


def test_not_registered_when_the_real_backend_is_installed(tmp_path: Path) -> None:
    fake = tmp_path / "torch_neuronx"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('the real package must not be imported by hf-neuron')\n")
    result = run(
        "import torch, hf_neuron; print(hasattr(torch, 'neuron'), hf_neuron.backend().kind)",
        {"PYTHONPATH": f"{tmp_path}:{':'.join(sys.path)}"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "none"]
    assert "HF_NEURON_EMULATOR=1 ignored: the real TorchNeuron package `torch_neuronx` is installed" in result.stderr
    assert result.stderr.count("ignored") == 1


def test_not_registered_when_privateuse1_is_taken() -> None:
    result = run(
        """
        import torch
        torch.utils.rename_privateuse1_backend("other")
        from hf_neuron import _autoload, backends
        _autoload.autoload()
        print(hasattr(torch, "neuron"), backends.autoload_status())
        """,
        {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "False HF_NEURON_EMULATOR=1 ignored: PrivateUse1 is already registered as `other` in this process"
    )


def test_compile_backend_only_while_the_device_is_active() -> None:
    code = "import torch._dynamo as d; print('neuron' in d.list_backends(exclude_tags=()))"
    assert run(code, {"HF_NEURON_EMULATOR": None}).stdout.strip() == "False"
    assert run(code).stdout.strip() == "True"


def test_autoload_does_not_import_heavy_modules_when_off() -> None:
    result = run(
        "import sys, torch; print(sorted(m for m in ('torch._dynamo', 'transformers', 'accelerate', "
        "'hf_neuron.device') if m in sys.modules))",
        {"HF_NEURON_EMULATOR": None},
    )
    assert result.stdout.strip() == "[]", result.stdout
