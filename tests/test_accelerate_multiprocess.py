"""`accelerate launch --device neuron --num_processes 2`: a plain loop, a Trainer (DDP by default, FSDP2 with
`--use_fsdp --fsdp_version 2`), `trl sft`; checkpoints saved and resumed with the neuron RNG states."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from _helpers_distributed import WORLD, rank_results, run_launcher, succeeded
from _helpers_patches import SCRIPTS

pytestmark = pytest.mark.distributed

#: `--main_process_port 0`: a free port, so that launches of parallel test workers never share one.
LAUNCH = [str(SCRIPTS / "accelerate"), "launch", "--device", "neuron", "--num_processes", str(WORLD),
          "--main_process_port", "0"]

LOOP = """
import json, torch
from accelerate import Accelerator
from accelerate.utils import set_seed

accelerator = Accelerator()
set_seed(0)  # the same model and data on every rank
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.utils.data.TensorDataset(torch.randn(32, 8), torch.randn(32, 1))
model, optimizer, loader = accelerator.prepare(model, optimizer, torch.utils.data.DataLoader(data, batch_size=4))
batches = 0
for x, y in loader:  # each rank gets its own half of the data
    accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
    optimizer.step()
    optimizer.zero_grad()
    batches += 1
weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
replicas = accelerator.gather(weights.unsqueeze(0))
accelerator.save_state("state")
accelerator.wait_for_everyone()  # rank 0 writes the model that every rank loads
after_save = torch.rand(4, device=accelerator.device).tolist()
accelerator.load_state("state")
after_load = torch.rand(4, device=accelerator.device).tolist()
saved = torch.load(f"state/random_states_{accelerator.process_index}.pkl", weights_only=False)
json.dump({
    "type": str(accelerator.distributed_type), "backend": accelerator.state.backend,
    "device": str(accelerator.device), "device_index": accelerator.device.index,
    "wrapped": type(model).__name__, "weights_device": str(weights.device), "batches": batches,
    "replicas_equal": torch.equal(replicas[0], replicas[1]),
    "ranks": accelerator.gather(torch.tensor([accelerator.process_index], device=accelerator.device)).tolist(),
    "objects": accelerator.gather_for_metrics([f"from {accelerator.process_index}"], use_gather_object=True),
    "rng_after_save": after_save, "rng_after_load": after_load,
    "saved_neuron_rng_states": len(saved["torch_neuron_manual_seed"]),
}, open(f"rank{accelerator.process_index}.json", "w"))
"""

TRAINER = """
import json, sys, torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model_dir, out, resume = sys.argv[1], sys.argv[2], sys.argv[3] == "resume"
ids = torch.randint(8, 500, (32, 16), generator=torch.Generator().manual_seed(0)).tolist()
args = TrainingArguments(out, max_steps=4, per_device_train_batch_size=2, save_steps=2, logging_steps=1,
                         learning_rate=1e-3, report_to=[])
trainer = Trainer(model=AutoModelForCausalLM.from_pretrained(model_dir), args=args,
                  train_dataset=[{"input_ids": row, "labels": row} for row in ids])
trainer.train(resume_from_checkpoint=f"{out}/checkpoint-2" if resume else None)
if trainer.is_world_process_zero():
    json.dump({"world": args.world_size, "wrapped": type(trainer.model_wrapped).__name__,
               "device": str(next(trainer.model.parameters()).device),
               "losses": {e["step"]: e["loss"] for e in trainer.state.log_history if "loss" in e}},
              open(f"{out}/result.json", "w"))
"""


#: What a Trainer run's rank 0 wrote (``TRAINER``), next to the directory it ran in.
TrainerRun = tuple[Path, dict[str, Any]]


def _trainer(directory: Path, model: Path, out: str, *options: str, resume: bool = False) -> dict[str, Any]:
    (directory / "train.py").write_text(TRAINER)
    command = [*LAUNCH, *options, "train.py", str(model), out, "resume" if resume else "fresh"]
    succeeded(run_launcher(directory, command, timeout=180))
    return json.loads((directory / out / "result.json").read_text())


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("loop")
    (directory / "loop.py").write_text(LOOP)
    succeeded(run_launcher(directory, [*LAUNCH, "loop.py"], timeout=180))
    return rank_results(directory)


@pytest.fixture(scope="module")
def ddp_trainer(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path) -> TrainerRun:
    directory = tmp_path_factory.mktemp("trainer")
    return directory, _trainer(directory, tiny_llama, "ddp")


def test_plain_loop_runs_ddp_over_the_neuron_backend(loop: list[dict[str, Any]]) -> None:
    for rank, result in enumerate(loop):
        assert (result["type"], result["backend"], result["wrapped"]) == (
            "DistributedType.MULTI_NEURON", "neuron", "DistributedDataParallel")
        assert result["weights_device"] == result["device"] == f"neuron:{rank}" and result["device_index"] == rank
        assert result["batches"] == 32 // 4 // WORLD
        assert result["replicas_equal"] is True  # different data on each rank, the same weights: gradients synced
        assert result["ranks"] == [0, 1]
        assert result["objects"] == ["from 0", "from 1"]


def test_plain_loop_state_restores_the_neuron_rng(loop: list[dict[str, Any]]) -> None:
    for result in loop:
        assert result["saved_neuron_rng_states"] == WORLD  # torch.neuron.get_rng_state_all(): one per device
        assert result["rng_after_load"] == result["rng_after_save"]  # the draws after saving are drawn again


def test_trainer_trains_with_ddp_on_one_core_per_process(ddp_trainer: TrainerRun) -> None:
    directory, result = ddp_trainer
    assert (result["world"], result["wrapped"], result["device"]) == (WORLD, "DistributedDataParallel", "neuron:0")
    assert sorted(result["losses"]) == ["1", "2", "3", "4"]
    for rank in range(WORLD):
        states = torch.load(directory / "ddp" / "checkpoint-2" / f"rng_state_{rank}.pth", weights_only=False)
        assert len(states["neuron"]) == WORLD


def test_trainer_resumes_from_a_checkpoint_with_the_same_losses(ddp_trainer: TrainerRun, tiny_llama: Path) -> None:
    directory, uninterrupted = ddp_trainer
    resumed = _trainer(directory, tiny_llama, "ddp", resume=True)
    for step in ("3", "4"):
        assert resumed["losses"][step] == pytest.approx(uninterrupted["losses"][step], abs=1e-6)


def test_trainer_with_fsdp2_matches_ddp(ddp_trainer: TrainerRun, tiny_llama: Path) -> None:
    directory, ddp = ddp_trainer
    fsdp = _trainer(directory, tiny_llama, "fsdp", "--use_fsdp", "--fsdp_version", "2")
    assert (fsdp["wrapped"], fsdp["device"]) == ("FSDPLlamaForCausalLM", "neuron:0")
    for step, loss in ddp["losses"].items():
        assert fsdp["losses"][step] == pytest.approx(loss, abs=1e-5)
    assert (directory / "fsdp" / "checkpoint-2" / "pytorch_model_fsdp_0").is_dir()


def test_trl_sft_trains_on_two_processes(tmp_path: Path, tiny_llama: Path, chat_dataset: Path) -> None:
    command = [str(SCRIPTS / "trl"), "sft", "--device", "neuron", "--num_processes", str(WORLD),
               "--model_name_or_path", str(tiny_llama), "--dataset_name", str(chat_dataset), "--output_dir", "out",
               "--max_steps", "4", "--learning_rate", "3e-3", "--logging_steps", "1", "--report_to", "none"]
    succeeded(run_launcher(tmp_path, command, timeout=180))
    args = torch.load(tmp_path / "out" / "training_args.bin", weights_only=False)
    state = json.loads((tmp_path / "out" / "checkpoint-4" / "trainer_state.json").read_text())
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    assert args.world_size == WORLD and str(args.device).startswith("neuron")
    assert len(losses) == 4 and losses[-1] < losses[0], losses
    assert (tmp_path / "out" / "model.safetensors").is_file()
