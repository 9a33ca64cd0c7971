"""`trl sft` trains on neuron without a device flag (bf16, LoRA, with `--device neuron`), with the losses of a
`--use_cpu` run; trl names the device."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from _helpers_patches import SCRIPTS, run

pytestmark = pytest.mark.usefixtures("neuron")  # the training arguments unpickle only with the device type

#: ``trl sft`` on a free port (``0``), so that launches of parallel test workers never share accelerate's default.
TRL_SFT = [str(SCRIPTS / "trl"), "sft", "--main_process_port", "0"]


def _sft(command: list[str], model: Path, dataset: Path, out: Path, *extra: str, lr: str = "3e-3",
         env: dict[str, str] | None = None) -> dict[str, Any]:
    run([*command, "--model_name_or_path", str(model), "--dataset_name", str(dataset), "--output_dir", str(out),
         "--max_steps", "5", "--learning_rate", lr, "--logging_steps", "1", "--report_to", "none", *extra],
        cwd=out.parent, env=env)
    args = torch.load(out / "training_args.bin", weights_only=False)
    state = json.loads((out / "checkpoint-5" / "trainer_state.json").read_text())
    return {"device": args.__dict__["_setup_devices"], "bf16": args.bf16, "pad": args.pad_to_multiple_of,
            "losses": [entry["loss"] for entry in state["log_history"] if "loss" in entry]}


def _assert_trained_on_neuron(result: dict[str, Any]) -> None:
    assert result["device"] == torch.device("neuron:0")
    assert result["bf16"] is True and result["pad"] == 128  # trl pads to 128 on neuron
    losses = result["losses"]
    assert len(losses) == 5 and losses[-1] < losses[0], losses


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
