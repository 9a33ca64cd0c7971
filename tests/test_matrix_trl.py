"""The TRL scenarios (`sft`, `dpo`, `grpo`, `trl_cli`): TRL's trainers and command line on neuron against the CPU, and
the input that makes each of their checks fail: a perturbed device, a loss scaled on one side, wrong weights after a
step, a frozen weight that moved, TRL not picking neuron, generation off the device."""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path
from typing import Any

import pytest
import torch
from _helpers import run
from test_matrix_mutation import linear_off_by

from hf_neuron.matrix.scenarios import trl_cli, trl_trainers
from hf_neuron.matrix.scenarios.contract import CaseContext
from hf_neuron.matrix.scenarios.training import LEARNING_RATE
from hf_neuron.matrix.scenarios.trl_trainers import NEURON_PAD_MULTIPLE, STEPS, TrainerRun, held_to_the_cpu
from hf_neuron.vocabulary.records import DEVICE_STEPS, FLOAT32_REFERENCE

pytestmark = pytest.mark.usefixtures("neuron")

SCENARIOS = {"sft": trl_trainers.sft, "dpo": trl_trainers.dpo, "grpo": trl_trainers.grpo}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run's scratch directory: the tiny checkpoints are built there on first use."""
    return tmp_path_factory.mktemp("trl")


def _args(device: str = "neuron:0", bf16: bool = True, pad: int | None = NEURON_PAD_MULTIPLE) -> Any:
    return types.SimpleNamespace(device=torch.device(device), bf16=bf16, pad_to_multiple_of=pad)


def _run(device: str, *, loss_scale: float = 1.0, weight_shift: float = 0.0) -> TrainerRun:
    """A made-up trainer run of two parameters on ``device``: its losses scaled by ``loss_scale``, its weights after
    the first step moved by ``weight_shift`` beyond what AdamW's step from its gradients gives."""
    before = {"w": torch.tensor([1.0, -1.0, 0.5]), "b": torch.tensor([0.1])}
    gradients = {"w": torch.tensor([0.3, -0.2, 0.1]), "b": torch.tensor([0.05])}
    after = {name: value - LEARNING_RATE * torch.sign(gradients[name]) for name, value in before.items()}
    after["w"] = after["w"] + weight_shift
    return TrainerRun(
        args=_args(device if device != "cpu" else "cpu", pad=NEURON_PAD_MULTIPLE),
        losses=[torch.tensor(loss * loss_scale, device=device) for loss in (2.0, 1.9, 1.8)],
        before=before, gradients={name: g.to(device) for name, g in gradients.items()},
        weights={name: w.to(device) for name, w in after.items()})


def test_the_same_run_on_the_device_passes_with_its_losses_and_steps() -> None:
    result = held_to_the_cpu(_run("neuron"), _run("cpu"), "neuron")
    assert result.outcome == "passed", result.message
    assert result.details is not None and result.details[DEVICE_STEPS] == STEPS
    assert result.details["losses"] == pytest.approx([2.0, 1.9, 1.8])
    assert (result.details["bf16"], result.details["pad_to_multiple_of"]) == (True, NEURON_PAD_MULTIPLE)


def test_a_loss_scaled_on_the_device_fails() -> None:
    result = held_to_the_cpu(_run("neuron", loss_scale=1.05), _run("cpu"), "neuron")
    assert result.outcome == "failed"
    assert result.message.startswith("the loss of each step differ from the CPU's"), result.message
    assert "(bfloat16)" in result.message, "bf16 autocast: the loss is held to the bfloat16 row"


def test_weights_moved_past_what_the_step_explains_fail() -> None:
    result = held_to_the_cpu(_run("neuron", weight_shift=3 * LEARNING_RATE), _run("cpu"), "neuron")
    assert result.outcome == "failed"
    assert result.message.startswith("weight after one AdamW step w differ from the CPU's"), result.message


def _float32(run: TrainerRun, loss_shift: float) -> TrainerRun:
    """``run`` as the CPU's float32 run would give it: its losses moved by ``loss_shift``."""
    return dataclasses.replace(run, losses=[loss.cpu() + loss_shift for loss in run.losses])


def test_a_bf16_difference_the_float32_run_puts_on_the_cpu_passes() -> None:
    """The device and the CPU round their bf16 losses apart beyond bfloat16's row (2% of losses near 2): the device
    stands no farther from the float32 run than the CPU does, so it passes, judged by that rule."""
    device, cpu = _run("neuron", loss_scale=1.01), _run("cpu", loss_scale=0.99)
    assert held_to_the_cpu(device, cpu, "neuron").outcome == "failed", "without the float32 run: bfloat16's row"
    result = held_to_the_cpu(device, cpu, "neuron", lambda: _float32(_run("cpu"), 0.0))
    assert result.outcome == "passed", result.message
    assert result.details is not None and result.details[FLOAT32_REFERENCE]["of"] == "the loss of each step"
    assert result.parity is not None and result.parity["metric"] == "rmse_to_float32_over_cpu"


@pytest.mark.parametrize("float32_shift", [0.0, 0.02])
def test_a_device_farther_from_the_float32_run_than_the_cpu_fails(float32_shift: float) -> None:
    """The device's loss 5% off (0.1): more than 3 times the CPU's error against the float32 run, whether the CPU's
    error is nothing or 0.02 (the device's then 0.08)."""
    cpu = _run("cpu")
    result = held_to_the_cpu(_run("neuron", loss_scale=1.05), cpu, "neuron", lambda: _float32(cpu, float32_shift))
    assert result.outcome == "failed"
    assert "against the CPU's float32 run, the loss of each step's root-mean-square error" in result.message, (
        result.message)


def test_the_float32_run_is_trained_only_when_bf16_fails() -> None:
    def untrained() -> TrainerRun:
        raise AssertionError("the float32 run trained for a comparison that held")

    assert held_to_the_cpu(_run("neuron"), _run("cpu"), "neuron", untrained).outcome == "passed"
    assert held_to_the_cpu(_run("neuron", weight_shift=3 * LEARNING_RATE), _run("cpu"), "neuron",
                           untrained).outcome == "failed", "the weights' check is the device's own, never re-judged"


def test_losses_computed_on_the_cpu_fail_a_neuron_case() -> None:
    result = held_to_the_cpu(_run("cpu"), _run("cpu"), "neuron")
    assert result.outcome == "failed" and result.message == "TRL trained on cpu, not on neuron"


@pytest.mark.parametrize(("args", "message"), [
    (_args("cpu"), "TRL trained on cpu, not on neuron"),
    (_args(pad=None), f"on neuron TRL chose bf16=True and pad_to_multiple_of=None, not bf16 and "
                      f"{NEURON_PAD_MULTIPLE} (its neuron branch of pad_to_multiple_of='auto')"),
    (_args(bf16=False), f"on neuron TRL chose bf16=False and pad_to_multiple_of={NEURON_PAD_MULTIPLE}, not bf16 and "
                        f"{NEURON_PAD_MULTIPLE} (its neuron branch of pad_to_multiple_of='auto')"),
])
def test_trl_not_picking_neuron_fails(args: Any, message: str) -> None:
    found = trl_trainers.trl_chose(args, "neuron")
    assert found is not None and (found.outcome, found.message) == ("failed", message)
    run = dataclasses.replace(_run("neuron"), args=args)
    assert held_to_the_cpu(run, _run("cpu"), "neuron").message == message
    assert trl_trainers.trl_chose(_args("cpu", pad=None), "cpu") is None, "on the CPU TRL pads nothing"


def test_a_step_that_moves_a_frozen_weight_or_nothing_fails() -> None:
    model = torch.nn.Linear(2, 1)
    model.bias.requires_grad_(False)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    assert trl_trainers._step_changes(before, model).message == "the first step changed no trainable weight"
    with torch.no_grad():
        model.weight += 1
    assert trl_trainers._step_changes(before, model) is None
    with torch.no_grad():
        model.bias += 1
    assert trl_trainers._step_changes(before, model).message == "the first step changed 1 frozen weights: bias"
    run = dataclasses.replace(_run("neuron"), changes=trl_trainers._step_changes(before, model))
    assert held_to_the_cpu(run, _run("cpu"), "neuron").outcome == "failed"


def test_grpo_replays_the_devices_completions_on_the_cpu() -> None:
    class Sampler:  # the trainer's sampling method, as GRPOTrainer's
        model = torch.nn.Linear(1, 1)

        def training_step(self, *args: Any) -> torch.Tensor:
            return torch.tensor(1.0)

        def _generate_single_turn(self, prompt_ids: Any, *args: Any) -> Any:
            return [[len(ids)] for ids in prompt_ids], None

    device_run, cpu_run = TrainerRun(), TrainerRun()
    sampled = trl_trainers._recording(Sampler, device_run, None)()
    assert sampled._generate_single_turn([[1, 2], [3]])[0] == [[2], [1]]
    assert device_run.generated_on == {"cpu"} and device_run.completions == [[[2], [1]]]
    replayed = trl_trainers._recording(Sampler, cpu_run, device_run)()
    assert replayed._generate_single_turn([[9, 9, 9]]) == ([[2], [1]], None), "the device's, not its own"
    assert cpu_run.generated_on == set()
    assert trl_trainers.even_token_share([[2, 4, 5], []]) == [pytest.approx(2 / 3), 0.0]


def test_grpo_that_generated_off_the_device_fails(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_train(ctx: CaseContext, device: str, recipe: Any, out: Path, like: Any = None) -> TrainerRun:
        run = _run("cpu" if like is not None else "neuron")
        run.generated_on = {"cpu"}
        return run

    monkeypatch.setattr(trl_trainers, "_train", fake_train)
    result = trl_trainers.grpo(CaseContext("llama", "decoder", "grpo", "neuron", workdir))
    assert (result.outcome, result.message) == ("failed", "GRPO generated on cpu, not on neuron")


def test_image_text_sft_is_untested_without_the_models_processor(workdir: Path) -> None:
    result = trl_trainers.sft_image_text(CaseContext("qwen2_vl", "image-text", "sft", "neuron", workdir))
    assert (result.outcome, result.gap) == ("untested", "inputs")
    assert result.message.startswith("TRL's vision collator needs the architecture's processor, and the tiny "
                                     "checkpoint has none: "), result.message


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_draft_model_is_not_trained_by_trl(scenario: str, workdir: Path) -> None:
    """A speculative-decoding assistant's forward reads its target's outputs, takes no labels and has no loss: TRL's
    trainers (which lower the model's own loss) do not apply, as `train` does not; a model with a loss is trained."""
    result = SCENARIOS[scenario](CaseContext("gemma4_assistant", "decoder", scenario, "neuron", workdir))
    assert result.outcome == "skipped", result.message
    assert "drafts tokens for a gemma4_text target" in (result.message or ""), result.message


#: The error put on every linear layer's output on neuron that each scenario must fail: 1% (as the bf16 scenario's), but
#: 2% for DPO, whose loss is a difference of the policy's and the reference's log-probabilities, both computed by the
#: device: an error common to both cancels, and a 1% one moves its LoRA gradients by less than the bfloat16 row.
PERTURBED = {"sft": 1e-2, "dpo": 2e-2, "grpo": 1e-2}


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_trl_scenarios_pass_on_a_tiny_llama_and_fail_a_perturbed_device(scenario: str, workdir: Path) -> None:
    ctx = CaseContext("llama", "decoder", scenario, "neuron", workdir)
    clean = SCENARIOS[scenario](ctx)
    assert clean.outcome == "passed", clean.message
    assert clean.parity is not None and clean.parity["value"] == 0.0, "the reference device: the CPU's kernels"
    legs = {"sft": ["packed", "lora"]}.get(scenario, [])
    assert [leg["name"] for leg in clean.legs] == legs
    for details in [leg["details"] for leg in clean.legs] or [clean.details]:
        assert details["bf16"] is True and details["pad_to_multiple_of"] == NEURON_PAD_MULTIPLE
        assert details["losses"] == details["cpu_losses"] and len(details["losses"]) == STEPS
    with linear_off_by(PERTURBED[scenario]):
        perturbed = SCENARIOS[scenario](ctx)
    assert perturbed.outcome == "failed", f"a {PERTURBED[scenario]:.0%} error of every linear layer passed {scenario}"
    assert "differ from the CPU's" in (perturbed.message or ""), perturbed.message


@pytest.mark.slow
def test_the_case_on_the_cpu_computes_what_trl_chooses_on_neuron(workdir: Path) -> None:
    """The rerun that tells whether a device failure fails on the CPU too trains in bf16 with neuron's padding, as
    the device did (big_bird's GRPO failed under bf16 on neuron and passed in TRL's float32 on the CPU)."""
    result = trl_trainers.dpo(CaseContext("llama", "decoder", "dpo", "cpu", workdir))
    assert result.outcome == "passed", result.message
    assert result.details["bf16"] is True and result.details["pad_to_multiple_of"] == NEURON_PAD_MULTIPLE


@pytest.mark.slow
def test_image_text_sft_trains_llava_like_the_cpu(workdir: Path) -> None:
    result = trl_trainers.sft_image_text(CaseContext("llava", "image-text", "sft", "neuron", workdir))
    assert result.outcome == "passed", result.message
    assert [leg["name"] for leg in result.legs] == ["full", "lora"]


def test_the_cli_legs_are_the_commands_users_type() -> None:
    names = [[Path(part).name if index == 0 else part for index, part in enumerate(trl_cli.leg_command(leg, *where))]
             for leg in trl_cli.LEGS for where in (("neuron", 2), ("cpu", 1))]
    assert names == [
        ["trl", "sft", "--main_process_port", "0", "--num_processes", "2"],
        ["trl", "sft", "--main_process_port", "0", "--num_processes", "1", "--use_cpu", "true"],
        ["accelerate", "launch", "--main_process_port", "0", "--num_processes", "2", "--device", "neuron", "-m",
         "trl.scripts.sft"],
        ["accelerate", "launch", "--main_process_port", "0", "--num_processes", "1", "--device", "cpu", "-m",
         "trl.scripts.sft", "--use_cpu", "true"],
    ]


def _cli_run(out: Path, losses: list[float], args: Any) -> Path:
    """A directory as a `trl sft` run leaves it: its training arguments and its last checkpoint's state."""
    (out / f"checkpoint-{trl_cli.STEPS}").mkdir(parents=True)
    torch.save(args, out / "training_args.bin")
    history = [{"loss": loss, "step": step} for step, loss in enumerate(losses, start=1)]
    (out / f"checkpoint-{trl_cli.STEPS}" / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    return out


@pytest.mark.parametrize(("losses", "args", "message"), [
    ([2.0, 1.9, 1.8], _args(), None),
    ([2.0, 1.9, 1.8 * 1.05], _args(), "`trl sft`'s loss of each step differ from the CPU's"),
    ([2.0, 1.9], _args(), "trl sft logged 2 losses, the CPU 3"),
    ([2.0, 1.9, 1.8], _args("cpu"), "TRL trained on cpu, not on neuron"),
    ([2.0, 1.9, 1.8], _args(pad=None), "on neuron TRL chose bf16=True and pad_to_multiple_of=None"),
])
def test_a_cli_leg_holds_its_losses_and_trls_choices(tmp_path: Path, losses: list[float], args: Any,
                                                     message: str | None) -> None:
    result = trl_cli._leg("trl sft", _cli_run(tmp_path, losses, args), [2.0, 1.9, 1.8], "neuron")
    if message is None:
        assert result.outcome == "passed", result.message
        assert result.details is not None and result.details["losses"] == [2.0, 1.9, 1.8]
    else:
        assert result.outcome == "failed" and result.message.startswith(message), result.message


@pytest.mark.slow
@pytest.mark.distributed
def test_trl_cli_trains_on_two_devices_with_the_cpus_losses(workdir: Path) -> None:
    ctx = CaseContext("llama", "decoder", "trl_cli", "neuron", workdir)
    result = trl_cli.trl_cli(ctx)
    assert result.outcome == "passed", result.message
    assert [leg["name"] for leg in result.legs] == list(trl_cli.LEGS)
    for leg in result.legs:
        assert leg["details"]["losses"] == pytest.approx(leg["details"]["cpu_losses"], rel=1e-5)
        assert leg["details"]["bf16"] is True and leg["details"]["pad_to_multiple_of"] == NEURON_PAD_MULTIPLE
    assert not ctx.scratch_path.exists(), "each case's runs are removed"


def test_a_failing_cli_run_raises_with_its_error(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(ValueError, match=r"\(in `trl sft`, exit 1\)$") as failure:  # the script's own error type
        trl_cli._train([trl_cli._script("trl"), "sft"], tmp_path / "missing-model", tmp_path, tmp_path / "out", 1,
                       {"HF_HUB_OFFLINE": "1", "HF_NEURON_EMULATOR": "0", "PATH": "/usr/bin:/bin"})
    assert str(failure.value).endswith("(in `trl sft`, exit 1)"), failure.value
    assert "CalledProcessError" not in str(failure.value), "the script's error, not the launcher's report of it"


def test_a_checkpoint_without_the_processor_trls_script_loads_is_untested(workdir: Path, tmp_path: Path) -> None:
    """AutoProcessor maps gemma3 to Gemma3Processor, which wants the processor's files (its image processor)."""
    checkpoint = CaseContext("gemma3", "decoder", "trl_cli", "neuron", workdir).checkpoint
    for path in checkpoint.iterdir():
        if path.name != "processor_config.json":
            (tmp_path / path.name).symlink_to(path.resolve())
    result = trl_cli._processor_missing(tmp_path)
    assert result is not None and (result.outcome, result.gap) == ("untested", "inputs")
    assert result.message.startswith("TRL's script loads AutoProcessor from the model's folder, which the tiny "
                                     "checkpoint cannot give: Can't load image processor"), result.message
    assert trl_cli._processor_missing(CaseContext("llama", "decoder", "trl_cli", "neuron", workdir).checkpoint) is None


def test_a_vision_language_decoder_s_checkpoint_ships_the_processor_trls_script_loads(workdir: Path) -> None:
    """gemma3's decoder checkpoint held its tokenizer alone (nightly-20261206: trl_cli untested, 'Can't load image
    processor'): it ships Gemma3Processor now, as its real checkpoints do; a text model's ships none."""
    from transformers import AutoProcessor

    checkpoint = CaseContext("gemma3", "decoder", "trl_cli", "neuron", workdir).checkpoint
    assert trl_cli._processor_missing(checkpoint) is None
    assert type(AutoProcessor.from_pretrained(checkpoint)).__name__ == "Gemma3Processor"
    stamp = json.loads((CaseContext("llama", "decoder", "trl_cli", "neuron", workdir).checkpoint
                        / "hf-neuron-tiny.json").read_text())
    assert stamp["processor"] == "none: transformers maps llama to no processor"


@pytest.mark.slow
def test_sft_holds_a_layer_norm_model_to_the_bfloat16_row(workdir: Path) -> None:
    """GPT-2's layer norms and softmax run in float32 under neuron's autocast (CUDA's lists) and in bfloat16 under the
    CPU's: the two steps differ beyond float32's floor (4e-4 on gradients of 1e-3) even on the reference device."""
    result = trl_trainers.sft(CaseContext("gpt2", "decoder", "sft", "neuron", workdir))
    assert result.outcome == "passed", result.message
    assert result.parity is not None and result.parity["value"] > 0.0, "the autocast policies differ"


def test_trl_cli_is_untested_with_one_device(tmp_path: Path) -> None:
    result = run(
        f"""
        from pathlib import Path
        from hf_neuron.matrix.scenarios.trl_cli import trl_cli
        from hf_neuron.matrix.scenarios.contract import CaseContext
        result = trl_cli(CaseContext("llama", "decoder", "trl_cli", "neuron", Path({str(tmp_path)!r})))
        print(result.outcome, result.gap, "|", result.message)
        """,
        {"HF_NEURON_EMULATOR_DEVICES": "1"},
    )
    assert result.stdout.strip() == (
        "untested devices | trl_cli needs 2 neuron devices, this process sees 1 (the reference device: set "
        "HF_NEURON_EMULATOR_DEVICES=2)"), result.stderr
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.parametrize(("message", "kept"), [
    ("`causal_conv1d_fn` can't keep packed sequences apart without `causal_conv1d`. Install `causal_conv1d`", True),
    ("some other refusal of packed rows", False),
])
def test_packed_rows_a_model_keeps_apart_only_with_a_cuda_kernel_train_padded(
        monkeypatch: pytest.MonkeyPatch, message: str, kept: bool) -> None:
    """transformers refuses packed rows to the torch fallback of a Mamba or causal-conv1d scan on any device: the packed
    leg is skipped with its reason and full fine-tuning trains padded rows; any other error stays the case's error."""
    def case(ctx: Any, recipe: Any) -> Any:
        if recipe.settings.get("packing"):
            raise ValueError(message)
        return trl_trainers.ScenarioResult.passed()

    monkeypatch.setattr(trl_trainers, "_case", case)
    if not kept:
        with pytest.raises(ValueError, match="other refusal"):
            trl_trainers.sft(types.SimpleNamespace())
        return
    result = trl_trainers.sft(types.SimpleNamespace())
    assert result.outcome == "passed"
    assert [(leg["name"], leg["outcome"]) for leg in result.legs] == [
        ("packed", "skipped"), ("padded", "passed"), ("lora", "passed")]
    assert "causal_conv1d" in result.legs[0]["reason"]


def test_a_processor_that_drops_its_chat_template_trains_on_rows_the_tokenizer_rendered(workdir: Path) -> None:
    """Chameleon's processor takes no chat template (a library bug): TRL's conversational rows fail at
    apply_chat_template on every device, so the case trains on TRL's standard format, as its users do; a processor
    that keeps its template (LLaVA's) trains on the conversations."""
    from hf_neuron.tiny.image_text.dataset import image_chats

    chats = image_chats()[:2]
    kept, settings, dataset = trl_trainers._image_rows(
        CaseContext("llava", "image-text", "sft", "neuron", workdir).checkpoint, chats)
    assert (kept, settings, dataset) == (chats, {}, "conversational")
    rows, settings, dataset = trl_trainers._image_rows(
        CaseContext("chameleon", "image-text", "sft", "neuron", workdir).checkpoint, chats)
    assert dataset.startswith("standard") and settings == {"remove_unused_columns": False}
    assert [row["images"] for row in rows] == [chat["images"] for chat in chats]
    answer = chats[0]["messages"][1]["content"][-1]["text"]
    assert rows[0]["text"].startswith("<|im_start|>user") and answer in rows[0]["text"]


def test_an_encoder_decoder_vision_model_is_not_one_sfttrainer_trains(workdir: Path) -> None:
    """TRL's SFTTrainer trains causal language models only: Pix2Struct's text is its decoder's, and its case is
    skipped (not applicable), never counted among the image-text models TRL supports."""
    result = trl_trainers.sft_image_text(CaseContext("pix2struct", "image-text", "sft", "neuron", workdir))
    assert result.outcome == "skipped" and "encoder-decoder model" in (result.message or ""), result


def test_an_image_text_class_that_takes_no_images_is_not_trained_as_one(workdir: Path) -> None:
    """Mistral 4's class in the image-text mapping is a text model: TRL's vision SFT does not apply (skipped), where
    it was untested as if the harness lacked its processor."""
    result = trl_trainers.sft_image_text(CaseContext("mistral4", "image-text", "sft", "neuron", workdir))
    assert result.outcome == "skipped" and "takes no images" in (result.message or ""), result
