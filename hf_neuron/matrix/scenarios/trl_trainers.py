"""The TRL scenarios: ``sft``, ``dpo`` and ``grpo``, TRL's trainers as users run them, each on the device and on the
CPU.

Each case trains its tiny model for :data:`STEPS` optimizer steps with TRL's own trainer, on rows of the tiny chats
in the dataset format the trainer reads (:func:`hf_neuron.tiny.dataset.trl_formats`; the image chats of
:mod:`hf_neuron.tiny.image_text.dataset` for a vision-language model), built in memory with ``datasets``, and the
checkpoint's own tokenizer (its chat template) or processor. The model is loaded on the CPU without training-time
randomness (:func:`~hf_neuron.matrix.scenarios.text_models.load_model`) and handed to the trainer, which places it on
its device, as ``trl sft`` does on neuron.

The device run takes what TRL and transformers choose there by themselves (on neuron: bf16 mixed precision and batches
padded to a multiple of 128, TRL's neuron branch of ``pad_to_multiple_of="auto"``; gradient checkpointing and fused
AdamW, their defaults); the CPU run (``use_cpu``) takes the device run's bf16 and padding, so that both compute the
same thing. The case run on the CPU as its device (the rerun that tells whether a device failure fails on the CPU too)
takes TRL's choices on neuron, so that it computes what the device did. A case passes when:

- TRL trained on the device, and on neuron chose bf16 and the padding of its neuron branch;
- the loss of every step is within tolerance of the CPU's (under bf16 autocast: the bfloat16 row, as the gradients:
  neuron's autocast runs ``layer_norm`` and ``softmax`` in float32, as CUDA's lists do, the CPU's in bfloat16, so
  the two steps round apart by bfloat16's units even on the reference device: 4e-4 on gradients of 1e-3 on a tiny
  GPT-2, beyond float32's floor of 1e-4); where they round further apart, judged against the CPU's float32 run
  (:func:`~hf_neuron.matrix.scenarios.rounding.judged_against_float32`);
- the first optimizer step's gradients (after clipping: what AdamW reads) and updated trainable weights are the CPU's,
  the weights held as :func:`~hf_neuron.matrix.scenarios.training.updated_weights` holds them;
- the first step changed trainable weights and no frozen one (a LoRA adapter: only the adapter trains).

GRPO samples its completions with the device's random numbers, which no CPU run can draw the same way on every
backend: the CPU run trains on the completions the device run sampled (replayed), so that both score and train on the
same tokens; the device run's generation must have run on the device.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.matrix.scenarios.contract import (
    TOLERANCES,
    CaseContext,
    ScenarioResult,
    compare,
    compare_named,
    worst_of,
)
from hf_neuron.matrix.scenarios.rounding import judged_against_float32
from hf_neuron.matrix.scenarios.text_models import load_model
from hf_neuron.matrix.scenarios.training import (
    LEARNING_RATE,
    adapter_outside,
    lora_config,
    lora_refused,
    untrainable,
    updated_weights,
)
from hf_neuron.vocabulary.records import DEVICE_STEPS

if TYPE_CHECKING:
    import torch

__all__ = ["BATCH", "NEURON_CHOICES", "NEURON_PAD_MULTIPLE", "STEPS", "TrainerRun", "dpo", "even_token_share", "grpo",
           "held_to_the_cpu", "sft", "sft_image_text", "trl_chose"]

#: Optimizer steps of every TRL run.
STEPS = 3
#: Rows of a step: SFT examples, DPO pairs, GRPO completions.
BATCH = 4
#: The longest text row (SFT packs rows of this many tokens; DPO truncates to it).
MAX_LENGTH = 64
#: GRPO: completions sampled per prompt, and the most tokens each.
GENERATIONS, COMPLETION_TOKENS = 2, 6
#: The multiple TRL pads batches to on neuron (``pad_to_multiple_of="auto"`` in its configs: "Neuron compiles once per
#: input shape, so padding bounds the number of compilations").
NEURON_PAD_MULTIPLE = 128
#: What TRL chooses by itself on neuron (its training arguments): bf16 mixed precision, batches padded to
#: :data:`NEURON_PAD_MULTIPLE`.
NEURON_CHOICES: dict[str, Any] = {"bf16": True, "pad_to_multiple_of": NEURON_PAD_MULTIPLE}


@dataclasses.dataclass
class TrainerRun:
    """What one trainer run did: its resolved configuration (``args``), the loss of every step, every parameter before
    the first optimizer step (on the CPU), the trainable parameters' gradients at that step (after clipping) and their
    values after it, what the step changed (None when it changed trainable weights only), the completions it trained
    on (GRPO) and the devices its generation ran on."""

    args: Any = None
    losses: list[torch.Tensor] = dataclasses.field(default_factory=list)
    before: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)
    gradients: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)
    weights: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)
    changes: ScenarioResult | None = None
    completions: list[list[list[int]]] = dataclasses.field(default_factory=list)
    generated_on: set[str] = dataclasses.field(default_factory=set)


def _step_changes(before: Mapping[str, torch.Tensor], model: torch.nn.Module) -> ScenarioResult | None:
    """Failed when an optimizer step changed a frozen parameter of ``model`` (``before``: every parameter's value
    before it, on the CPU) or no trainable one; None when it changed trainable ones only."""
    import torch

    changed = {name: p.requires_grad for name, p in model.named_parameters()
               if name in before and not torch.equal(before[name], p.detach().to("cpu"))}
    frozen = sorted(name for name, trains in changed.items() if not trains)
    if frozen:
        return ScenarioResult.failed(f"the first step changed {len(frozen)} frozen weights: {', '.join(frozen[:5])}")
    if not changed:
        return ScenarioResult.failed("the first step changed no trainable weight")
    return None


def _first_step(run: TrainerRun) -> Any:
    """A trainer callback that fills ``run`` from the first optimizer step: the parameters before it, the gradients
    AdamW reads, the trainable weights after it and what it changed."""
    from transformers import TrainerCallback

    class FirstStep(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            if state.global_step == 0 and not run.before:
                run.before = {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters()}

        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None,
                                  **kwargs: Any) -> None:
            if state.global_step == 0:
                run.gradients = {name: p.grad.detach().clone() for name, p in model.named_parameters()
                                 if p.requires_grad and p.grad is not None}

        def on_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            if state.global_step == 0:
                run.weights = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
                run.changes = _step_changes(run.before, model)

    return FirstStep()


def _recording(trainer_class: type, run: TrainerRun, replay: TrainerRun | None) -> type:
    """``trainer_class`` recording the loss of each step in ``run``; for GRPO also the completions it samples and the
    device they are sampled on, or, with ``replay``, training on ``replay``'s completions instead of sampling."""

    class Recording(trainer_class):
        def training_step(self, *args: Any, **kwargs: Any) -> torch.Tensor:
            loss: torch.Tensor = super().training_step(*args, **kwargs)
            run.losses.append(loss.detach())
            return loss

        def _generate_single_turn(self, prompt_ids: Any, *args: Any, **kwargs: Any) -> Any:  # GRPO's sampling
            if replay is not None:
                completions, logprobs = replay.completions[len(run.completions)], None
            else:
                run.generated_on.add(str(next(self.model.parameters()).device))
                completions, logprobs = super()._generate_single_turn(prompt_ids, *args, **kwargs)
            run.completions.append(completions)
            return completions, logprobs

    return Recording


def even_token_share(completion_ids: Sequence[Sequence[int]], **kwargs: Any) -> list[float]:
    """GRPO's reward: the share of each completion's token ids that are even (cheap, deterministic, and different
    between random completions, so that a group's advantages are not all zero)."""
    return [sum(1 for token in ids if token % 2 == 0) / max(len(ids), 1) for ids in completion_ids]


@dataclasses.dataclass(frozen=True)
class _Recipe:
    """One kind of TRL run: the trainer (``"SFT"``, ``"DPO"``, ``"GRPO"``), its dataset rows, its configuration beyond
    the common one, whether a LoRA adapter trains, whether the processing class is the checkpoint's processor (a
    vision-language model) or its tokenizer, and what else the trainer takes."""

    trainer: str
    rows: Sequence[Mapping[str, Any]]
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    lora: bool = False
    processor: bool = False
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _train(ctx: CaseContext, device: str, recipe: _Recipe, out: Path, like: TrainerRun | None = None, *,
           float32: bool = False) -> TrainerRun:
    """Train the case's model with ``recipe`` on ``device``; ``like``: the device run whose bf16, padding and (GRPO)
    completions the CPU run takes; ``float32``: without mixed precision (the reference a bf16 comparison is judged
    against, :func:`~hf_neuron.matrix.scenarios.rounding.judged_against_float32`)."""
    import torch
    import trl
    from datasets import Dataset
    from transformers import AutoProcessor, AutoTokenizer

    run = TrainerRun()
    device_type = torch.device(device).type
    if like is not None:
        choices = {"bf16": like.args.bf16 and not float32, "pad_to_multiple_of": like.args.pad_to_multiple_of}
    elif device_type == "cpu":  # the case run on the CPU (the rerun of a device failure): neuron's
        choices = dict(NEURON_CHOICES)
    else:
        choices = {}
    model = load_model(ctx, "cpu", train=True)
    if not model.supports_gradient_checkpointing:  # TRL turns it on by default; such a model's users turn it off
        choices["gradient_checkpointing"] = False
    kind = device_type + ("-float32" if float32 else "")
    args = getattr(trl, f"{recipe.trainer}Config")(
        output_dir=str(out / f"{recipe.trainer.lower()}-{kind}"), max_steps=STEPS,
        per_device_train_batch_size=BATCH, learning_rate=LEARNING_RATE, seed=ctx.seed, logging_steps=1,
        save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=device_type == "cpu",
        **choices, **recipe.settings)
    peft_config = lora_config(model) if recipe.lora else None
    processing = (AutoProcessor if recipe.processor else AutoTokenizer).from_pretrained(ctx.checkpoint)
    trainer = _recording(getattr(trl, f"{recipe.trainer}Trainer"), run, like if recipe.trainer == "GRPO" else None)(
        model=model, args=args, train_dataset=Dataset.from_list(list(recipe.rows)), processing_class=processing,
        peft_config=peft_config, callbacks=[_first_step(run)], **recipe.extra)
    trainer.train()
    run.args = trainer.args
    if recipe.lora and (outside := adapter_outside(trainer.model)) is not None:
        run.changes = outside
    return run


def trl_chose(args: Any, device: str) -> ScenarioResult | None:
    """Failed when the trainer whose configuration is ``args`` did not train on ``device``'s type or, on neuron, did not
    choose bf16 and :data:`NEURON_PAD_MULTIPLE` by itself; None when it chose them."""
    import torch

    wanted = torch.device(device).type
    if args.device.type != wanted:
        return ScenarioResult.failed(f"TRL trained on {args.device}, not on {wanted}")
    if wanted == "neuron" and any(getattr(args, name) != value for name, value in NEURON_CHOICES.items()):
        return ScenarioResult.failed(
            f"on neuron TRL chose bf16={args.bf16} and pad_to_multiple_of={args.pad_to_multiple_of}, not bf16 and "
            f"{NEURON_PAD_MULTIPLE} (its neuron branch of pad_to_multiple_of='auto')")
    return None


def _results(run: TrainerRun) -> dict[str, torch.Tensor]:
    """What :func:`held_to_the_cpu` judges against the float32 run, by name: every step's loss and the first step's
    gradients (the weights after the step are held to the device's own gradients, as on every device)."""
    import torch

    return {"the loss of each step": torch.stack(run.losses),
            **{f"the first step's gradient of {name}": value for name, value in run.gradients.items()}}


def held_to_the_cpu(run: TrainerRun, reference: TrainerRun, device: str,
                    float32: Callable[[], TrainerRun] | None = None) -> ScenarioResult:
    """The device's ``run`` against the CPU's ``reference``: TRL chose the device (:func:`trl_chose`), every step's
    loss, the first step's gradients and updated weights, and what the step changed. The first failure, or passed
    with the worst parity; the details give both runs' losses and the device steps. Under bf16, a comparison that
    fails is judged again against ``float32()``, the CPU's run without mixed precision
    (:func:`~hf_neuron.matrix.scenarios.rounding.judged_against_float32`)."""
    import torch

    tolerance = TOLERANCES["bfloat16"] if run.args.bf16 else None
    details = {"losses": [float(loss) for loss in run.losses], "cpu_losses": [float(loss) for loss in reference.losses],
               "bf16": bool(run.args.bf16), "pad_to_multiple_of": run.args.pad_to_multiple_of, DEVICE_STEPS: STEPS}
    if (chose := trl_chose(run.args, device)) is not None:
        return chose.adding_details(details)
    if len(run.losses) != len(reference.losses):
        return ScenarioResult.failed(f"{len(run.losses)} steps on the device, {len(reference.losses)} on the CPU"
                                     ).adding_details(details)
    numerics = [
        compare(torch.stack(run.losses), torch.stack(reference.losses), "the loss of each step", tolerance,
                device=device),
        compare_named(run.gradients, reference.gradients, "the first step's gradient of", tolerance, device=device),
    ]
    compared = next((result for result in numerics if result.outcome != "passed"), None) or worst_of(numerics)
    if tolerance is not None and float32 is not None:
        compared = judged_against_float32(compared, _results(run), _results(reference), lambda: _results(float32()))
    weights = updated_weights(run.weights, run.gradients, reference.weights, reference.gradients, device)
    for result in [compared, weights, run.changes or ScenarioResult.passed()]:
        if result.outcome != "passed":
            return result.adding_details(details)
    return worst_of([compared, weights]).adding_details(details)


def _case(ctx: CaseContext, recipe: _Recipe) -> ScenarioResult:
    """``recipe`` trained on the device and on the CPU (the CPU's bf16 and padding, and GRPO's completions, the
    device run's), the device's run held to the CPU's."""
    import torch

    model = load_model(ctx, "cpu")
    if (skipped := untrainable(model)) is not None:  # a trainer lowers the model's own loss, as Trainer does
        return skipped
    if recipe.lora and (refused := lora_refused(model)) is not None:
        return refused
    with ctx.scratch() as out:
        run = _train(ctx, ctx.device, recipe, out)
        reference = _train(ctx, "cpu", recipe, out, like=run)
        result = held_to_the_cpu(run, reference, ctx.device,
                                 lambda: _train(ctx, "cpu", recipe, out, like=run, float32=True))
    if recipe.trainer == "GRPO":
        wanted = torch.device(ctx.device).type
        elsewhere = sorted(where for where in run.generated_on if torch.device(where).type != wanted)
        if elsewhere and result.outcome == "passed":
            return ScenarioResult.failed(f"GRPO generated on {', '.join(elsewhere)}, not on {wanted}")
        return result.adding_details({"completions": sum(len(batch) for batch in run.completions)})
    return result


#: What transformers says when a layer cannot keep packed rows apart without a kernel package (mamba_ssm,
#: causal_conv1d: CUDA only), on any device.
_PACKING_NEEDS_KERNELS = "can't keep packed sequences apart without"


def _legs(ctx: CaseContext, recipes: Mapping[str, _Recipe]) -> ScenarioResult:
    return ScenarioResult.of_legs([(name, _case(ctx, recipe)) for name, recipe in recipes.items()])


def _chats(rows: int) -> list[dict[str, Any]]:
    from hf_neuron.tiny.dataset import examples

    return examples("messages")[:rows]


def sft(ctx: CaseContext) -> ScenarioResult:
    """``SFTTrainer`` on the tiny chats (the tokenizer's chat template), two legs: ``packed`` (full fine-tuning, rows
    packed to :data:`MAX_LENGTH` tokens: TRL's padding-free batches) and ``lora`` (a LoRA adapter through
    ``peft_config``, padded batches). A model whose layers keep packed rows apart only with a CUDA kernel package
    (transformers refuses packed rows to the torch fallback of Mamba's and causal-conv1d's scans) skips ``packed``
    with transformers' reason and trains full fine-tuning on padded rows instead (leg ``padded``)."""
    rows = _chats(4 * BATCH)
    try:
        legs = [("packed", _case(ctx, _Recipe("SFT", rows, {"packing": True, "max_length": MAX_LENGTH})))]
    except ValueError as error:
        if _PACKING_NEEDS_KERNELS not in str(error):
            raise
        skipped = ScenarioResult.skipped(f"{error} (a CUDA kernel package, on no neuron machine: users train padded)")
        legs = [("packed", skipped),
                ("padded", _case(ctx, _Recipe("SFT", rows, {"max_length": MAX_LENGTH})))]
    legs.append(("lora", _case(ctx, _Recipe("SFT", rows, {"max_length": MAX_LENGTH}, lora=True))))
    return ScenarioResult.of_legs(legs)


def sft_image_text(ctx: CaseContext) -> ScenarioResult:
    """``SFTTrainer`` on the tiny image chats (TRL's vision data collator, the checkpoint's processor and its chat
    template), two legs: ``full`` (full fine-tuning) and ``lora`` (a LoRA adapter on the language model through
    ``peft_config``); TRL packs no vision rows. Skipped for a model whose ``forward`` names no ``labels`` (a policy
    trained on actions, a block diffusion model): SFT's loss is the next-token loss on the chats' labels; and for an
    encoder-decoder model (Pix2Struct, Florence-2, UDOP...), which SFTTrainer does not train, or one whose forward takes
    no images (Mistral 4's class in the image-text mapping). Untested (gap ``inputs``) where the architecture's
    processor does not build here."""
    import inspect

    from transformers import AutoConfig

    from hf_neuron.tiny.image_text.checkpoint import saved_processor
    from hf_neuron.tiny.image_text.dataset import image_chats
    from hf_neuron.tiny.image_text.image_processor import takes_images
    from hf_neuron.tiny.transformers.model_types import model_class

    cls = model_class(ctx.model_type)
    if "labels" not in inspect.signature(cls.forward).parameters:
        return ScenarioResult.skipped(f"{cls.__name__}.forward takes no labels: SFTTrainer's loss, the next-token "
                                      "loss on the chats' labels, does not apply to it")
    if not takes_images(cls):
        return ScenarioResult.skipped(f"{cls.__name__}.forward takes no images: TRL's vision SFT does not apply to it")
    if AutoConfig.from_pretrained(ctx.checkpoint).is_encoder_decoder:
        return ScenarioResult.skipped(f"{cls.__name__} is an encoder-decoder model: SFTTrainer trains causal language "
                                      "models only (TRL 1.16: 'Only causal language models are supported')")
    processor = saved_processor(ctx.checkpoint)
    if processor.startswith("none"):
        return ScenarioResult.untested(f"TRL's vision collator needs the architecture's processor, and the tiny "
                                       f"checkpoint has {processor}", "inputs")
    rows, settings, dataset = _image_rows(ctx.checkpoint, image_chats()[: 2 * BATCH])
    return _legs(ctx, {
        "full": _Recipe("SFT", rows, settings, processor=True),
        "lora": _Recipe("SFT", rows, settings, lora=True, processor=True),
    }).adding_details({"dataset": dataset})


def _image_rows(checkpoint: Path, chats: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    """The image chats as the checkpoint's processor takes them, the trainer settings they need, and which of TRL's
    formats that is: conversational where the processor loads with a chat template; else TRL's standard format, each
    chat rendered with the checkpoint's chat template by its tokenizer (what a user of a processor that drops its
    template does: the library bug "processor drops its chat template" of ``compat/library_bugs.toml``), its images
    beside the text. That format needs ``remove_unused_columns=False``: TRL 1.16 keeps only a vision dataset's
    ``messages``, ``prompt``, ``completion`` and image columns (``SFTTrainer._set_signature_columns_if_needed``), and
    its vision collator, which reads the ``text`` column, finds none."""
    from transformers import AutoProcessor, AutoTokenizer
    from transformers.utils import CHAT_TEMPLATE_FILE

    if AutoProcessor.from_pretrained(checkpoint).chat_template is not None:
        return chats, {}, "conversational"
    tokenizer, template = AutoTokenizer.from_pretrained(checkpoint), (checkpoint / CHAT_TEMPLATE_FILE).read_text()
    rows = [{"images": chat["images"],
             "text": tokenizer.apply_chat_template(chat["messages"], chat_template=template, tokenize=False)}
            for chat in chats]
    return rows, {"remove_unused_columns": False}, \
        "standard (the processor drops its chat template: rows rendered by the tokenizer)"


def dpo(ctx: CaseContext) -> ScenarioResult:
    """``DPOTrainer`` with a LoRA adapter (the reference model: the base with its adapter off) on conversational
    preference pairs (a question, its answer chosen, another question's rejected), rows truncated to
    :data:`MAX_LENGTH` tokens."""
    from hf_neuron.tiny.dataset import trl_formats

    rows = trl_formats()["conversational_preference"][: 2 * BATCH]
    return _case(ctx, _Recipe("DPO", rows, {"max_length": MAX_LENGTH}, lora=True))


def grpo(ctx: CaseContext) -> ScenarioResult:
    """``GRPOTrainer`` (full fine-tuning) on conversational prompts, :data:`GENERATIONS` completions of at most
    :data:`COMPLETION_TOKENS` tokens each sampled with transformers' ``generate`` (no vLLM), rewarded by
    :func:`even_token_share`."""
    from hf_neuron.tiny.dataset import trl_formats

    rows = trl_formats()["conversational_prompt_only"][: STEPS * BATCH // GENERATIONS]
    reward: Callable[..., list[float]] = even_token_share
    return _case(ctx, _Recipe("GRPO", rows, {"num_generations": GENERATIONS,
                                             "max_completion_length": COMPLETION_TOKENS},
                              extra={"reward_funcs": reward}))
