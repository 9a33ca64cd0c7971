"""Detection by device: accelerate, transformers, diffusers, peft and trl see `neuron` once a backend registered it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from _helpers_patches import SCRIPTS, run

from hf_neuron.patches import neuron_device

pytestmark = pytest.mark.usefixtures("neuron")




def test_accelerate_detects_neuron_everywhere_it_copied_the_probe() -> None:
    import accelerate.commands.launch
    import accelerate.state
    import accelerate.utils.imports
    from accelerate import PartialState

    detect = accelerate.utils.imports.is_neuron_available
    assert detect() is True and detect(check_device=True) is True
    assert accelerate.state.is_neuron_available is detect
    assert accelerate.commands.launch.is_neuron_available is detect
    assert PartialState().default_device == torch.device("neuron")


def test_a_false_seen_before_the_device_existed_does_not_stick(monkeypatch: pytest.MonkeyPatch) -> None:
    from accelerate.utils import is_neuron_available
    from transformers.utils import is_torch_neuron_available

    monkeypatch.setattr(neuron_device, "neuron_registered", lambda: False)
    is_neuron_available.cache_clear()
    assert is_neuron_available() is False and is_torch_neuron_available() is False
    monkeypatch.undo()
    assert is_neuron_available() is True and is_torch_neuron_available() is True


def test_a_forced_other_device_hides_neuron(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from accelerate.utils import is_neuron_available
    from transformers import TrainingArguments

    monkeypatch.setenv("ACCELERATE_TORCH_DEVICE", "cpu")
    assert is_neuron_available() is False
    assert TrainingArguments(tmp_path, report_to=[]).device == torch.device("cpu")


def test_transformers_training_arguments_choose_neuron(tmp_path: Path) -> None:
    from transformers import TrainingArguments
    from transformers.utils import is_torch_bf16_gpu_available

    args = TrainingArguments(tmp_path, report_to=[], torch_compile=True)
    assert args.device == torch.device("neuron:0")
    assert args.torch_compile_backend == "neuron"
    assert is_torch_bf16_gpu_available() is True


def test_transformers_lists_neuron_among_available_devices() -> None:
    from transformers.utils import get_available_devices

    assert get_available_devices() == frozenset({"cpu", "neuron"})


def test_diffusers_detects_neuron() -> None:
    from diffusers.utils import is_torch_neuronx_available
    from diffusers.utils.torch_utils import get_device

    assert is_torch_neuronx_available() is True
    assert get_device() == "neuron"


def test_peft_infers_neuron() -> None:
    import peft.peft_model
    from peft.utils import infer_device

    assert infer_device() == "neuron"
    assert peft.peft_model.infer_device is infer_device


def test_accelerate_env_and_config_default_report_neuron(tmp_path: Path) -> None:
    accelerate = str(SCRIPTS / "accelerate")
    env = run([accelerate, "env"]).stdout
    assert "- PyTorch accelerator: NEURON" in env and "- NEURON type: neuron:0" in env
    config = tmp_path / "default.json"
    run([accelerate, "config", "default", "--config_file", str(config)], env={"HF_NEURON_EMULATOR_DEVICES": "2"})
    written = json.loads(config.read_text())
    assert (written["distributed_type"], written["num_processes"]) == ("MULTI_NEURON", 2)


def test_trl_env_names_the_neuron_devices() -> None:
    assert "- accelerator(s): hf-neuron reference device\n" in run([str(SCRIPTS / "trl"), "env"]).stdout


def test_nothing_is_patched_with_hf_neuron_patches_0() -> None:
    code = "from accelerate.utils import is_neuron_available; print(is_neuron_available())"
    assert run(code, env={"HF_NEURON_PATCHES": "0"}).stdout.strip() == "False"
    assert run(code).stdout.strip() == "True"
