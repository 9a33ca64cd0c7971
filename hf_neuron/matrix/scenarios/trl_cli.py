"""The ``trl_cli`` scenario: TRL's command line as users type it, on two neuron devices, with the CPU's losses.

Two legs, each a command started as a user would start it, one process per device: ``trl sft`` (which launches
``accelerate launch`` for its training script; with two devices visible it starts two processes by itself) and
``accelerate launch --device neuron -m trl.scripts.sft``. Both fine-tune the case's tiny checkpoint (with
training-time randomness off in its config: a rank's dropout would draw other numbers than one process on the whole
batch) on the tiny chats (:func:`hf_neuron.tiny.dataset.materialize`, its chat template) for :data:`STEPS` steps of
:data:`BATCH` rows split over the devices, with what TRL chooses on neuron by itself (bf16, batches padded to a
multiple of 128). The reference is one CPU process on the whole batch (``trl sft --use_cpu``, the neuron device
hidden, with the device runs' bf16 and padding), as the ``ddp`` scenario's is: DDP's averaged gradients are the whole
batch's. A leg passes when TRL trained on ``neuron:0`` with bf16 and that padding (its saved training arguments) and
the loss of every step (its ``trainer_state.json``) is within the bfloat16 tolerance of the CPU's (computed under
bf16 autocast). Each case costs three launches of TRL (tens of seconds), so it runs for the best-ranked decoders only
(``requires`` the catalog feature :data:`~hf_neuron.matrix.selection.TOP_RANKED_FEATURE`). On the CPU (the runner's
re-run of a failing case) each leg is the same command on the CPU alone, in one process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hf_neuron.backends import backend, hidden_device_environment
from hf_neuron.matrix.scenarios.contract import TOLERANCES, CaseContext, ScenarioResult, compare
from hf_neuron.matrix.scenarios.ddp import LAUNCH_TIMEOUT_S, WORLD, fewer_devices
from hf_neuron.matrix.scenarios.text_models import zero_dropout_fields
from hf_neuron.matrix.scenarios.training import LEARNING_RATE
from hf_neuron.matrix.scenarios.trl_trainers import MAX_LENGTH, NEURON_PAD_MULTIPLE, trl_chose
from hf_neuron.vocabulary.records import DEVICE_STEPS

__all__ = ["BATCH", "LEGS", "STEPS", "leg_command", "losses_of", "trl_cli"]

#: Optimizer steps, and rows of a step (over all processes).
STEPS, BATCH = 3, 4
#: The legs: the command that starts TRL's SFT script, without its device options.
LEGS: dict[str, tuple[str, ...]] = {
    "trl sft": ("trl", "sft"),
    "accelerate launch": ("accelerate", "launch", "-m", "trl.scripts.sft"),
}


def _script(name: str) -> str:
    """The console script ``name`` of this Python environment."""
    return str(Path(sys.executable).with_name(name))


def leg_command(leg: str, device_type: str, processes: int) -> list[str]:
    """The command of ``leg`` with ``processes`` processes on ``device_type``: ``accelerate launch`` gets
    ``--device``; on the CPU every command gets ``--use_cpu``."""
    program, verb, *rest = LEGS[leg]
    launch = ["--main_process_port", "0", "--num_processes", str(processes)]  # port 0: a free one
    if program == "accelerate":
        launch += ["--device", device_type]
    return [_script(program), verb, *launch, *rest, *(["--use_cpu", "true"] if device_type == "cpu" else [])]


def _processor_missing(checkpoint: Path) -> ScenarioResult | None:
    """Untested (gap ``inputs``) when ``AutoProcessor``, which TRL's script loads from the model's folder, cannot load
    what the model type maps to from the tiny checkpoint (gemma3's processor wants an image processor the text-only
    checkpoint has not); None when it loads."""
    from transformers import AutoProcessor

    try:
        AutoProcessor.from_pretrained(checkpoint)
    except (OSError, ValueError) as missing:
        first_line = (str(missing).strip().splitlines() or [type(missing).__name__])[0]
        return ScenarioResult.untested(f"TRL's script loads AutoProcessor from the model's folder, which the tiny "
                                       f"checkpoint cannot give: {first_line}", "inputs")
    return None


def _checkpoint(ctx: CaseContext, out: Path) -> Path:
    """The case's tiny checkpoint with training-time randomness off in its config: links to its files, and a
    config with every dropout field at 0."""
    from transformers import AutoConfig

    target = out / "model"
    target.mkdir()
    for path in ctx.checkpoint.iterdir():
        if path.name != "config.json":
            (target / path.name).symlink_to(path.resolve())
    config = AutoConfig.from_pretrained(ctx.checkpoint)
    zero_dropout_fields(config)
    config.save_pretrained(target)
    return target


def _train(command: list[str], model: Path, dataset: Path, out: Path, batch: int, env: dict[str, str],
           *options: str) -> Path:
    """Run ``command`` (a leg's) on ``model`` and ``dataset`` with ``batch`` rows a process; the run's directory.
    Raises with the run's error when it fails."""
    from hf_neuron.device.distributed.launch import failed_run, run

    done = run([*command, "--model_name_or_path", str(model), "--dataset_name", str(dataset), "--output_dir",
                str(out), "--max_steps", str(STEPS), "--per_device_train_batch_size", str(batch), "--learning_rate",
                str(LEARNING_RATE), "--max_length", str(MAX_LENGTH), "--logging_steps", "1", "--save_strategy",
                "steps", "--save_steps", str(STEPS), "--report_to", "none", "--seed", "0", *options],
               timeout=LAUNCH_TIMEOUT_S, env=env, cwd=out.parent)
    if done.returncode != 0:
        raise failed_run(f"`{Path(command[0]).name} {command[1]}`", done.returncode, done.stderr)
    return out


def losses_of(out: Path) -> list[float]:
    """The loss of every step a TRL run in ``out`` logged (its last checkpoint's ``trainer_state.json``)."""
    state = json.loads((out / f"checkpoint-{STEPS}" / "trainer_state.json").read_text())
    return [float(entry["loss"]) for entry in state["log_history"] if "loss" in entry]


def _leg(leg: str, run: Path, reference: list[float], device: str) -> ScenarioResult:
    """A leg's run against the CPU's losses ``reference``: TRL chose the device (its saved training arguments, rank
    0's), then every step's loss."""
    import torch

    args: Any = torch.load(run / "training_args.bin", weights_only=False)
    losses = losses_of(run)
    details = {"losses": losses, "cpu_losses": reference, "bf16": bool(args.bf16),
               "pad_to_multiple_of": args.pad_to_multiple_of, DEVICE_STEPS: STEPS}
    if (chose := trl_chose(args, device)) is not None:
        return chose.adding_details(details)
    if len(losses) != len(reference):
        return ScenarioResult.failed(f"{leg} logged {len(losses)} losses, the CPU {len(reference)}"
                                     ).adding_details(details)
    tolerance = TOLERANCES["bfloat16"] if args.bf16 else None
    on_device = torch.tensor(losses, device=args.device)  # where rank 0 computed them (its arguments say)
    return compare(on_device, torch.tensor(reference), f"`{leg}`'s loss of each step", tolerance,
                   device=device).adding_details(details)


def trl_cli(ctx: CaseContext) -> ScenarioResult:
    """``trl sft`` and ``accelerate launch --device neuron -m trl.scripts.sft`` on :data:`WORLD` devices give the
    losses of one CPU process on the whole batch; untested with fewer devices."""
    import os

    import torch

    from hf_neuron.tiny.dataset import materialize

    if (fewer := fewer_devices(ctx, "trl_cli")) is not None:
        return fewer
    if (missing := _processor_missing(ctx.checkpoint)) is not None:
        return missing
    device_type = torch.device(ctx.device).type
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    on_cpu = {**environ, **hidden_device_environment(backend().kind)}
    processes = WORLD if device_type != "cpu" else 1
    with ctx.scratch() as out:
        model, chats = _checkpoint(ctx, out), materialize(out / "chats")
        reference = losses_of(_train(leg_command("trl sft", "cpu", 1), model, chats, out / "cpu", BATCH, on_cpu,
                                     "--bf16", "true", "--pad_to_multiple_of", str(NEURON_PAD_MULTIPLE)))
        legs = []
        for leg in LEGS:
            command = leg_command(leg, device_type, processes)
            options = () if device_type != "cpu" else ("--bf16", "true", "--pad_to_multiple_of",
                                                       str(NEURON_PAD_MULTIPLE))
            run = _train(command, model, chats, out / leg.replace(" ", "-"), BATCH // processes,
                         environ if device_type != "cpu" else on_cpu, *options)
            legs.append((leg, _leg(leg, run, reference, ctx.device)))
    return ScenarioResult.of_legs(legs)
