"""Diffusion ``ddp`` and ``tp`` on two neuron ranks: a DDP step on the denoising loss, one row a rank, gives every
rank a single process's gradients on the whole batch; a backbone sharded by diffusers' tensor parallelism predicts on
every rank what one CPU process does. A rank whose gradient is scaled, a wrong batch split and a rank whose shard is
perturbed fail them (a failed DDP comparison stays failed where a single process's step is deterministic); a training
step that draws random numbers leaves ddp untested; a backbone without a tensor-parallel plan does not apply.

The perturbations run inside the ranks (other processes), so they are rank steps and DDP parts of a module of this
file's directory (``_diffusion_perturbed_ranks``), which the ranks import: they start with this directory on their
``PYTHONPATH``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hf_neuron.matrix.scenarios import ddp as ddp_module
from hf_neuron.matrix.scenarios.contract import CaseContext
from hf_neuron.matrix.scenarios.diffusion import batch_of, batched, ddp, rows, tensor_parallel, tp

pytestmark = [pytest.mark.distributed, pytest.mark.slow, pytest.mark.usefixtures("neuron")]

_PERTURBED = "_diffusion_perturbed_ranks"
_UNET, _FLUX = "UNet2DConditionModel", "FluxTransformer2DModel"


@pytest.fixture(scope="module")
def ranks_see_this_directory() -> Iterator[None]:
    """New ranks whose ``PYTHONPATH`` has this directory (for the perturbed rank steps), ended afterwards."""
    here = str(Path(__file__).parent)
    saved = os.environ.get("PYTHONPATH")
    ddp_module._close_all()
    ddp_module._ranks.clear()
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, saved]))
    try:
        yield
    finally:
        ddp_module._close_all()
        ddp_module._ranks.clear()
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("distributed")


def _ctx(name: str, scenario: str, workdir: Path) -> CaseContext:
    return CaseContext(name, "diffusion", scenario, "neuron", workdir)


def test_a_rank_gets_the_rows_of_what_follows_the_batch_size_and_the_rest_as_it_is() -> None:
    import torch

    def inputs(batch: int) -> dict[str, object]:
        return {"sample": torch.arange(4.0 * batch).reshape(batch, 4), "timestep": torch.arange(1.0, batch + 1),
                "img_ids": torch.zeros(16, 3), "frames": torch.arange(2), "img_shapes": [[(1, 4, 4)]] * batch,
                "layers": [torch.full((batch, 3), float(layer)) for layer in range(2)],  # one per layer, not a row
                "added_cond_kwargs": {"text_embeds": torch.ones(batch, 3), "resolution": None}}

    mask = batched(inputs(2), inputs(4))
    share = rows(inputs(2), mask, 1, 2)
    assert isinstance(share, dict)
    assert share["sample"].tolist() == [[4.0, 5.0, 6.0, 7.0]] and share["timestep"].tolist() == [2.0]
    assert share["img_ids"].shape == (16, 3) and share["frames"].tolist() == [0, 1]  # two frames, not two rows
    assert share["img_shapes"] == [[(1, 4, 4)]]
    assert [layer.shape for layer in share["layers"]] == [(1, 3), (1, 3)]
    assert share["added_cond_kwargs"]["text_embeds"].shape == (1, 3)
    assert share["added_cond_kwargs"]["resolution"] is None


def test_the_inputs_of_a_flux_style_transformer_split_by_rows_but_not_its_positions(workdir: Path) -> None:
    from hf_neuron.tiny.diffusion.backbones import backbone_class

    model = backbone_class(_FLUX).from_pretrained(_ctx(_FLUX, "ddp", workdir).checkpoint)  # type: ignore[attr-defined]
    mask = batch_of(model)
    assert isinstance(mask, dict)
    assert mask["hidden_states"] is True and mask["encoder_hidden_states"] is True and mask["timestep"] is True
    assert mask["img_ids"] is False and mask["txt_ids"] is False


def test_inputs_of_a_fixed_batch_are_inputs_ddp_cannot_build(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from hf_neuron.matrix.scenarios import diffusion
    from hf_neuron.tiny import UnbuildableInputError

    monkeypatch.setattr(diffusion, "forward_inputs", lambda model, seed, batch=2: {"packed": torch.zeros(7, 4)})
    with pytest.raises(UnbuildableInputError, match="no input of Linear follows the batch size"):
        batch_of(torch.nn.Linear(4, 4))


@pytest.mark.parametrize("name", [_UNET, _FLUX])
def test_ddp_on_two_ranks_equals_one_process_on_the_whole_batch(name: str, workdir: Path,
                                                                 ranks_see_this_directory: None) -> None:
    result = ddp(_ctx(name, "ddp", workdir))
    assert result.outcome == "passed", result.message
    assert result.parity is not None and result.parity["value"] <= 1e-3 and result.parity["compared"] > 0
    ranks = result.details["ranks"]  # type: ignore[index]
    assert [(rank["rank"], rank["device"]) for rank in ranks] == [(0, "neuron:0"), (1, "neuron:1")]
    assert all(rank["peak_memory_bytes"] > 0 for rank in ranks)


@pytest.mark.parametrize("name", [_UNET, _FLUX])
def test_ddp_fails_on_a_rank_whose_gradient_is_scaled(name: str, workdir: Path, ranks_see_this_directory: None
                                                      ) -> None:
    result = ddp_module.data_parallel(_ctx(name, "ddp", workdir), f"{_PERTURBED}:scaled_rank")
    assert result.outcome == "failed", result.message
    assert (result.message or "").startswith("rank "), result.message
    assert "DDP gradient of" in (result.message or "") and "a single process's on the whole batch" in (
        result.message or "")


def test_ddp_fails_on_a_wrong_batch_split(workdir: Path, ranks_see_this_directory: None) -> None:
    result = ddp_module.data_parallel(_ctx(_FLUX, "ddp", workdir), f"{_PERTURBED}:same_rows")
    assert result.outcome == "failed", result.message
    assert "DDP gradient of" in (result.message or ""), result.message


def test_ddp_of_a_training_step_that_draws_random_numbers_is_untested_not_failed(
        workdir: Path, ranks_see_this_directory: None) -> None:
    result = ddp_module.data_parallel(_ctx(_UNET, "ddp", workdir), f"{_PERTURBED}:noisy_loss")
    assert (result.outcome, result.gap) == ("untested", "checks"), result.message
    assert (result.message or "").startswith("the model's training step draws random numbers (the CPU gradient of "
                                             ), result.message
    assert result.details is not None and len(result.details["ranks"]) == 2


def test_tp_on_two_ranks_predicts_what_one_process_does(workdir: Path, ranks_see_this_directory: None) -> None:
    result = tp(_ctx(_FLUX, "tp", workdir))
    assert result.outcome == "passed", result.message
    assert result.parity is not None and result.parity["compared"] > 0
    ranks = result.details["ranks"]  # type: ignore[index]
    assert [(rank["rank"], rank["device"]) for rank in ranks] == [(0, "neuron:0"), (1, "neuron:1")]
    assert all(rank["sharded_parameters"] > 0 for rank in ranks)


def test_tp_fails_on_a_rank_whose_shard_is_perturbed(workdir: Path, ranks_see_this_directory: None) -> None:
    result = tensor_parallel(_ctx(_FLUX, "tp", workdir), f"{_PERTURBED}:perturbed_shard")
    assert result.outcome == "failed", result.message
    assert "tensor-parallel denoiser output" in (result.message or ""), result.message


def test_tp_does_not_apply_to_a_backbone_without_a_tensor_parallel_plan(workdir: Path) -> None:
    result = tp(_ctx(_UNET, "tp", workdir))
    assert result.outcome == "skipped"
    assert (result.message or "").endswith(f"ships no tensor-parallel plan for {_UNET} (its class has no _tp_plan)")
