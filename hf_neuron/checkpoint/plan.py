"""A checkpoint at full size, planned without allocating: the model built on the meta device, its parameters counted,
its memory by use, and the NeuronCores that hold it.

The formulas (each documented in ``docs/checkpoints.md``):

* **parameters**: every parameter of the model class built from the checkpoint's config on the meta device, tied ones
  once (what model cards publish). **active parameters** per token of a mixture of experts: the routed experts'
  parameters (modules named ``experts`` or of an ``*Experts`` class, shared experts excluded) count ``k / E`` of
  theirs, ``E`` the experts of the module and ``k`` the experts each token is routed to (the config's
  ``num_experts_per_tok`` or its synonyms); None for a model without routed experts.
* **weights**: parameters x the bytes of the dtype the checkpoint runs in (the dtype it states; float32 where it
  states none; bfloat16 for a quantized checkpoint that runs dequantized).
* **inference**: the weights plus the KV cache of ``batch`` sequences of ``seq`` tokens (at most the model's
  ``max_position_embeddings``), in that dtype: per attention
  layer of the language model, keys and values of ``num_key_value_heads x head_dim`` per token (multi-head latent
  attention: keys of ``qk_nope_head_dim + qk_rope_head_dim`` and values of ``v_head_dim`` for every head, as
  transformers caches them), ``min(seq, window)`` tokens for a sliding-window layer and ``min(seq, chunk)`` for a
  chunked one, none for a recurrent or linear-attention layer; twice for an encoder-decoder (its cross-attention
  cache over an encoder sequence of ``seq``).
* **full fine-tune** (mixed precision, AdamW): 16 bytes per parameter (float32 weights, float32 gradients, AdamW's two
  float32 moments; bfloat16 autocast keeps float32 weights) plus the activations.
* **LoRA**: the frozen weights in the checkpoint's dtype, plus 16 bytes per adapter parameter (rank ``lora_rank`` on
  every linear layer but the output embedding: ``rank x (in + out)`` each), plus the activations.
* **activations** (training): the language model's, by Korthikanti et al. 2022 (16-bit, no recomputation), without
  the attention scores (the device's fused scaled-dot-product attention does not keep them):
  ``34 x seq x batch x hidden`` bytes per layer, plus the float32 logits and their gradient; vision, audio and
  diffusion activations are not estimated.
* **NeuronCores**: the fewest logical cores (and chips) of each Trainium family of ``compat/hardware.toml`` whose
  memory holds the bytes of a use, sharded evenly (:func:`hf_neuron.checkpoint.instances.placement`): a lower bound.
* **attention width**: ``num_attention_heads x (key dim + value dim)`` (``2 x head_dim``; multi-head latent
  attention: ``qk_nope_head_dim + qk_rope_head_dim + v_head_dim``) summed over the language model's layers that cache
  keys and values (none for a recurrent or linear-attention layer): a token attending to ``c`` earlier tokens costs
  ``2 x width x c`` FLOPs more, its scores and their weighted sum (:mod:`hf_neuron.checkpoint.cost`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.checkpoint.instances import Placement, placement
from hf_neuron.checkpoint.quantization import quantization
from hf_neuron.checkpoint.source import CheckpointSource
from hf_neuron.compat.hardware import trainium_families

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedConfig

__all__ = ["DTYPE_BYTES", "USES", "Memory", "Plan", "build_config", "meta_model", "plan", "routed_experts",
           "routed_top_k"]

#: Bytes of an element of each dtype a checkpoint runs in.
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
#: The uses a checkpoint's memory is planned for, in the order they are shown.
USES = ("inference", "full_fine_tune", "lora")
#: Bytes per trained parameter in mixed precision with AdamW: float32 weights, gradients, and two moments.
_TRAINED_BYTES = 16
#: Config fields that say how many experts a token is routed to (the first present wins).
_TOP_K = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "top_k_experts", "moe_top_k", "moe_k",
          "top_k", "router_top_k", "num_selected_experts", "n_activated_experts", "num_activated_experts")
_ROUTED = re.compile(r"experts?$")


@dataclasses.dataclass(frozen=True)
class Memory:
    """Bytes by use (:data:`USES`), and the parts they are made of."""

    inference: int
    full_fine_tune: int
    lora: int
    weights: int
    kv_cache: int
    activations: int
    adapter_parameters: int

    def by_use(self) -> dict[str, int]:
        return {use: getattr(self, use) for use in USES}


@dataclasses.dataclass(frozen=True)
class Plan:
    """A checkpoint at full size: ``parameters`` (total), ``active_parameters`` per token (None: not a mixture of
    experts, or its config does not say how many experts a token uses), the ``dtype`` its weights are counted in,
    ``memory`` by use at ``seq`` tokens x ``batch`` (LoRA of ``lora_rank``), per Trainium family and use the
    cores and chips that hold it (``neuron_cores``), and the language model's ``attention_width`` (0: none)."""

    parameters: int
    active_parameters: int | None
    dtype: str
    memory: Memory
    neuron_cores: Mapping[str, Mapping[str, Placement]]
    seq: int
    batch: int
    lora_rank: int
    attention_width: int = 0


def build_config(source: CheckpointSource) -> PreTrainedConfig:
    """The transformers config object of a checkpoint's config, as ``from_pretrained`` would read it."""
    from transformers import AutoConfig

    values = {key: value for key, value in source.config.items() if key != "model_type"}
    return AutoConfig.for_model(source.architecture, **values)


def meta_model(source: CheckpointSource) -> torch.nn.Module:
    """The checkpoint's model class built from its config on the meta device (no memory, no initialization)."""
    import torch

    if source.library == "diffusers":
        from hf_neuron.tiny.diffusion.backbones import backbone_class

        cls: Any = backbone_class(source.architecture)
        arguments = {key: value for key, value in source.config.items() if not key.startswith("_")}
        with torch.device("meta"):
            model: torch.nn.Module = cls.from_config(arguments)
        return model
    from transformers.initialization import no_init_weights

    from hf_neuron.tiny.transformers.model_types import model_class, model_config

    config = build_config(source)
    with torch.device("meta"), no_init_weights():
        built = model_class(source.architecture)(model_config(source.architecture, config))
    built.tie_weights()  # without initialization nothing tied them: a tied output embedding counts once
    return built


def _unique_parameters(module: torch.nn.Module) -> Iterator[torch.nn.Parameter]:
    return iter(dict.fromkeys(module.parameters()))


def routed_experts(model: torch.nn.Module) -> Iterator[tuple[str, torch.nn.Module, int]]:
    """The routed-expert modules of ``model`` (outermost only): ``(name, module, experts)``, ``experts`` the number of
    experts it holds (a list's length, or the leading dimension of fused expert weights)."""
    import torch

    taken: list[str] = []
    for name, module in model.named_modules():
        last = name.rsplit(".", 1)[-1]
        kind = type(module).__name__
        routed = (_ROUTED.search(last) and "shared" not in last) or (
            kind.endswith("Experts") and "Shared" not in kind)
        if not routed or any(name.startswith(f"{outer}.") for outer in taken):
            continue
        if isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            experts = len(module)
        else:
            fused = [p for p in module.parameters(recurse=False) if p.dim() == 3]
            if not fused:
                continue
            experts = fused[0].shape[0]
        if experts > 1:
            taken.append(name)
            yield name, module, experts


def _text(config: PreTrainedConfig) -> PreTrainedConfig:
    try:
        return config.get_text_config(decoder=True)
    except (ValueError, AttributeError):
        return config


def routed_top_k(config: PreTrainedConfig) -> int | None:
    """How many experts a token is routed to, as the config states it (None where it does not)."""
    for owner in (_text(config), config):
        for field in _TOP_K:
            value = getattr(owner, field, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _active(model: torch.nn.Module, config: PreTrainedConfig | None, total: int) -> int | None:
    """Parameters a token uses: all but the unrouted share of the routed experts (see the module docstring)."""
    routed = list(routed_experts(model))
    top_k = routed_top_k(config) if config is not None else None
    if not routed or top_k is None:
        return None
    idle = sum(sum(p.numel() for p in _unique_parameters(module)) * (experts - min(top_k, experts)) / experts
               for _, module, experts in routed)
    return round(total - idle)


def _layer_windows(text: PreTrainedConfig, layers: int, seq: int) -> list[int]:
    """The tokens each layer of the language model caches at ``seq`` tokens: by its kind as transformers' caches read
    it (``get_layer_types_and_kwargs``: its ``layer_types``, else its window or chunk), or its
    ``layers_block_type``; none for a layer without attention."""
    kinds: list[str] = []
    windows: list[int | None] = []
    try:
        block_types = getattr(text, "layers_block_type", None)
    except Exception:  # noqa: BLE001 - some configs compute it and refuse
        block_types = None
    if getattr(text, "layer_types", None) is None and isinstance(block_types, (list, tuple)):
        kinds, windows = [str(kind) for kind in block_types], [None] * len(block_types)
    else:
        from transformers.cache_utils import get_layer_types_and_kwargs

        try:
            found, per_layer = get_layer_types_and_kwargs(text)
        except Exception:  # noqa: BLE001 - a config its caches cannot read: full attention everywhere
            found, per_layer = ["full_attention"] * layers, [{}] * layers
        kinds, windows = list(found), [kwargs.get("sliding_window") for kwargs in per_layer]
    tokens = []
    for kind, window in zip(kinds, windows, strict=False):
        if kind == "dummy" or re.search(r"linear|mamba|recurrent|ssm|conv|mlp|moe|rwkv|deltanet", kind):
            tokens.append(0)
        else:
            tokens.append(min(seq, window) if isinstance(window, int) and window > 0 else seq)
    return tokens


def _int(owner: Any, *names: str) -> int | None:
    """The first of ``names`` that ``owner`` holds as a positive whole number (None for none; a heterogeneous
    config's per-layer field read globally counts as none)."""
    for name in names:
        try:
            value = getattr(owner, name, None)
        except Exception:  # noqa: BLE001 - e.g. a per-layer field of a heterogeneous config, read globally
            value = None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _kv_per_token(layer: Any) -> int:
    """Elements of keys and values one token leaves in one layer's cache (see the module docstring)."""
    heads = _int(layer, "num_attention_heads")
    hidden = _int(layer, "hidden_size")
    if heads is None or hidden is None:
        return 0
    if _int(layer, "kv_lora_rank") is not None:  # multi-head latent attention, as transformers caches it
        key = (_int(layer, "qk_nope_head_dim") or 0) + (_int(layer, "qk_rope_head_dim") or 0)
        return heads * (key + (_int(layer, "v_head_dim") or key))
    kv_heads = 1 if getattr(layer, "multi_query", False) else (_int(layer, "num_key_value_heads") or heads)
    return 2 * kv_heads * (_int(layer, "head_dim") or hidden // heads)


def _layers(config: PreTrainedConfig) -> list[Any]:
    """The language model's layers, each as its config reads (a heterogeneous config's per-layer views; else the
    text config once a layer); empty without a layer count."""
    text = _text(config)
    layers = _int(text, "num_hidden_layers", "decoder_layers", "num_decoder_layers") or 0
    try:
        per_layer: list[Any] = list(text.per_layer_config)
    except Exception:  # noqa: BLE001 - a config without per-layer views: the same for every layer
        per_layer = []
    return per_layer if len(per_layer) == layers else [text] * layers


def _attention_width(config: PreTrainedConfig) -> int:
    """Key plus value width of every head, summed over the layers that cache keys and values (see the module
    docstring)."""
    layers = _layers(config)
    width = 0
    for tokens, layer in zip(_layer_windows(_text(config), len(layers), 1), layers, strict=False):
        heads, hidden = _int(layer, "num_attention_heads"), _int(layer, "hidden_size")
        if not tokens or heads is None or hidden is None:
            continue
        if _int(layer, "kv_lora_rank") is not None:  # multi-head latent attention
            key = (_int(layer, "qk_nope_head_dim") or 0) + (_int(layer, "qk_rope_head_dim") or 0)
            width += heads * (key + (_int(layer, "v_head_dim") or key))
        else:
            width += heads * 2 * (_int(layer, "head_dim") or hidden // heads)
    return width


def _kv_cache(config: PreTrainedConfig, seq: int, batch: int, element: int) -> int:
    """Bytes of the KV cache at ``seq`` tokens x ``batch`` (see the module docstring), layer by layer (a
    heterogeneous config's layers each with their own heads)."""
    text = _text(config)
    per_layer = _layers(config)
    if not per_layer:
        return 0
    tokens = sum(count * _kv_per_token(layer)
                 for count, layer in zip(_layer_windows(text, len(per_layer), seq), per_layer, strict=False))
    cross = 2 if getattr(config, "is_encoder_decoder", False) else 1
    return cross * batch * tokens * element


def _activations(config: PreTrainedConfig, seq: int, batch: int) -> int:
    """Bytes of the language model's training activations (see the module docstring)."""
    text = _text(config)
    hidden = _int(text, "hidden_size")
    layers = _int(text, "num_hidden_layers", "decoder_layers", "num_decoder_layers")
    vocab = _int(text, "vocab_size") or 0
    if hidden is None or layers is None:
        return 0
    return layers * 34 * seq * batch * hidden + 2 * 4 * batch * seq * vocab


def _adapter_parameters(model: torch.nn.Module, rank: int) -> int:
    """Parameters of a LoRA adapter of ``rank`` on every linear layer but the output embedding (PEFT's
    ``all-linear``: ``nn.Linear`` and transformers' ``Conv1D``, whose weight is stored transposed)."""
    import torch

    output = getattr(model, "get_output_embeddings", lambda: None)()
    total = 0
    for module in model.modules():
        weight = getattr(module, "weight", None)
        if module is output or not isinstance(weight, torch.Tensor):
            continue
        if isinstance(module, torch.nn.Linear) or type(module).__name__ == "Conv1D":
            total += rank * sum(weight.shape)
    return total


def plan(source: CheckpointSource, *, seq: int = 4096, batch: int = 1, lora_rank: int = 16) -> Plan:
    """``source`` planned at full size for ``batch`` sequences of ``seq`` tokens, at most the model's position limit
    (see the module docstring)."""
    model = meta_model(source)
    config = None if source.library == "diffusers" else build_config(source)
    limit = None if config is None else _int(_text(config), "max_position_embeddings")
    seq = min(seq, limit or seq)
    total = sum(p.numel() for p in _unique_parameters(model))
    quantized = quantization(source.quantization)
    dtype = "bfloat16" if quantized is not None else (source.dtype or "float32")
    element = DTYPE_BYTES[dtype]
    weights = total * element
    kv_cache = _kv_cache(config, seq, batch, element) if config is not None else 0
    activations = _activations(config, seq, batch) if config is not None else 0
    adapter = _adapter_parameters(model, lora_rank)
    memory = Memory(
        inference=weights + kv_cache,
        full_fine_tune=total * _TRAINED_BYTES + activations,
        lora=weights + adapter * _TRAINED_BYTES + activations,
        weights=weights, kv_cache=kv_cache, activations=activations, adapter_parameters=adapter,
    )
    cores = {family.name: {use: placement(size, family) for use, size in memory.by_use().items()}
             for family in trainium_families()}
    width = _attention_width(config) if config is not None else 0
    return Plan(total, _active(model, config, total), dtype, memory, cores, seq, batch, lora_rank, width)
