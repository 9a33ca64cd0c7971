"""Inputs an image-text model's forward reads that neither the prompt nor the images give (the reviewed
``drawn_inputs``: a policy's robot state, action noise and timestep, a block-diffusion model's canvas), drawn from the
case's seed; a policy trained on its drawn actions; a model whose forward takes no labels has no training loss; a
generation without per-step scores compared by its tokens alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_matrix_mutation import linear_off_by

from hf_neuron.compat.tiny_image_text import Draw, image_text_recipe, parse_draw
from hf_neuron.matrix.scenarios import text, text_models, training, trl_trainers
from hf_neuron.matrix.scenarios.contract import EXACT, CaseContext
from hf_neuron.tiny.groups import Decoding
from hf_neuron.tiny.image_text.config import tiny_image_text_config
from hf_neuron.tiny.image_text.inputs import drawn_inputs
from hf_neuron.tiny.tokenizer import RESERVED_TOKEN_IDS


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("drawn")


def test_a_drawn_input_is_a_kind_and_config_fields() -> None:
    assert parse_draw("normal(chunk_size, max_action_dim)") == Draw("normal", ("chunk_size", "max_action_dim"))
    assert parse_draw("uniform()") == Draw("uniform", ())
    assert str(parse_draw(" tokens( canvas_length ) ")) == "tokens(canvas_length)"
    with pytest.raises(ValueError, match="is no drawn input"):
        parse_draw("normal")


def test_each_row_draws_its_own_values_from_the_case_s_seed() -> None:
    config, draws = tiny_image_text_config("pi0"), image_text_recipe("pi0").drawn_inputs
    whole = drawn_inputs(config, draws, [(0, 0), (0, 1)])
    shapes = {name: tuple(value.shape) for name, value in whole.items()}
    assert shapes == {"state": (2, 16), "noise": (2, 16, 32), "timestep": (2,), "actions": (2, 16, 32)}
    share = drawn_inputs(config, draws, [(0, 1)])  # a DDP rank's row gets the value the whole batch holds
    assert all(torch.equal(share[name][0], whole[name][1]) for name in draws)
    assert not torch.equal(whole["noise"][0], whole["noise"][1])
    assert not torch.equal(drawn_inputs(config, draws, [(1, 0)])["noise"][0], whole["noise"][0])
    assert not torch.equal(whole["noise"], whole["actions"])  # each input from its own stream
    assert bool(((whole["timestep"] >= 0) & (whole["timestep"] < 1)).all())
    canvas = drawn_inputs(tiny_image_text_config("diffusion_gemma"),
                          image_text_recipe("diffusion_gemma").drawn_inputs, [(0, 0), (0, 1)])["decoder_input_ids"]
    assert canvas.shape == (2, 8) and canvas.dtype == torch.long
    assert int(canvas.min()) >= 8 and int(canvas.max()) < RESERVED_TOKEN_IDS[-1]  # ordinary text ids


def test_a_drawn_input_naming_a_field_the_config_lacks_says_so() -> None:
    with pytest.raises(LookupError, match="names 'no_such_dim', which PI0Config does not give as a number"):
        drawn_inputs(tiny_image_text_config("pi0"), {"x": Draw("normal", ("no_such_dim",))}, [(0, 0)])


def test_the_policy_reads_its_drawn_inputs_and_trains_on_its_actions(workdir: Path) -> None:
    """Before its drawn inputs were reviewed, pi0's forward failed on every device: 'missing 1 required positional
    argument: state'."""
    ctx = CaseContext("pi0", "image-text", "forward", "cpu", workdir)
    model = text_models.load_model(ctx, "cpu")
    input_ids = text_models.sample_ids(ctx, model)
    inputs = text_models.model_inputs(model, input_ids)
    assert {"state", "noise", "timestep", "pixel_attention_mask"} <= set(inputs) and "actions" not in inputs
    assert inputs["pixel_values"].shape[:2] == (2, 1) and inputs["pixel_attention_mask"].all()
    velocity = text_models.forward_outputs(model, input_ids, seed=ctx.seed)["logits"]
    assert velocity.shape == (2, 16, 32)  # the actions' shape, not a vocabulary's
    image_token = model.config.vlm_config.image_token_id  # written as its PaliGemma's, one per feature
    assert ((input_ids == image_token).sum(dim=1) == 64).all()  # (32 / 4)^2 patches of the one camera
    with torch.no_grad():
        other = model(**{**inputs, "pixel_values": inputs["pixel_values"] + 0.5}).logits
    assert not torch.allclose(other, velocity), "the camera images reach the velocity"
    again = text_models.forward_outputs(model, input_ids, seed=ctx.seed + 1)["logits"]
    assert torch.equal(velocity, again), "the noise and the timestep are drawn from the case's seed, not by the model"
    labelled = text_models.training_inputs(model, inputs)
    assert set(labelled) - set(inputs) == {"actions"}
    assert text_models.no_training_loss(model) is None
    model.train()
    assert model(**labelled).loss.ndim == 0


@pytest.mark.parametrize(("model_type", "scenario"), [("pi0", "forward"), ("pi0", "train"),
                                                      ("diffusion_gemma", "forward")])
def test_a_perturbed_device_fails_where_the_clean_one_passes(model_type: str, scenario: str, workdir: Path) -> None:
    run = {"forward": text.forward, "train": training.train}[scenario]
    ctx = CaseContext(model_type, "image-text", scenario, "neuron", workdir)
    clean = run(ctx)
    assert clean.outcome == "passed", clean.message
    with linear_off_by(1e-2):
        result = run(ctx)
    assert result.outcome == "failed", result.message


def test_the_canvas_is_what_the_logits_are_of(workdir: Path) -> None:
    """A device given another canvas than the CPU's computes other logits, and fails the comparison."""
    ctx = CaseContext("diffusion_gemma", "image-text", "forward", "cpu", workdir)
    model = text_models.load_model(ctx, "cpu")
    inputs = text_models.model_inputs(model, text_models.sample_ids(ctx, model))
    assert inputs["decoder_input_ids"].shape == (2, 8)
    with torch.no_grad():
        logits = model(**inputs).logits
        wrong = model(**{**inputs, "decoder_input_ids": inputs["decoder_input_ids"].roll(1, dims=1)}).logits
    assert logits.shape == (2, 8, 1024)
    assert text.compare_outputs({"logits": wrong}, {"logits": logits}, "{}").outcome == "failed"


def test_a_forward_without_labels_has_no_training_loss(workdir: Path) -> None:
    ctx = CaseContext("diffusion_gemma", "image-text", "train", "neuron", workdir)
    result = training.train(ctx)
    assert (result.outcome, result.message) == (
        "skipped", "DiffusionGemmaForBlockDiffusion.forward takes no labels and computes no loss (no reviewed input "
                   "it trains on): the training scenarios do not apply")


def test_block_diffusion_decoding_is_its_canvas_compared_token_by_token(workdir: Path) -> None:
    ctx = CaseContext("diffusion_gemma", "image-text", "generate", "neuron", workdir)
    model, reference = text_models.load_model(ctx, "neuron"), text_models.load_model(ctx, "cpu")
    input_ids = text_models.sample_ids(ctx, reference)
    decoded = text_models.greedy(reference, input_ids, seed=ctx.seed)
    assert decoded.scores is None and decoded.tokens is not None and decoded.tokens.shape == (2, 8)
    assert torch.equal(decoded.tokens, text_models.greedy(reference, input_ids, seed=ctx.seed + 1).tokens)
    leg = text._decoding(ctx, model, reference, input_ids, None)
    assert leg.outcome == "passed", leg.message


def test_tokens_without_scores_are_compared_exactly() -> None:
    expected = Decoding("cpu", torch.tensor([[5, 6, 7]]))
    assert text._agree(Decoding("neuron:0", expected.tokens), expected, EXACT, "decoding").outcome == "passed"
    other = Decoding("neuron:0", torch.tensor([[5, 9, 7]]))
    result = text._agree(other, expected, EXACT, "decoding")
    assert result.outcome == "failed" and "1 of 3 values differ" in (result.message or ""), result.message
    assert text._agree(Decoding("neuron:0"), expected, EXACT, "decoding").outcome == "failed"


@pytest.mark.parametrize(("model_type", "model_class"), [("pi0", "PI0ForConditionalGeneration"),
                                                         ("diffusion_gemma", "DiffusionGemmaForBlockDiffusion")])
def test_sft_does_not_apply_to_a_forward_without_labels(model_type: str, model_class: str, workdir: Path) -> None:
    """Before: untested (gap inputs) for want of the architecture's processor, a harness gap that was none."""
    result = trl_trainers.sft_image_text(CaseContext(model_type, "image-text", "sft", "neuron", workdir))
    assert (result.outcome, result.message) == (
        "skipped", f"{model_class}.forward takes no labels: SFTTrainer's loss, the next-token loss on the chats' "
                   "labels, does not apply to it")
