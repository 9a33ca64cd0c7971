"""Diffusion ``load`` and ``train``: a load puts the CPU's values on the device; one denoising-loss AdamW step on the
device matches the CPU's (loss, gradients, updated weights) and further steps lower the loss; a perturbed load, a
perturbed device and an optimizer that cannot move the weights fail them."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_matrix_mutation import linear_off_by

from hf_neuron.matrix.scenarios import training
from hf_neuron.matrix.scenarios.contract import CaseContext
from hf_neuron.matrix.scenarios.diffusion import train

pytestmark = pytest.mark.usefixtures("neuron")


@pytest.mark.parametrize("name", ["UNet2DConditionModel", "FluxTransformer2DModel", "WanTransformer3DModel"])
def test_a_denoising_step_matches_the_cpu_and_a_perturbed_device_fails_it(name: str, tmp_path: Path) -> None:
    ctx = CaseContext(name, "diffusion", "train", "neuron", tmp_path)
    clean = train(ctx)
    assert clean.outcome == "passed", clean.message
    assert clean.parity is not None and clean.parity["value"] <= clean.parity["tolerance"]
    with linear_off_by(1e-3):
        perturbed = train(ctx)
    assert perturbed.outcome == "failed" and "differ from the CPU's" in (perturbed.message or ""), perturbed.message


def test_a_loss_that_does_not_go_down_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(training, "LEARNING_RATE", 0.0)  # AdamW with no step size: the weights stay where they are
    result = train(CaseContext("FluxTransformer2DModel", "diffusion", "train", "neuron", tmp_path))
    assert result.outcome == "failed"
    assert (result.message or "").startswith("the denoising loss did not go down over 3 AdamW steps (lr 0)")


def test_load_puts_every_tensor_on_the_device_with_the_cpu_values(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from hf_neuron.matrix.scenarios.diffusion import load
    from hf_neuron.tiny.diffusion.backbones import backbone_class

    ctx = CaseContext("FluxTransformer2DModel", "diffusion", "load", "neuron", tmp_path)
    clean = load(ctx)
    assert clean.outcome == "passed", clean.message
    assert clean.parity is not None and clean.parity["value"] == 0.0
    cls = backbone_class("FluxTransformer2DModel")
    original = cls.from_pretrained.__func__  # type: ignore[attr-defined]

    def loaded_off_by(klass: type, *args: object, **kwargs: object) -> torch.nn.Module:
        model = original(klass, *args, **kwargs)
        if str(kwargs.get("device_map", "")).startswith("neuron"):
            with torch.no_grad():
                next(model.parameters()).add_(1e-6)  # a load that changes one value a little
        return model

    monkeypatch.setattr(cls, "from_pretrained", classmethod(loaded_off_by))
    perturbed = load(ctx)
    assert perturbed.outcome == "failed" and "differ from the CPU's" in (perturbed.message or ""), perturbed.message
