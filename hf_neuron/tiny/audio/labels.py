"""Target audio codes for the training loss of a model that speaks in codes (csm, dia, higgs_audio_v2, musicgen), or
in continuous latents (pocket_tts).

Such a model's loss compares its per-codebook logits with code frames, not with the prompt's text: the harness makes
frames of the model's codebook shape (:func:`codebook_shape`: how many codebooks, how many codes each) and hands them
over the way ``compat/tiny_audio.toml``'s ``code_labels`` says (:data:`~hf_neuron.compat.tiny_audio.CODE_LABELS`).
Each code is a function of its row's token ids and its position, so the CPU and the device, and any subset of the
rows, see the same codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_audio import CodeLabels

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedConfig

__all__ = ["AUDIO_FRAMES", "IGNORE", "code_frames", "code_labels", "codebook_rows", "codebook_shape", "decoder_codes",
           "prompt_end"]

#: The label the losses ignore.
IGNORE = -100
#: How many prompt positions become audio placeholders under ``code_labels = "audio-frames"``.
AUDIO_FRAMES = 4
_COUNT_FIELDS = ("num_codebooks", "num_channels")
_SIZE_FIELDS = ("codebook_size", "vocab_size")


def _parts(config: PreTrainedConfig) -> list[Any]:
    """The config itself, then its decoder sub-configs, then the others (the codes are the decoder's)."""
    names = list(getattr(config, "sub_configs", {}))
    subs = [getattr(config, name, None) for name in sorted(names, key=lambda name: "decoder" not in name)]
    return [config, *(sub for sub in subs if sub is not None)]


def codebook_shape(config: PreTrainedConfig) -> tuple[int, int]:
    """``(codebooks, codes per codebook)`` of the model's own config (else its decoder's): the first part that has a
    count field (``num_codebooks``, ``num_channels``) gives both, its size from ``codebook_size`` or ``vocab_size``."""
    for part in _parts(config):
        count = next((value for name in _COUNT_FIELDS if isinstance(value := getattr(part, name, None), int)), None)
        size = next((value for name in _SIZE_FIELDS if isinstance(value := getattr(part, name, None), int)), None)
        if count is not None and size is not None and count > 0 and size > 0:
            return count, size
    raise LookupError(f"{type(config).__name__} names no codebooks ({', '.join(_COUNT_FIELDS)}) with a size "
                      f"({', '.join(_SIZE_FIELDS)})")


def code_frames(input_ids: torch.Tensor, codebooks: int, size: int, frames: int | None = None) -> torch.Tensor:
    """``(batch, frames, codebooks)`` codes below ``size`` drawn from each row's ids (``frames`` defaults to the
    rows' length; the ids repeat when it is longer): a row's codes depend on its ids alone."""
    import torch

    length = input_ids.shape[1] if frames is None else frames
    ids = input_ids[:, torch.arange(length, device=input_ids.device) % input_ids.shape[1]]
    position = torch.arange(length, device=input_ids.device)[None, :, None]
    codebook = torch.arange(codebooks, device=input_ids.device)[None, None, :]
    return (ids[:, :, None] * 31 + position * 7 + codebook * 13) % size


def codebook_rows(frames: torch.Tensor) -> torch.Tensor:
    """``(batch, steps, codebooks)`` frames as ``(batch * codebooks, steps)`` rows, a row per codebook."""
    return frames.transpose(1, 2).reshape(-1, frames.shape[1])


def decoder_codes(model: Any, input_ids: torch.Tensor, layout: CodeLabels | None) -> dict[str, torch.Tensor]:
    """The code frames a decoder that reads codes needs in a forward pass beside the prompt: under
    ``"codebook-rows"`` (musicgen, which has no start frame of its own), ``decoder_input_ids`` of one code row per
    codebook and prompt position; nothing for the other layouts (the model starts its decoder itself)."""
    if layout != "codebook-rows":
        return {}
    codebooks, size = codebook_shape(model.config)
    return {"decoder_input_ids": codebook_rows(code_frames(input_ids, codebooks, size))}


def prompt_end(model: Any, layout: CodeLabels | None) -> list[int]:
    """The ids a speaking prompt ends with: under ``"latent-frames"`` (pocket_tts), the first audio position
    (``audio_bos_token_id``), from which the model generates the first frame, as its processor ends every prompt;
    nothing for the other layouts."""
    if layout != "latent-frames":
        return []
    start = getattr(model.config, "audio_bos_token_id", None)
    if not isinstance(start, int):
        raise LookupError(f"{type(model.config).__name__} has no audio_bos_token_id to end the prompt with")
    return [start]


def _latent_labels(model: Any, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The prompt (ending at the audio start) followed by :data:`AUDIO_FRAMES` latent positions, and target latents
    of ``(batch, frames, latent_dim)`` for them."""
    import torch

    latent, width = getattr(model.config, "audio_latent_token_id", None), getattr(model.config, "latent_dim", None)
    if not isinstance(latent, int) or not isinstance(width, int):
        raise LookupError(f"{type(model.config).__name__} has no audio_latent_token_id and latent_dim")
    input_ids = inputs["input_ids"]
    frames = torch.full((input_ids.shape[0], AUDIO_FRAMES), latent, dtype=input_ids.dtype, device=input_ids.device)
    codes = code_frames(input_ids, width, 64, AUDIO_FRAMES)
    labels = torch.sin(codes.float() * 0.7 + 0.3)  # deterministic latents within [-1, 1]
    given = {"input_ids": torch.cat([input_ids, frames], dim=1), "labels": labels,
             "labels_mask": torch.ones(labels.shape[:2], dtype=torch.long, device=labels.device)}
    if "attention_mask" in inputs:
        given["attention_mask"] = torch.cat([inputs["attention_mask"], torch.ones_like(frames)], dim=1)
    return {**inputs, **given}


def code_labels(model: Any, inputs: Mapping[str, torch.Tensor], layout: CodeLabels) -> dict[str, torch.Tensor]:
    """``inputs`` (a speaking model's forward inputs) with target codes laid out as ``layout`` says (see
    :data:`~hf_neuron.compat.tiny_audio.CODE_LABELS`)."""
    import torch

    if layout == "latent-frames":
        return _latent_labels(model, inputs)
    codebooks, size = codebook_shape(model.config)
    input_ids = inputs["input_ids"]
    if layout == "frames":  # a code frame per prompt position; padding and each row's first token have no target
        labels = code_frames(input_ids, codebooks, size)
        attended = inputs.get("attention_mask", torch.ones_like(input_ids))
        keep = attended.bool() & (attended.cumsum(-1) > 1)
        return {**inputs, "labels": labels.masked_fill(~keep[:, :, None], IGNORE)}
    if layout == "codebook-rows":  # teacher forcing: code rows in, the next frames out
        codes = code_frames(input_ids, codebooks, size, input_ids.shape[1] + 1)
        return {**inputs, "decoder_input_ids": codebook_rows(codes[:, :-1]), "labels": codes[:, 1:]}
    if layout == "channels":  # teacher forcing: frames in, the next frames out, one label row per codebook
        codes = code_frames(input_ids, codebooks, size, input_ids.shape[1] + 1)
        labels = codes[:, 1:].transpose(1, 2).reshape(-1, input_ids.shape[1])
        return {**inputs, "decoder_input_ids": codes[:, :-1], "labels": labels}
    # "audio-frames": the prompt's last positions become audio placeholders, their code frames the audio input
    # and its targets
    placeholder = getattr(model.config, "audio_token_id", None)
    if not isinstance(placeholder, int):
        raise LookupError(f"{type(model.config).__name__} has no audio_token_id for the audio frames")
    codes = code_frames(input_ids, codebooks, size, AUDIO_FRAMES)
    prompt = input_ids.clone()
    prompt[:, -AUDIO_FRAMES:] = placeholder
    mask = torch.ones(codes.shape[:2], dtype=torch.bool, device=codes.device)
    return {**inputs, "input_ids": prompt, "audio_input_ids": codes, "audio_input_ids_mask": mask,
            "audio_labels": codes}
