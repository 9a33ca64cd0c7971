"""`trl sft` trains on neuron without a device flag (bf16, LoRA, with `--device neuron`), with the losses of a
`--use_cpu` run; trl names the device."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from _helpers_patches import SCRIPTS, run

pytestmark = pytest.mark.usefixtures("neuron")  # the training arguments unpickle only with the device type

#: ``trl sft`` on a free port (``0``), so that launches of parallel test workers never share accelerate's default.
TRL_SFT = [str(SCRIPTS / "trl"), "sft", "--main_process_port", "0"]

#: A ``sitecustomize`` that every Python process of a command imports first: a global forward hook notes the device
#: of each parameter that took part in a forward pass, written at exit to ``$PARAMETER_DEVICES.<pid>``.
_PROBE = """
    import atexit, json, os
    import torch

    seen = {}

    def note(module, args, output):
        for parameter in module.parameters(recurse=False):
            seen.setdefault(str(parameter.device), set()).add(id(parameter))

    torch.nn.modules.module.register_module_forward_hook(note)
    atexit.register(lambda: seen and open(f"{os.environ['PARAMETER_DEVICES']}.{os.getpid()}", "w").write(
        json.dumps({device: len(ids) for device, ids in seen.items()})))
"""


def _probed(out: Path) -> dict[str, str]:
    """The environment that makes a command's processes note their parameters' devices next to ``out``."""
    probe = out.parent / f"{out.name}-probe"
    probe.mkdir(parents=True, exist_ok=True)
    (probe / "sitecustomize.py").write_text(textwrap.dedent(_PROBE))
    path = os.pathsep.join(p for p in (str(probe), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "PARAMETER_DEVICES": str(probe / "devices")}


def _parameter_devices(out: Path) -> dict[str, int]:
    """The parameters that took part in a forward pass, by device, over the processes of a command
    (:func:`_probed`)."""
    found: dict[str, int] = {}
    for path in (out.parent / f"{out.name}-probe").glob("devices.*"):
        for device, count in json.loads(path.read_text()).items():
            found[device] = found.get(device, 0) + count
    return found


def _sft(command: list[str], model: Path, dataset: Path, out: Path, *extra: str, lr: str = "3e-3",
         env: dict[str, str] | None = None) -> dict[str, Any]:
    run([*command, "--model_name_or_path", str(model), "--dataset_name", str(dataset), "--output_dir", str(out),
         "--max_steps", "5", "--learning_rate", lr, "--logging_steps", "1", "--report_to", "none", *extra],
        cwd=out.parent, env={**_probed(out), **(env or {})})
    args = torch.load(out / "training_args.bin", weights_only=False)
    state = json.loads((out / "checkpoint-5" / "trainer_state.json").read_text())
    return {"device": args.__dict__["_setup_devices"], "bf16": args.bf16, "pad": args.pad_to_multiple_of,
            "losses": [entry["loss"] for entry in state["log_history"] if "loss" in entry],
            "parameters": _parameter_devices(out)}


def _assert_on_neuron_0(parameters: dict[str, int]) -> None:
    """Every parameter that took part in a forward pass was on neuron:0 (the whole model, not split or left behind)."""
    assert set(parameters) == {"neuron:0"} and parameters["neuron:0"] > 0, parameters


def _assert_trained_on_neuron(result: dict[str, Any]) -> None:
    assert result["device"] == torch.device("neuron:0")
    _assert_on_neuron_0(result["parameters"])
    assert result["bf16"] is True and result["pad"] == 128  # trl pads to 128 on neuron
    losses = result["losses"]
    assert len(losses) == 5 and losses[-1] < losses[0], losses


def test_the_probe_sees_a_model_split_over_two_devices(tmp_path: Path) -> None:
    """What TrainingArguments chose says nothing of where the layers are: a model split over neuron:0 and neuron:1
    (device_map over two devices) is seen as such, and fails the check of the whole model on neuron:0."""
    out = tmp_path / "split"
    run([sys.executable, "-c", "import torch; a = torch.nn.Linear(2, 2).to('neuron:0'); "
         "b = torch.nn.Linear(2, 2).to('neuron:1'); b(a(torch.ones(1, 2, device='neuron:0')).to('neuron:1'))"],
        env={**_probed(out), "HF_NEURON_EMULATOR_DEVICES": "2"})
    parameters = _parameter_devices(out)
    assert parameters == {"neuron:0": 2, "neuron:1": 2}
    with pytest.raises(AssertionError):
        _assert_on_neuron_0(parameters)


@pytest.mark.slow
def test_trl_sft_trains_on_neuron(tiny_llama: Path, chat_dataset: Path, tmp_path: Path) -> None:
    result = _sft(TRL_SFT, tiny_llama, chat_dataset, tmp_path / "out")
    _assert_trained_on_neuron(result)
    assert (tmp_path / "out" / "model.safetensors").is_file()


@pytest.mark.slow
def test_trl_sft_on_neuron_matches_a_use_cpu_run(tiny_llama: Path, chat_dataset: Path, tmp_path: Path) -> None:
    same = ("--bf16", "true", "--pad_to_multiple_of", "128", "--seed", "0")  # what trl chooses on neuron, on both
    neuron = _sft(TRL_SFT, tiny_llama, chat_dataset, tmp_path / "neuron", *same)
    cpu = _sft(TRL_SFT, tiny_llama, chat_dataset, tmp_path / "cpu", *same, "--use_cpu", "true")
    assert neuron["device"] == torch.device("neuron:0") and cpu["device"] == torch.device("cpu")
    _assert_on_neuron_0(neuron["parameters"])
    assert set(cpu["parameters"]) == {"cpu"}
    assert neuron["losses"] == pytest.approx(cpu["losses"], rel=1e-3), (neuron["losses"], cpu["losses"])


@pytest.mark.slow
def test_trl_sft_in_one_process_on_a_two_device_machine(tiny_llama: Path, chat_dataset: Path, tmp_path: Path) -> None:
    result = _sft([*TRL_SFT, "--num_processes", "1"], tiny_llama, chat_dataset, tmp_path / "out",
                  env={"HF_NEURON_EMULATOR_DEVICES": "2"})
    _assert_trained_on_neuron(result)  # the whole model on neuron:0, not split over both devices


@pytest.mark.slow
def test_trl_sft_with_lora_trains_on_neuron(tiny_llama: Path, chat_dataset: Path, tmp_path: Path) -> None:
    result = _sft(TRL_SFT, tiny_llama, chat_dataset, tmp_path / "out", "--use_peft",
                  "--lora_r", "8", lr="3e-2")
    _assert_trained_on_neuron(result)
    assert json.loads((tmp_path / "out" / "adapter_config.json").read_text())["r"] == 8


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["trl", "sft", "--device", "neuron", "--main_process_port", "0"],  # trl passes both on to `accelerate launch`
    ["accelerate", "launch", "--device", "neuron", "--main_process_port", "0", "-m", "trl.scripts.sft"],  # trl 1.16
    # has no `-m trl.cli`; port 0: a free port, so that parallel test workers' launches never share one
], ids=["trl-sft-device", "accelerate-launch-device"])
def test_trl_sft_with_device_neuron(command: list[str], tiny_llama: Path, chat_dataset: Path, tmp_path: Path) -> None:
    command = [str(SCRIPTS / command[0]), *command[1:]]
    _assert_trained_on_neuron(_sft(command, tiny_llama, chat_dataset, tmp_path / "out"))


def test_trl_peak_flops_lookup_names_the_neuron_device() -> None:
    from accelerate import Accelerator
    from trl.trainer.utils import get_peak_flops_per_device

    accelerator = Accelerator()
    assert accelerator.device.type == "neuron"
    assert get_peak_flops_per_device(accelerator, "bfloat16") is None  # an unknown chip, not a crash


@pytest.mark.slow
def test_trl_sft_trains_a_vision_language_model_on_neuron_like_the_cpu(tiny_llava: Path, image_chat_dataset: Path,
                                                                       tmp_path: Path) -> None:
    """trl's vision-language collator path (images in the dataset, the model's processor): on neuron without a device
    flag, in float32 so that the losses compare with a CPU run of the same batches (trl pads to 128 on neuron only;
    padding is masked out of the loss)."""
    command = [*TRL_SFT, "--num_processes", "1"]
    options = ("--bf16", "False", "--per_device_train_batch_size", "2")
    neuron = _sft(command, tiny_llava, image_chat_dataset, tmp_path / "neuron", *options)
    cpu = _sft([*command, "--device", "cpu"], tiny_llava, image_chat_dataset, tmp_path / "cpu", *options)
    assert neuron["device"] == torch.device("neuron:0") and neuron["pad"] == 128
    assert cpu["device"] == torch.device("cpu") and cpu["pad"] is None
    assert neuron["losses"] == pytest.approx(cpu["losses"], rel=1e-3), (neuron["losses"], cpu["losses"])
    assert neuron["losses"][-1] < neuron["losses"][0]
