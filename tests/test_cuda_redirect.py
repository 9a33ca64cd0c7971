"""The opt-in CUDA -> neuron redirect: exact matches only, logged once each, off by default, reversible, validated."""

from __future__ import annotations

import pytest
import torch
from _helpers_patches import run

from hf_neuron.patches import cuda_redirect

SCRIPT = """
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).cuda()
x = torch.randn(3, 4).to("cuda:0")
x = x.to("cuda:0")
y = torch.zeros(2, device="cuda")
generator = torch.Generator(device="cuda").manual_seed(0)
with torch.autocast("cuda", dtype=torch.bfloat16):
    out = model(x)
torch.cuda.manual_seed(0)
torch.cuda.synchronize()
print(torch.cuda.is_available(), torch.cuda.device_count(), device, isinstance(device, torch.device),
      next(model.parameters()).device, x.device, y.device, generator.device, out.dtype,
      torch.cuda.memory_allocated() > 0, "cuda.txt".endswith("cuda.txt"))
"""


def test_a_cuda_script_runs_on_neuron_and_each_redirect_is_logged_once() -> None:
    result = run(SCRIPT, env={"HF_NEURON_CUDA_REDIRECT": "1"})
    assert result.stdout.split() == ["True", "1", "neuron", "True", "neuron:0", "neuron:0", "neuron:0", "neuron:0",
                                     "torch.bfloat16", "True", "True"]
    logged = [line for line in result.stderr.splitlines() if line.startswith("HF_NEURON_CUDA_REDIRECT: ")]
    assert "HF_NEURON_CUDA_REDIRECT: Tensor.to: 'cuda:0' -> 'neuron:0'" in logged
    assert "HF_NEURON_CUDA_REDIRECT: torch.cuda.is_available: answered by torch.neuron.is_available" in logged
    assert "HF_NEURON_CUDA_REDIRECT: Module.cuda: None -> device(type='neuron', index=0)" in logged
    assert len(logged) == len(set(logged))


def test_the_redirect_is_off_by_default() -> None:
    result = run("import torch; print(torch.cuda.is_available(), torch.device('cuda').type)")
    assert result.stdout.split() == ["False", "cuda"]
    assert "HF_NEURON_CUDA_REDIRECT" not in result.stderr


@pytest.mark.usefixtures("neuron")
def test_only_exact_cuda_devices_are_redirected() -> None:
    redirect = cuda_redirect.redirect
    assert redirect("cuda") == "neuron" and redirect("cuda:1") == "neuron:1"
    assert redirect(torch.device("cuda", 1)) == torch.device("neuron", 1)
    for untouched in ("cudaa", "my cuda", "cuda:x", "CUDA", "cpu", 0, None, torch.device("cpu")):
        assert redirect(untouched) == untouched


@pytest.mark.usefixtures("neuron")
def test_enable_and_revert_restore_torch() -> None:
    originals = (torch.device, torch.Tensor.to, torch.zeros, torch.cuda.is_available)
    registry = cuda_redirect.enable()
    try:
        assert torch.cuda.is_available() is True
        assert torch.device("cuda:1") == torch.device("neuron:1")
        assert all(state.status == "applied" for state in registry.states())
    finally:
        registry.revert()
    assert (torch.device, torch.Tensor.to, torch.zeros, torch.cuda.is_available) == originals
    assert "to" not in vars(torch.Tensor)  # the inherited method is visible again
    assert torch.device("cuda").type == "cuda"


def test_the_redirect_refuses_a_machine_without_neuron_and_a_bad_value() -> None:
    code = """
        from hf_neuron import patches
        try:
            patches.install()
        except Exception as error:
            print(type(error).__name__, error)
    """
    no_device = run(code, env={"HF_NEURON_CUDA_REDIRECT": "1", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert no_device.stdout.strip() == (
        "CudaRedirectError HF_NEURON_CUDA_REDIRECT=1 but no neuron device: install torch-neuronx on Trainium, or set "
        "HF_NEURON_EMULATOR=1 for the reference device")
    bad = run(code, env={"HF_NEURON_CUDA_REDIRECT": "yes please", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert bad.stdout.strip() == ("SettingError HF_NEURON_CUDA_REDIRECT='yes please' is not a switch value: use 1 to "
                                  "turn it on or 0 to turn it off")
