"""`accelerate launch --device neuron|cpu|cuda`: the option, its errors, the forced device, fp16 on neuron."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
import torch
from _helpers_patches import SCRIPTS, run

from hf_neuron.patches import installation
from hf_neuron.patches.accelerate import PATCHES

NO_NEURON = ("no neuron device: install torch-neuronx on Trainium, or set HF_NEURON_EMULATOR=1 for the reference "
             "device")

SCRIPT = """
import os, torch
from accelerate import Accelerator
from transformers import TrainingArguments

accelerator = Accelerator()
model = accelerator.prepare(torch.nn.Linear(4, 4))
with accelerator.autocast():
    dtype = model(torch.ones(2, 4, device=accelerator.device)).dtype
print("RESULT", os.environ.get("ACCELERATE_TORCH_DEVICE"), accelerator.device, next(model.parameters()).device,
      accelerator.mixed_precision, type(accelerator.scaler).__name__, TrainingArguments("out", report_to=[]).device)
"""


def _launch(tmp_path: Path, *options: str, command: str = "accelerate", **env: str) -> list[str]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    launch = [str(SCRIPTS / command)] + (["launch"] if command == "accelerate" else [])
    result = run([*launch, *options, str(script)], cwd=tmp_path, env=env)
    return next(line for line in result.stdout.splitlines() if line.startswith("RESULT")).split()[1:]


def test_help_shows_the_device_option() -> None:
    for command in (["accelerate", "launch"], ["accelerate-launch"]):
        help_text = run([str(SCRIPTS / command[0]), *command[1:], "--help"]).stdout
        assert "--device {neuron,cpu,cuda}" in help_text
        assert "Force the device type of the launched processes" in help_text


def test_device_neuron_without_a_neuron_device_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text("print('never runs')")
    for device, message in (("neuron", NO_NEURON), ("cuda", "no cuda device: install a CUDA build of torch")):
        result = run([str(SCRIPTS / "accelerate"), "launch", "--device", device, "script.py"], cwd=tmp_path,
                     env={"HF_NEURON_EMULATOR": "0"}, check=False)
        assert result.returncode == 2
        assert f"error: argument --device: {message}" in result.stderr
        assert "never runs" not in result.stdout


def test_unknown_device_is_refused(tmp_path: Path) -> None:
    result = run([str(SCRIPTS / "accelerate-launch"), "--device", "tpu", "x.py"], cwd=tmp_path, check=False)
    assert result.returncode == 2
    assert "argument --device: invalid choice: 'tpu' (choose from neuron, cpu, cuda)" in result.stderr


def test_device_neuron_forces_neuron_in_the_launched_process(tmp_path: Path) -> None:
    assert _launch(tmp_path, "--device", "neuron") == ["neuron", "neuron:0", "neuron:0", "no", "NoneType", "neuron:0"]


@pytest.mark.usefixtures("neuron")
def test_the_rank_device_gets_the_current_index() -> None:
    from accelerate.state import PartialState

    patch = next(patch for patch in PATCHES if patch.id == "accelerate.rank-device-has-an-index")
    assert PartialState.set_device.__wrapped__ is installation().finder.registry.objects(patch.id)[0]
    state = argparse.Namespace(device=torch.device("neuron"))
    patch.replace(lambda self: None)(state)
    assert state.device == torch.device("neuron", torch.neuron.current_device())
    for kept in (torch.device("neuron", 1), torch.device("cpu"), None):
        state.device = kept
        patch.replace(lambda self: None)(state)
        assert state.device == kept


def test_device_cpu_forces_the_cpu_although_neuron_is_there(tmp_path: Path) -> None:
    assert _launch(tmp_path, "--device", "cpu", command="accelerate-launch") == [
        "cpu", "cpu", "cpu", "no", "NoneType", "cpu"]


def test_fp16_mixed_precision_on_neuron(tmp_path: Path) -> None:
    assert _launch(tmp_path, "--device", "neuron", "--mixed_precision", "fp16") == [
        "neuron", "neuron:0", "neuron:0", "fp16", "GradScaler", "neuron:0"]


@pytest.mark.usefixtures("neuron")
def test_device_sets_the_default_number_of_processes_and_exports_the_device() -> None:
    from accelerate.commands import launch

    seen: dict[str, object] = {}

    def original(args: argparse.Namespace) -> None:
        seen.update(processes=args.num_processes, cpu=args.cpu, device=os.environ.get("ACCELERATE_TORCH_DEVICE"))

    patch = next(patch for patch in PATCHES if patch.id == "accelerate.launch-forces-device")
    assert launch.launch_command.__wrapped__ is installation().finder.registry.objects(patch.id)[0]
    forcing = patch.replace(original)
    forcing(argparse.Namespace(device="neuron", num_processes=None, cpu=False))
    assert seen == {"processes": torch.neuron.device_count(), "cpu": False, "device": "neuron"}
    forcing(argparse.Namespace(device="neuron", num_processes=1, cpu=False))
    assert seen["processes"] == 1
    forcing(argparse.Namespace(device="cpu", num_processes=None, cpu=False))
    assert seen == {"processes": 1, "cpu": True, "device": "cpu"}
    assert "ACCELERATE_TORCH_DEVICE" not in os.environ
    with pytest.raises(ValueError, match=r"`--cpu` contradicts `--device neuron`: pass only one of them"):
        forcing(argparse.Namespace(device="neuron", num_processes=None, cpu=True))
