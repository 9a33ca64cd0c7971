"""A checkpoint cut to a few layers at real width, sized to a memory budget before anything is allocated, and written
where a matrix case loads it.

The slice is the checkpoint's config through the tiny models' one shrinker told to keep width
(:class:`~hf_neuron.tiny.transformers.config.TinyDims` ``keep_width``; diffusers backbones: ``keep_width`` of
:func:`~hf_neuron.tiny.diffusion.backbones.tiny_config`): every layer count it has (decoder, encoder, text and
vision sub-configs) cut to ``layers``, one layer of every kind it declares kept (per-layer type lists, hybrid
patterns, dense and MoE layers, sliding and full attention), its special token ids moved onto the tiny tokenizer's;
every width, head, window, position limit, rope scaling, softcap, tying and routing setting kept. A quantized
checkpoint is sliced dequantized.

Before the slice is built its parameters are counted on the meta device and its peak memory estimated
(:data:`BYTES_PER_PARAMETER`, measured: float32 weights and gradients on the device and on the CPU that the scenarios
compare with, the checkpoint's weights as read, activations; :data:`BYTES_PER_PARAMETER_INFERENCE` for a case that
does not train: no gradients). When a training case's estimate is over the budget, the slice is cut further,
each step recorded: one layer; then a smaller vocabulary; then fewer experts (never fewer than a token is routed to).
The cuts are the same for every case of a checkpoint (one slice a checkpoint): a case that does not train runs on the
slice the training cases' estimate cut, whenever its own estimate fits.
A step is not taken when the slice it makes
lacks a class of module the slice had (:func:`_kinds`): a hybrid model's first layer alone, a linear-attention or Mamba
one, has no attention layer (transformers' caches refuse such a model: "get_seq_length can only be called on
Attention layers"), and DeepSeek-V3's, dense, no router and no experts. A slice still over the budget is not built:
its cases are untested (gap ``memory-budget``), never run out of memory.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.checkpoint.plan import build_config, meta_model, routed_experts, routed_top_k
from hf_neuron.checkpoint.source import CheckpointSource

if TYPE_CHECKING:
    import torch

    from hf_neuron.tiny.transformers.config import TinyDims

__all__ = [
    "BYTES_PER_PARAMETER",
    "BYTES_PER_PARAMETER_INFERENCE",
    "DEFAULT_LAYERS",
    "SMALLER_VOCABULARIES",
    "CheckpointSlice",
    "SliceRequest",
    "available_memory",
    "default_budget",
    "materialize",
    "plan_slice",
    "release",
    "slice_config",
    "slice_dims",
]

#: Layers a slice keeps unless told otherwise (more where the config declares more kinds of layer: one of each).
DEFAULT_LAYERS = 2
#: Peak bytes of a slice's case per parameter, as measured (a worker's peak resident memory over a checkpoint's cases):
#: float32 weights on the device and on the CPU and the gradients of both sides while they are compared are 16; the
#: weights read from the checkpoint's files, the copies a placement makes, activations and the interpreter bring it to
#: 27.9 for Qwen3-30B-A3B's slice (656.7 M parameters, 17.1 GiB over its five cases). At 12, the figure before that
#: measurement, two workers of the nightly ran a 23 GiB machine out of memory (six cases killed in nightly-20261206).
BYTES_PER_PARAMETER = 28
#: The same for a case that does not train (``forward``, ``generate``, ``compile``): float32 weights on the device and
#: on the CPU, no gradients. Measured as the figure above, a worker's peak over those three cases of a slice: 15.7 for
#: Mixtral-8x7B's (763.4 M parameters, 11.2 GiB; its compiled forward keeps a second copy on the device), 12.8 for
#: GPT-NeoX-20B's (553.7 M), 9.3 for SDXL's UNet (436.1 M).
BYTES_PER_PARAMETER_INFERENCE = 16
#: The vocabularies a slice over its budget tries, largest first (each at least the tiny tokenizer's 1024 ids).
SMALLER_VOCABULARIES = (32768, 8192, 2048)
#: Experts a slice over its budget keeps, most first (never fewer than a token is routed to).
FEWER_EXPERTS = (32, 16, 8, 4, 2, 1)
#: The share of the memory available when a run starts that slices may use, divided among the run's workers.
_BUDGET_SHARE = 0.75


@dataclasses.dataclass(frozen=True)
class CheckpointSlice:
    """A checkpoint's slice: the config keyword arguments that build it (``kwargs``; a diffusers backbone's
    arguments), its ``parameters``, its estimated peak ``bytes`` for the cases it was planned for (training or not)
    against the ``budget`` (bytes), whether it ``fits``, the ``layers`` it keeps, what was cut to fit (``reductions``,
    in order, each a sentence), and the shrinker's ``dims`` its group builds it with."""

    kwargs: Mapping[str, Any]
    parameters: int
    bytes: int
    budget: int
    fits: bool
    layers: int
    reductions: tuple[str, ...]
    dims: TinyDims


@dataclasses.dataclass(frozen=True)
class SliceRequest:
    """A case's checkpoint, as the run asks for it: its ``id`` (Hub id, or a local checkpoint's name), the ``config``
    file it is read from (:func:`hf_neuron.checkpoint.source.resolve` takes it), the ``layers`` to keep, the memory
    ``budget`` (bytes) of its slice, and whether the case ``trains`` (its scenario's fact; a case that does not needs
    less memory)."""

    id: str
    config: Path
    layers: int
    budget: int
    trains: bool = True


def available_memory() -> int:
    """The bytes of memory this machine has available now (``MemAvailable`` of ``/proc/meminfo``; the physical memory
    where the system does not say)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_budget(workers: int = 1) -> int:
    """The memory budget of one slice when ``workers`` processes run slices side by side: 3/4 of the memory available
    now, shared among them."""
    return int(available_memory() * _BUDGET_SHARE / max(1, workers))


def slice_dims(source: CheckpointSource, *, layers: int = DEFAULT_LAYERS, vocab: int | None = None,
               experts: int | None = None) -> TinyDims:
    """The shrinker's dims of ``source``'s slice: width kept, ``layers`` layers (up to one of every kind its config
    declares), at most ``vocab`` tokens and ``experts`` experts where given (None keeps the checkpoint's)."""
    from hf_neuron.tiny.transformers.config import DIMS

    top_k = routed_top_k(build_config(source)) if experts is not None else None
    return dataclasses.replace(DIMS, keep_width=True, num_layers=layers,
                               max_layers=max(layers, DIMS.max_layers) if layers > 1 else 1, vocab_size=vocab,
                               num_experts=experts,
                               experts_per_token=None if experts is None or top_k is None else min(top_k, experts))


def slice_config(source: CheckpointSource, *, layers: int = DEFAULT_LAYERS, vocab: int | None = None,
                 experts: int | None = None) -> dict[str, Any]:
    """The config keyword arguments (a diffusers backbone's arguments) of ``source``'s slice, as its group builds
    it (see :func:`slice_dims`)."""
    from hf_neuron.tiny.groups import group_models

    dims = slice_dims(source, layers=layers, vocab=vocab, experts=experts)
    return group_models(source.group).config_kwargs(source.architecture, base=source.config, dims=dims)


def _meta(source: CheckpointSource, kwargs: Mapping[str, Any]) -> torch.nn.Module:
    """The slice of ``kwargs`` built on the meta device."""
    return meta_model(dataclasses.replace(source, config={**kwargs, **_type_key(source)}))


def _type_key(source: CheckpointSource) -> dict[str, str]:
    return {"_class_name": source.architecture} if source.library == "diffusers" else {
        "model_type": source.architecture}


def _size(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in dict.fromkeys(module.parameters()))


def _kinds(module: torch.nn.Module) -> set[str]:
    """The kinds of module ``module`` is made of: the names of their classes (a cut to fit keeps them all)."""
    return {type(part).__name__ for part in module.modules()}


def _vocabulary(model: torch.nn.Module) -> int | None:
    """The tokens the model embeds: its input embedding's, else its text config's vocabulary (None for a model with
    neither: a diffusers backbone)."""
    try:
        count = getattr(model.get_input_embeddings(), "num_embeddings", None)  # type: ignore[operator]
    except (AttributeError, NotImplementedError):  # a composite of sub-models: its text config says
        text_config = getattr(getattr(model, "config", None), "get_text_config", None)  # a diffusers config has none
        count = getattr(text_config(decoder=True), "vocab_size", None) if text_config is not None else None
    return count if isinstance(count, int) else None


def plan_slice(source: CheckpointSource, *, budget: int, layers: int = DEFAULT_LAYERS,
               trains: bool = True) -> CheckpointSlice:
    """The slice of ``source`` whose training cases fit ``budget`` bytes: ``layers`` layers, else cut further step by
    step (see the module docstring); its ``bytes`` and ``fits`` for a case that ``trains`` or not. ``fits`` is False
    when even the smallest step does not fit that case."""
    cut: dict[str, Any] = {"layers": layers, "vocab": None, "experts": None}
    kwargs = slice_config(source, **cut)
    model = _meta(source, kwargs)
    count = _size(model)
    kinds = _kinds(model)
    full_vocab = _vocabulary(model)
    routed = max((experts for _, _, experts in routed_experts(model)), default=0)
    top_k = routed_top_k(build_config(source)) if routed and source.library == "transformers" else None
    steps: list[tuple[str, Any]] = [("layers", 1)] if layers > 1 else []
    steps += [("vocab", size) for size in SMALLER_VOCABULARIES if full_vocab is not None and size < full_vocab]
    steps += [("experts", size) for size in FEWER_EXPERTS if top_k is not None and top_k <= size < routed]
    for dimension, value in steps:
        if count * BYTES_PER_PARAMETER <= budget:
            break
        smaller = {**cut, dimension: value}
        smaller_kwargs = slice_config(source, **smaller)
        smaller_model = _meta(source, smaller_kwargs)
        if _kinds(smaller_model) >= kinds:
            cut, kwargs, count = smaller, smaller_kwargs, _size(smaller_model)
    reductions = [sentence for sentence in (
        f"{cut['layers']} layer{'s' if cut['layers'] > 1 else ''} (asked for {layers})" if cut["layers"] != layers
        else None,
        f"vocabulary {full_vocab} -> {cut['vocab']}" if cut["vocab"] is not None else None,
        f"experts {routed} -> {cut['experts']}" if cut["experts"] is not None else None,
    ) if sentence is not None]
    needed = count * (BYTES_PER_PARAMETER if trains else BYTES_PER_PARAMETER_INFERENCE)
    return CheckpointSlice(kwargs, count, needed, budget, needed <= budget, cut["layers"], tuple(reductions),
                           slice_dims(source, **cut))


def materialize(source: CheckpointSource, planned: CheckpointSlice, out_dir: Path, *, seed: int = 0) -> Path:
    """Write ``planned`` (which must fit) to ``out_dir`` as its group writes a checkpoint that ``from_pretrained``
    loads (config, weights drawn from ``seed``, the tiny tokenizer and the feature extractor or processor of the
    model's group), reused when already there; safe from several processes at once."""
    from hf_neuron.tiny.groups import group_models

    if not planned.fits:
        raise ValueError(f"the slice of {source.name} does not fit its budget: it is not built")
    return group_models(source.group).materialize(source.architecture, out_dir, seed=seed, base=source.config,
                                                  dims=planned.dims)


def release(out_dir: Path) -> None:
    """Remove a slice's files (a slice of a real checkpoint can take gigabytes: the matrix removes each when its
    checkpoint's cases are done)."""
    target = out_dir.resolve() if out_dir.is_symlink() else out_dir
    if out_dir.is_symlink():
        out_dir.unlink(missing_ok=True)
    shutil.rmtree(target, ignore_errors=True)
