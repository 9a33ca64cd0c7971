#!/usr/bin/env python
"""Fine-tune a diffusion denoiser with a LoRA adapter: diffusers + PEFT + accelerate, on whatever device accelerate
picks (``neuron`` where hf-neuron is installed).

The shape of a diffusers LoRA training script, kept small: the pipeline's parts are read from a local folder
(``--pretrained_model_name_or_path``, a ``DiffusionPipeline.save_pretrained`` folder), the denoiser (a
Stable-Diffusion-style ``unet`` or a Flux-style ``transformer``) gets a PEFT LoRA adapter through diffusers' adapter
API (``add_adapter(LoraConfig(...))``) on its attention projections while everything else stays frozen, and
``--max_train_steps`` AdamW steps regress the noise (DDPM, epsilon or v-prediction) or the flow-matching velocity
(Flux) of a small dataset's latents. The adapter is saved with the pipeline class's ``save_lora_weights``
(``pytorch_lora_weights.safetensors``, loadable with ``load_lora_weights``), and ``trainer_state.json`` records the
losses and the device of every process.

Nothing is downloaded: ``--tiny UNet2DConditionModel`` (or ``FluxTransformer2DModel``) first writes hf-neuron's tiny
pipeline of that backbone into the folder when it holds none, and the dataset is synthetic (seeded pictures with
captions). One process or many::

    python scripts/train_diffusion_lora.py --tiny UNet2DConditionModel --pretrained_model_name_or_path tiny-sd \\
        --output_dir sd-lora --max_train_steps 5
    accelerate launch --device neuron --num_processes 2 scripts/train_diffusion_lora.py \\
        --tiny FluxTransformer2DModel --pretrained_model_name_or_path tiny-flux --output_dir flux-lora

``--cpu`` trains on the CPU (the reference a device run is compared with).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

#: The attention projections of diffusers' attention blocks, the usual LoRA targets of its training examples.
TARGET_MODULES = ("to_k", "to_q", "to_v", "to_out.0")
#: The denoiser's slot in a pipeline, in the order it is looked for.
DENOISERS = ("unet", "transformer")
#: Captions of the synthetic dataset (the picture of item ``i`` is drawn from seed ``i``).
CAPTIONS = ("a tiny red square", "a small blue circle", "a green triangle on white", "a yellow star at night")
TINY_BACKBONES = ("UNet2DConditionModel", "FluxTransformer2DModel")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (the option names of diffusers' training examples where they have one)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--pretrained_model_name_or_path", type=Path, required=True,
                        help="a local DiffusionPipeline folder (model_index.json and one subfolder per part)")
    parser.add_argument("--tiny", choices=TINY_BACKBONES,
                        help="write hf-neuron's tiny pipeline of this backbone into the folder first, if it has none")
    parser.add_argument("--output_dir", type=Path, default=Path("diffusion-lora"))
    parser.add_argument("--max_train_steps", type=int, default=10)
    parser.add_argument("--resolution", type=int, default=None,
                        help="the pictures' side in pixels (default: the denoiser's sample size in latents)")
    parser.add_argument("--train_batch_size", type=int, default=2, help="per process")
    parser.add_argument("--num_train_images", type=int, default=8, help="the synthetic dataset's size")
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--rank", type=int, default=4, help="the LoRA rank (lora_alpha is the same)")
    parser.add_argument("--max_sequence_length", type=int, default=16, help="text tokens of a Flux-style prompt")
    parser.add_argument("--guidance_scale", type=float, default=1.0, help="a guidance-distilled transformer's guidance")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mixed_precision", choices=("no", "fp16", "bf16"), default=None)
    parser.add_argument("--cpu", action="store_true", help="train on the CPU")
    return parser.parse_args(argv)


def write_tiny_pipeline(backbone: str, folder: Path, *, seed: int = 0) -> Path:
    """hf-neuron's tiny pipeline of ``backbone`` (the matrix's recipe, every part built locally) saved to ``folder``."""
    from hf_neuron.compat.tiny_diffusion import presets, recipe
    from hf_neuron.tiny.diffusion.backbones import build_backbone
    from hf_neuron.tiny.diffusion.pipelines import build_pipeline

    pipeline = build_pipeline(build_backbone(backbone, seed=seed), recipe(backbone), seed=seed, presets=presets())
    pipeline.save_pretrained(folder)
    return folder


class SyntheticImages(torch.utils.data.Dataset):
    """``size`` seeded RGB pictures of ``side`` pixels in [-1, 1], each with a caption."""

    def __init__(self, size: int, side: int) -> None:
        import numpy as np

        from hf_neuron.tiny.diffusion.pipelines import picture

        self.items = []
        for index in range(size):
            pixels = torch.from_numpy(np.asarray(picture(side, side, seed=index), dtype=np.float32))
            self.items.append((pixels.permute(2, 0, 1) / 127.5 - 1, CAPTIONS[index % len(CAPTIONS)]))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, str]:
        return self.items[index]


def _latent_side(denoiser: Any) -> int:
    """The denoiser's ``sample_size`` (a UNet's), else the tiny models' latent side."""
    from hf_neuron.tiny.diffusion.backbones import LATENT_SIZE

    size = denoiser.config.get("sample_size")
    return int(size[0] if isinstance(size, (list, tuple)) else size or LATENT_SIZE)


def _denoiser_slot(pipeline: Any) -> str:
    slot = next((name for name in DENOISERS if getattr(pipeline, name, None) is not None), None)
    if slot is None:
        raise SystemExit(f"{type(pipeline).__name__} has no {' or '.join(DENOISERS)} to train")
    if not hasattr(type(pipeline), "save_lora_weights"):
        raise SystemExit(f"{type(pipeline).__name__} cannot save LoRA weights (no LoRA loader mixin)")
    return slot


class Denoising:
    """The training objective of one pipeline kind: DDPM noise for a UNet, flow matching for a Flux-style
    transformer. Every random draw is made on the CPU from ``generator``, so every device draws the same."""

    def __init__(self, pipeline: Any, slot: str, args: argparse.Namespace, generator: torch.Generator) -> None:
        from diffusers import DDPMScheduler, FlowMatchEulerDiscreteScheduler

        self.pipeline, self.slot, self.args, self.generator = pipeline, slot, args, generator
        self.flow = slot == "transformer"
        scheduler_class = FlowMatchEulerDiscreteScheduler if self.flow else DDPMScheduler
        self.scheduler = scheduler_class.from_config(pipeline.scheduler.config)
        self.vae = pipeline.vae
        self.guided = bool(getattr(getattr(pipeline, slot).config, "guidance_embeds", False))

    def latents(self, pixels: torch.Tensor) -> torch.Tensor:
        config = self.vae.config
        sample = self.vae.encode(pixels.to(self.vae.dtype)).latent_dist.sample(generator=self.generator)
        return (sample - (getattr(config, "shift_factor", None) or 0.0)) * config.scaling_factor

    def text(self, captions: list[str], device: torch.device) -> dict[str, torch.Tensor]:
        """The frozen text encoders' conditioning, through the pipeline's own ``encode_prompt``."""
        if self.flow:
            embeds, pooled, text_ids = self.pipeline.encode_prompt(
                prompt=captions, prompt_2=None, device=device, max_sequence_length=self.args.max_sequence_length)
            return {"encoder_hidden_states": embeds, "pooled_projections": pooled, "txt_ids": text_ids}
        embeds, _ = self.pipeline.encode_prompt(captions, device, 1, False)
        return {"encoder_hidden_states": embeds}

    def loss(self, denoiser: torch.nn.Module, pixels: torch.Tensor, captions: list[str]) -> torch.Tensor:
        device = pixels.device
        with torch.no_grad():
            latents = self.latents(pixels)
            conditioning = self.text(captions, device)
        noise = torch.randn(latents.shape, generator=self.generator).to(device, latents.dtype)
        batch = latents.shape[0]
        if self.flow:
            return self._flow_loss(denoiser, latents, noise, conditioning)
        timesteps = torch.randint(0, self.scheduler.config.num_train_timesteps, (batch,),
                                  generator=self.generator).to(device)
        noisy = self.scheduler.add_noise(latents, noise, timesteps)
        if self.scheduler.config.prediction_type == "v_prediction":
            target = self.scheduler.get_velocity(latents, noise, timesteps)
        else:
            target = noise
        prediction = denoiser(noisy, timesteps, conditioning["encoder_hidden_states"], return_dict=False)[0]
        return torch.nn.functional.mse_loss(prediction.float(), target.float())

    def _flow_loss(self, denoiser: torch.nn.Module, latents: torch.Tensor, noise: torch.Tensor,
                   conditioning: dict[str, torch.Tensor]) -> torch.Tensor:
        pipeline_class = type(self.pipeline)
        batch, channels, height, width = latents.shape
        device = latents.device
        indices = (torch.rand(batch, generator=self.generator) * self.scheduler.config.num_train_timesteps).long()
        sigmas = self.scheduler.sigmas[indices].to(device, latents.dtype).view(-1, 1, 1, 1)
        timesteps = self.scheduler.timesteps[indices].to(device)
        noisy = (1 - sigmas) * latents + sigmas * noise
        guidance = torch.full((batch,), self.args.guidance_scale, device=device) if self.guided else None
        prediction = denoiser(
            hidden_states=pipeline_class._pack_latents(noisy, batch, channels, height, width),
            timestep=timesteps / 1000, guidance=guidance,
            img_ids=pipeline_class._prepare_latent_image_ids(batch, height // 2, width // 2, device, latents.dtype),
            return_dict=False, **conditioning)[0]
        scale = self.pipeline.vae_scale_factor
        prediction = pipeline_class._unpack_latents(prediction, height * scale, width * scale, scale)
        return torch.nn.functional.mse_loss(prediction.float(), (noise - latents).float())


def train(args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """Train, save the adapter; return what ``trainer_state.json`` records and the pipeline (its denoiser trained,
    with the adapter)."""
    from accelerate import Accelerator
    from diffusers import DiffusionPipeline
    from diffusers.utils import convert_state_dict_to_diffusers
    from peft import LoraConfig
    from peft.utils import get_peft_model_state_dict

    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)
    folder = args.pretrained_model_name_or_path
    if args.tiny and accelerator.is_main_process and not (folder / "model_index.json").is_file():
        write_tiny_pipeline(args.tiny, folder, seed=args.seed)
    accelerator.wait_for_everyone()

    pipeline = DiffusionPipeline.from_pretrained(folder)
    pipeline.set_progress_bar_config(disable=True)
    slot = _denoiser_slot(pipeline)
    denoiser: torch.nn.Module = getattr(pipeline, slot)
    for part in pipeline.components.values():
        if isinstance(part, torch.nn.Module):
            part.requires_grad_(False)
    torch.manual_seed(args.seed)  # the adapter's initial weights: the same on every process and device
    denoiser.add_adapter(LoraConfig(r=args.rank, lora_alpha=args.rank, init_lora_weights="gaussian",  # type: ignore[operator]
                                    target_modules=list(TARGET_MODULES)))
    pipeline.to(accelerator.device)
    denoiser.train()
    adapter = [p for p in denoiser.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(adapter, lr=args.learning_rate, foreach=False)
    side = args.resolution or _latent_side(denoiser) * pipeline.vae_scale_factor
    loader = torch.utils.data.DataLoader(SyntheticImages(args.num_train_images, side),
                                         batch_size=args.train_batch_size, shuffle=False)
    denoiser, optimizer, loader = accelerator.prepare(denoiser, optimizer, loader)
    objective = Denoising(pipeline, slot, args, torch.Generator().manual_seed(args.seed + accelerator.process_index))

    losses: list[float] = []
    epochs = math.ceil(args.max_train_steps / max(len(loader), 1))
    for _ in range(epochs):
        for pixels, captions in loader:
            if len(losses) == args.max_train_steps:
                break
            with accelerator.autocast():
                loss = objective.loss(denoiser, pixels, list(captions))
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(accelerator.reduce(loss.detach(), reduction="mean").item())
            accelerator.print(f"step {len(losses)}/{args.max_train_steps}: loss {losses[-1]:.6f}")

    devices = accelerator.gather_for_metrics([str(accelerator.device)], use_gather_object=True)
    accelerator.wait_for_everyone()
    state = {"pipeline": type(pipeline).__name__, "denoiser": slot, "world_size": accelerator.num_processes,
             "devices": devices, "losses": losses, "adapter": str(args.output_dir / "pytorch_lora_weights.safetensors")}
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(denoiser)
        layers = convert_state_dict_to_diffusers(get_peft_model_state_dict(unwrapped))
        type(pipeline).save_lora_weights(args.output_dir, **{f"{slot}_lora_layers": layers}, safe_serialization=True)
        (args.output_dir / "trainer_state.json").write_text(json.dumps(state, indent=1) + "\n")
    accelerator.wait_for_everyone()
    accelerator.end_training()
    return state, pipeline


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse the command line, train, save the adapter; return what ``trainer_state.json`` records."""
    return train(parse_args(argv))[0]


if __name__ == "__main__":
    main()
