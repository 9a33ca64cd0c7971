"""`Trainer` on neuron (fp32, bf16, `torch_compile=True` with backend `neuron`) like the CPU; RNG checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron")




def _trainer(path: Path, out: Path, **options: Any) -> Any:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

    tokenizer = AutoTokenizer.from_pretrained(path)
    rows = tokenizer(["The quick brown fox jumps over the lazy dog."] * 16, padding="max_length", max_length=16)
    dataset = Dataset.from_dict({**rows, "labels": rows["input_ids"]})
    args = TrainingArguments(out, max_steps=6, per_device_train_batch_size=4, learning_rate=1e-2, logging_steps=1,
                             report_to=[], save_strategy="no", seed=0, optim="adamw_torch", **options)
    return Trainer(model=AutoModelForCausalLM.from_pretrained(path), args=args, train_dataset=dataset)


def _losses(trainer: Any) -> list[float]:
    trainer.train()
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


@pytest.mark.parametrize(("options", "tolerance"), [({}, 1e-4), ({"bf16": True}, 2e-2)], ids=["fp32", "bf16"])
def test_trainer_trains_on_neuron_like_the_cpu(tiny_llama: Path, tmp_path: Path, options: dict[str, Any],
                                               tolerance: float) -> None:
    trainer = _trainer(tiny_llama, tmp_path / "neuron", **options)
    assert trainer.args.device == torch.device("neuron:0")
    neuron = _losses(trainer)
    assert next(trainer.model.parameters()).device == torch.device("neuron:0")
    cpu = _losses(_trainer(tiny_llama, tmp_path / "cpu", use_cpu=True, **options))
    assert neuron[-1] < neuron[0]
    assert max(abs(a - b) for a, b in zip(neuron, cpu, strict=True)) < tolerance, (neuron, cpu)


def test_trainer_compiles_with_the_neuron_backend(tiny_llama: Path, tmp_path: Path) -> None:
    """The Trainer's compiled model compiles graphs of its own (Dynamo reset first: a graph another test of the same
    worker compiled for the same code would otherwise be reused, and none counted)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    eager = _losses(_trainer(tiny_llama, tmp_path / "eager"))
    graphs = counters["stats"]["unique_graphs"]
    trainer = _trainer(tiny_llama, tmp_path / "compiled", torch_compile=True)
    assert trainer.args.torch_compile_backend == "neuron"
    compiled = _losses(trainer)
    assert type(trainer.model_wrapped).__name__ == "OptimizedModule"
    assert counters["stats"]["unique_graphs"] > graphs
    assert max(abs(a - b) for a, b in zip(compiled, eager, strict=True)) < 1e-4


def test_trainer_checkpoints_keep_the_neuron_rng_state(tiny_llama: Path, tmp_path: Path) -> None:
    trainer = _trainer(tiny_llama, tmp_path)
    torch.neuron.manual_seed(1234)
    saved = torch.neuron.get_rng_state()
    trainer._save_rng_state(str(tmp_path / "checkpoint-1"))
    assert torch.equal(torch.load(tmp_path / "checkpoint-1" / "rng_state.pth", weights_only=False)["neuron"], saved)
    torch.rand(8, device="neuron")
    assert not torch.equal(torch.neuron.get_rng_state(), saved)
    trainer._load_rng_state(str(tmp_path / "checkpoint-1"))
    assert torch.equal(torch.neuron.get_rng_state(), saved)
