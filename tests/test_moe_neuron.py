"""Mixture-of-experts models on neuron: forward, the experts function called directly, and fine-tuning with the
router's auxiliary loss (``output_router_logits=True``), each equal to the CPU's; without the torch patch the
integer histograms their routers count with fail on neuron."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from _helpers import run

from hf_neuron.matrix.scenarios.contract import CaseContext
from hf_neuron.matrix.scenarios.training import train_aux_loss


@pytest.fixture(scope="module")
def mixtral(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hf_neuron import tiny

    workdir = tmp_path_factory.mktemp("moe")
    tiny.materialize("decoder", "mixtral", workdir / "checkpoints" / "mixtral")
    return workdir


def test_mixtral_trains_with_its_auxiliary_loss_like_the_cpu(mixtral: Path) -> None:
    result = train_aux_loss(CaseContext("mixtral", "decoder", "train_aux_loss", "neuron", mixtral))
    assert result.outcome == "passed", result.message
    assert result.parity is not None and result.parity["value"] == 0.0  # loss, gradients and weights, exactly


def test_the_auxiliary_loss_on_neuron_equals_the_cpus(mixtral: Path) -> None:
    from transformers import AutoModelForCausalLM

    ids = torch.randint(8, 500, (2, 12))
    losses = {}
    for device in ("cpu", "neuron"):
        model = AutoModelForCausalLM.from_pretrained(mixtral / "checkpoints" / "mixtral", device_map=device,
                                                     output_router_logits=True)
        out = model(ids.to(device), labels=ids.to(device))
        assert out.aux_loss is not None and out.aux_loss.device.type == device
        losses[device] = (out.loss.item(), out.aux_loss.item())
    assert losses["neuron"] == losses["cpu"]


def test_the_experts_function_called_directly_runs_on_neuron() -> None:
    from transformers.integrations.moe import grouped_mm_experts_forward

    from hf_neuron.tiny.transformers.models import build_model

    experts = build_model("qwen3_moe", seed=0).model.layers[0].mlp.experts
    hidden = torch.randn(6, experts.gate_up_proj.shape[-1])
    ids, weights = torch.randint(0, experts.num_experts, (6, 2)), torch.rand(6, 2)
    expected = grouped_mm_experts_forward(experts, hidden, ids, weights)
    actual = grouped_mm_experts_forward(experts.to("neuron"), hidden.to("neuron"), ids.to("neuron"),
                                        weights.to("neuron"))
    assert actual.device.type == "neuron" and torch.equal(actual.cpu(), expected)


def test_without_the_patch_the_auxiliary_loss_fails_on_neuron(mixtral: Path) -> None:
    result = run(
        f"""
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained({str(mixtral / "checkpoints" / "mixtral")!r},
                                                     device_map="neuron", output_router_logits=True)
        ids = torch.randint(8, 500, (2, 12), device="neuron")
        try:
            model(ids, labels=ids)
            print("ran")
        except (RuntimeError, NotImplementedError) as error:
            print(str(error).split(" not implemented")[0])
        """,
        {"HF_NEURON_PATCHES": "0"},
    )
    assert result.stdout.strip() == '"histogram_cpu"', result.stderr
