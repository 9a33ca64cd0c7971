"""The scenario set the matrix runs by default (``SCENARIOS``, in run order), each declared once.

Each scenario follows :mod:`hf_neuron.matrix.scenarios.contract`: one job, the device compared with the CPU, torch
and the Hugging Face libraries imported inside the functions. Every group that shares the transformers library's
bodies (the text groups, image-text) runs the transformers scenarios with the same functions
(:mod:`~hf_neuron.matrix.scenarios.text`, :mod:`~hf_neuron.matrix.scenarios.training`,
:mod:`~hf_neuron.matrix.scenarios.ddp`), their differences asked of the group's package through
:mod:`~hf_neuron.matrix.scenarios.text_models`; diffusion backbones run their own
(:mod:`~hf_neuron.matrix.scenarios.diffusion`). A checkpoint's real-width slice runs the scenarios whose ``models``
name ``checkpoints`` (``forward``, ``backward``, ``generate``, ``compile``, ``dtype``;
:mod:`~hf_neuron.matrix.scenarios.checkpoint`). Add a scenario by writing its function and declaring it here (or in a
scenario module of your own, ``--scenario-module``).
"""

from __future__ import annotations

from hf_neuron.matrix.scenarios import checkpoint, ddp, diffusion, text, training, trl_cli, trl_trainers
from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration
from hf_neuron.matrix.selection import TOP_RANKED_FEATURE
from hf_neuron.vocabulary.scenarios import ModelSource

__all__ = ["SCENARIOS"]

#: The scenarios that run on the tiny models and on the checkpoints' slices alike.
_BOTH: tuple[ModelSource, ...] = ("tiny", "checkpoints")

SCENARIOS: tuple[ScenarioDeclaration, ...] = (
    ScenarioDeclaration(
        "load", "core", False, {"transformers": text.load, "diffusers": diffusion.load},
        '`from_pretrained(checkpoint, device_map="neuron")` puts every parameter and buffer on neuron, with exactly '
        "the values a CPU load holds"),
    ScenarioDeclaration(
        "forward", "core", False, {"transformers": text.forward, "diffusers": diffusion.forward},
        "the outputs the group compares (a language model's logits; diffusion: one denoiser call's prediction) are "
        "within tolerance of the CPU's; a transformers model that draws random numbers in its forward pass is "
        "untested (when the comparison fails, the CPU's outputs move with the seed alone)", models=_BOTH),
    ScenarioDeclaration(
        "backward", "core", True, {"transformers": checkpoint.backward, "diffusers": diffusion.backward},
        "a checkpoint's slice: a forward pass with labels (the group's training loss; diffusion: the denoising loss) "
        "and its backward give the CPU's loss and every parameter's gradient in float32; not applicable to a model "
        "without a training loss", models=("checkpoints",)),
    ScenarioDeclaration(
        "generate", "core", False, {"transformers": text.generate, "diffusers": diffusion.generate},
        "greedy decoding picks the CPU's tokens and each step's scores are within tolerance, one leg with the default "
        "cache and one with a static cache (which transformers compiles with the `neuron` backend; the leg says how "
        "many graphs that took, and does not apply to a model without static-cache decoding, nor to one whose class "
        "declares none, `_can_compile_fullgraph` False, which transformers' own tests decode with no static cache: "
        "`generate_compiled` compiles it); "
        "what a generation "
        "makes besides tokens (a waveform, codes, a spectrogram) within tolerance; diffusion: a two-step run of the "
        "backbone's diffusers pipeline (tiny VAE, text encoders, scheduler, built locally) makes the CPU's images, "
        "video frames or audio and denoised latents; it does not apply where diffusers ships no pipeline for the "
        "backbone; a checkpoint's slice decodes likewise (a diffusion checkpoint's pipeline does not apply: it needs "
        "the checkpoint's own text encoders and VAE); a transformers model that draws random numbers in its generation "
        "is untested (when the comparison fails, the CPU's generation moves with the seed alone)", decodes=True,
        models=_BOTH),
    ScenarioDeclaration(
        "train", "core", True, {"transformers": training.train, "diffusers": diffusion.train},
        "one AdamW step (`foreach` pinned, the group's labels) gives the CPU's loss, gradients and updated weights; "
        "three more steps lower the loss; not applicable to a model without a training loss, with the group's "
        "reason (diffusion: on a denoising loss, the prediction's mean squared error against a fixed target)"),
    ScenarioDeclaration(
        "lora", "extra", True, {"transformers": training.lora, "diffusers": diffusion.lora},
        "a PEFT LoRA adapter on all linear layers (but those PEFT refuses on the architecture: Mamba's `out_proj`; "
        "image-text: the language model's; diffusion: the denoiser's "
        "attention projections `to_q`, `to_k`, `to_v`, `to_out.0`, added with diffusers' `add_adapter`, a backbone "
        "without them untested with gap `lora-targets`) trains like the CPU's: loss, gradients, updated adapter "
        "weights; only adapter weights change; the loss goes down"),
    ScenarioDeclaration(
        "bf16", "extra", False, {"transformers": text.bf16, "diffusers": diffusion.bf16},
        "bfloat16 logits within the bfloat16 tolerance, greedy tokens agree (two legs); diffusion: the denoiser "
        "loaded in bfloat16, its prediction within the bfloat16 tolerance; a transformers leg that draws random "
        "numbers is untested as in `forward` and `generate`", decodes=True),
    ScenarioDeclaration(
        "compile", "extra", False, {"transformers": text.compile_forward, "diffusers": diffusion.compile_forward},
        '`torch.compile(model, backend="neuron")` computes the eager logits (diffusion: the denoiser\'s prediction) '
        "with the `neuron` backend (any other backend on a neuron device is a failure, never a silent substitute); "
        "the record keeps the graphs, graph breaks and their reasons, each with where the model's code broke "
        "(`modeling_qwen2_vl.py:get_rope_index`)", models=_BOTH),
    ScenarioDeclaration(
        "dtype", "extra", True, {"transformers": checkpoint.dtype},
        "a checkpoint's slice in the dtype its config states (`torch_dtype`: bfloat16 or float16): logits and greedy "
        "decoding as `bf16` checks them, and a backward's loss and gradients, within that dtype's tolerance; not "
        "applicable to a checkpoint that states float32 or no dtype", decodes=True, models=("checkpoints",)),
    ScenarioDeclaration(
        "save", "extra", False, {"transformers": text.save, "diffusers": diffusion.save},
        "`save_pretrained` from neuron, `from_pretrained` back onto neuron: exactly the saved model's forward "
        "outputs (diffusion: the denoiser's prediction), and the CPU's within tolerance"),
    ScenarioDeclaration(
        "ddp", "extra", True, {"transformers": ddp.ddp, "diffusers": diffusion.ddp},
        "a 2-process DDP step's gradients (one row a rank) equal one process's on the whole batch; each rank reports "
        "its device and peak memory; one visible device makes it untested, and so does a training step that draws "
        "random numbers (when the comparison fails, one process's gradients move with its step's seed alone); "
        "diffusion: on the denoising loss `train` steps on, the target drawn for the whole batch"),
    ScenarioDeclaration(
        "tp", "extra", False, {"diffusers": diffusion.tp},
        "a diffusion denoiser sharded over 2 neuron ranks by diffusers' tensor parallelism (`enable_parallelism` "
        "with a `TensorParallelConfig`; on neuron, `hooks/tensor_parallel_neuron.py` shards each planned weight on "
        "the CPU first) predicts on every rank what one process does on the CPU; not applicable to a backbone whose "
        "class has no `_tp_plan` (diffusers ships one for Flux, Flux2 and the QwenImage transformers) or off "
        "neuron; one visible device makes it untested"),
    ScenarioDeclaration(
        "sft", "extra", True, {"decoder": trl_trainers.sft, "image-text": trl_trainers.sft_image_text},
        "TRL's `SFTTrainer` on tiny chats (the checkpoint's chat template; image-text: images, TRL's vision collator "
        "and the model's processor) with what TRL chooses on neuron (bf16, padding to a multiple of 128): every "
        "step's loss, the first step's gradients and updated weights within tolerance of a CPU run's, two legs: full "
        "fine-tuning (decoders: packed, padding-free rows; padded rows, the packed leg skipped, where transformers "
        "keeps packed rows apart only with a CUDA kernel package: Mamba's and causal-conv1d's scans) and a LoRA "
        "adapter through `peft_config`; image-text untested where the model's processor does not build here; "
        "a model without gradient checkpointing trains with TRL's default of it turned off, as its users do"),
    ScenarioDeclaration(
        "dpo", "extra", True, {"decoder": trl_trainers.dpo},
        "TRL's `DPOTrainer` with a LoRA adapter on tiny preference pairs: every step's loss, the first step's "
        "gradients and updated adapter weights within tolerance of a CPU run's"),
    ScenarioDeclaration(
        "grpo", "extra", True, {"decoder": trl_trainers.grpo},
        "TRL's `GRPOTrainer` sampling completions with transformers' `generate` on the device (no vLLM) and a tiny "
        "reward function: every step's loss, the first step's gradients and updated weights within tolerance of a "
        "CPU run trained on the same completions", decodes=True),
    ScenarioDeclaration(
        "trl_cli", "extra", True, {"decoder": trl_cli.trl_cli},
        "`trl sft` and `accelerate launch --device neuron -m trl.scripts.sft` on 2 neuron processes train with "
        "bf16 and padding to 128 chosen by TRL, every step's loss within tolerance of one CPU process's on the whole "
        "batch; for the best-ranked decoders only; one visible device makes it untested",
        requires=TOP_RANKED_FEATURE),
    ScenarioDeclaration(
        "sdpa", "variant", False, {"transformers": text.sdpa},
        '`forward` with `attn_implementation="sdpa"` (eager is `forward` itself)', requires="sdpa"),
    ScenarioDeclaration(
        "flex_attention", "variant", False, {"transformers": text.flex_attention},
        '`forward` with `attn_implementation="flex_attention"`: transformers compiles the attention and its block '
        "mask with torch.compile's default backend, which TorchNeuron 2.33 and later replace with `neuron` on the "
        "device; its outputs equal the CPU's `forward` with the model's eager attention (torch's FlexAttention on "
        "the CPU corrupts memory for some shapes, pytorch/pytorch#153145); under the pre-release tree it fails with "
        "class `flex-attention` and a message saying to use `sdpa` or `eager`",
        requires="flex-attention"),
    ScenarioDeclaration(
        "generate_compiled", "variant", False, {"transformers": text.generate_compiled},
        "`generate(compile_config=CompileConfig())` with a static cache, as transformers' docs show it: no backend "
        "chosen, so on neuron the shim compiles it with the device's (`neuron`, `dynamic=False`, `mode=\"default\"`) "
        "where `CompileConfig`'s own default is Inductor; greedy decoding picks the CPU's tokens and each step's "
        "scores are within tolerance, the record says how many graphs it compiled; its graph budget: decoded "
        "afresh with 10 new tokens instead of 6, it compiles no more graphs (once per shape, not once per token), "
        "else the case fails naming Dynamo's guard; not applicable where transformers compiles nothing for the "
        "model; a class that declares no static-cache decoding (`_can_compile_fullgraph` False) is compiled too, as "
        "`generate` compiles it for a user who asks for a static cache", decodes=True),
    ScenarioDeclaration(
        "train_aux_loss", "variant", True, {"transformers": training.train_aux_loss},
        "`train` with `output_router_logits=True`, the router's auxiliary loss included (mixture-of-experts models)",
        requires="router-logits"),
)
