"""Tiny configs derived generically from any transformers config class.

:func:`tiny_config` reads the config class's field defaults (a full-size model) and shrinks each field by what it
*means*, read from its name (after the class's ``attribute_map``) or from its relation to the main dimensions:
layer counts become 2, widths 64, heads 4 (MHA/GQA/MQA kept), head dims 16, experts 4, vocabularies
:data:`~hf_neuron.tiny.tokenizer.VOCAB_SIZE`; special token ids move inside the vocabulary; windows and chunks get
short. Per-layer lists (``layer_types``, ``mlp_layer_types``, hybrid patterns, layer-index lists,
``per_layer_config``) are rebuilt from a few *representative layers*, chosen so that every kind of layer of the
full model is kept. Sub-configs (``text_config``, ``vision_config``...) are shrunk recursively. Only changed fields
are passed to the class, so everything derived in ``__post_init__`` stays consistent.

Per-architecture exceptions live only in the reviewed ``compat/tiny_overrides.toml`` (see :mod:`.overrides`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from hf_neuron.compat.tiny_overrides import Override, deep_merge, load_overrides
from hf_neuron.tiny.tokenizer import (
    BOS_TOKEN_ID,
    EOS_TOKEN_ID,
    PAD_TOKEN_ID,
    RESERVED_TOKEN_IDS,
    UNK_TOKEN_ID,
    VOCAB_SIZE,
)
from hf_neuron.tiny.transformers.model_types import generative_types

if TYPE_CHECKING:
    from transformers import PreTrainedConfig

__all__ = ["DIMS", "TinyDims", "checkpoint_base", "config_class", "model_fields", "tiny_config", "tiny_config_kwargs"]


@dataclasses.dataclass(frozen=True)
class TinyDims:
    """Target sizes of a tiny model.

    With ``keep_width`` (a real checkpoint's slice), only the structure is cut: layer counts (and the per-layer lists,
    layer indices and spans that follow them) and special token ids; every width, head, window and position limit is
    kept, and so are the vocabulary and the experts unless ``vocab_size`` / ``num_experts`` cap them (None: keep)."""

    keep_width: bool = False
    hidden_size: int = 64
    num_layers: int = 2
    max_layers: int = 4
    num_heads: int = 4
    head_dim: int = 16
    ssm_head_dim: int = 32  # SSM heads span expand (2) x hidden_size
    intermediate_size: int = 128
    vocab_size: int | None = VOCAB_SIZE
    max_positions: int = 512
    window: int = 16
    num_experts: int | None = 4
    experts_per_token: int | None = 2
    rank: int = 32
    state_size: int = 16
    image_size: int = 32
    patch_size: int = 4


DIMS = TinyDims()

#: Special ids of a config that map onto the tiny tokenizer's own tokens; any other ``*_token_id`` gets a
#: reserved id from the top of the vocabulary.
_SPECIAL_TOKEN_IDS = {
    "pad": PAD_TOKEN_ID,
    "bos": BOS_TOKEN_ID,
    "eos": EOS_TOKEN_ID,
    "unk": UNK_TOKEN_ID,
    "decoder_start": BOS_TOKEN_ID,
    "cls": BOS_TOKEN_ID,
    "sep": EOS_TOKEN_ID,
    "forced_eos": EOS_TOKEN_ID,
    "forced_bos": BOS_TOKEN_ID,
}
_TOKENIZER_ROLES = ("pad", "bos", "eos")
_TOKEN_ID = re.compile(r"^(?P<role>.+?)_(token_)?(id|index|idx)$")
_TOKEN_ROLE = re.compile(r"token|^(pad|bos|eos|unk|mask|sep|cls|decoder_start|eod)_")
#: A list of token ids to suppress (Whisper's suppress_tokens), or of [position, id] pairs to force (its
#: forced_decoder_ids): generation settings, which the model's own ids (Ovis2's visual_indicator_token_ids) are not.
_TOKEN_LIST = re.compile(r"(^|_)(suppress_tokens|forced_decoder_ids)$")
_SKIPPED = {"model_type", "transformers_version", "architectures", "id2label", "label2id", "dtype"}


@dataclasses.dataclass
class _Shrink:
    """One config being shrunk: its original main dimensions (and its model's text config's), the kept layers,
    the reserved-id allocator."""

    dims: TinyDims
    original: dict[str, Any]
    text_original: dict[str, Any]
    layers: list[int] | None
    reserved: dict[str, int]

    @property
    def num_layers(self) -> int:
        return len(self.layers) if self.layers else self.dims.num_layers

    def reserved_id(self, role: str) -> int:
        """A stable id from the reserved top of the vocabulary for a model-specific special token."""
        if role not in self.reserved:
            self.reserved[role] = RESERVED_TOKEN_IDS[len(self.reserved)]
        return self.reserved[role]


Rule = Callable[[int, _Shrink], int]


def _cap(limit: Callable[[TinyDims], int]) -> Rule:
    return lambda value, shrink: min(value, limit(shrink.dims))


def _set(target: Callable[[TinyDims], int]) -> Rule:
    return lambda value, shrink: target(shrink.dims) if value > 0 else value


def _kv_heads(value: int, shrink: _Shrink) -> int:
    """Keep the attention kind: MHA stays MHA, MQA stays MQA, GQA gets 2 groups."""
    heads = shrink.original.get("num_attention_heads")
    if value == 1:
        return 1
    return shrink.dims.num_heads if heads is None or value >= heads else 2


def _layer_count(value: int, shrink: _Shrink) -> int:
    return shrink.num_layers if value > 0 else value


def _layer_span(value: int, shrink: _Shrink) -> int:
    """Periods, pattern lengths and sub-stack sizes: at most the layer count."""
    return min(value, shrink.num_layers)


def _vocab(value: int, shrink: _Shrink) -> int:
    """The vocabulary: the tiny tokenizer's size for a tiny model; a slice keeps its own, capped where its dims
    say."""
    cap = shrink.dims.vocab_size
    if shrink.dims.keep_width:
        return value if cap is None else min(value, cap)
    return cap or value


def _layer_index(value: int, shrink: _Shrink) -> int:
    """A layer index or a count of leading layers: how many kept layers come before it."""
    if value <= 0:
        return value
    below = sum(1 for layer in shrink.layers or range(value) if layer < value)
    return max(1, min(below, shrink.num_layers - 1))


_LAYER_INDEX = r"first_k|layers?_(index_)?start|start_layer|offset|num_dense_layers|_end_index|layer_index_end"
_LAYER_SPAN = r"period|interval|every_n|_step$|pattern|group_size|per_attn_res_block|cycles|passes|layers"
_POSITIONS = r"max_position|n_positions|n_ctx|max_seq_len|context_length|max_target_positions"
_WIDTHS = r"hidden_size|n_embd|d_model|embed_dim|embedding_dim|embedding_size|width|emb_dim|proj_dim"
#: The sides of a table of learned positions, in positions (``pos_emb_height``), not a hidden width: kept, as the
#: model may resample the table to any grid and assume it square.
_POSITION_GRID = r"^pos_emb_(height|width)$"

RuleKind = Literal["layers", "vocab", "experts", "size"]
#: What each kind of rule cuts: layer counts, the vocabulary, the experts, or a size (widths, heads, windows...).


def _applies(kind: RuleKind, dims: TinyDims) -> bool:
    """Whether rules of ``kind`` apply to ``dims``: all for a tiny model; for a slice that keeps width, ``layers``
    rules, and ``vocab`` and ``experts`` ones where its dims cap them."""
    if not dims.keep_width or kind == "layers":
        return True
    return {"vocab": dims.vocab_size, "experts": dims.num_experts, "size": None}[kind] is not None


#: (pattern on the canonical field name, rule, whether an unset (None) field takes the tiny value too, kind).
#: The first match wins, so specific names come before the general ones they contain.
_RULE_TABLE: tuple[tuple[str, Rule, bool, RuleKind], ...] = (
        (r"conv|kernel", lambda v, s: v, False, "size"),
        (_POSITION_GRID, lambda v, s: v, False, "size"),
        (r"^(num_|n_)?(hidden_|encoder_|decoder_)?layers?$|^n_layer$", _layer_count, False, "layers"),
        (r"kv_shared_layers", lambda v, s: 0, False, "layers"),
        (_LAYER_INDEX, _layer_index, False, "layers"),
        (_LAYER_SPAN, _layer_span, False, "layers"),
        (r"^vocab_size$", _vocab, False, "vocab"),
        (r"vocab_size|_vocab$", _cap(lambda d: d.vocab_size or _UNSET), False, "vocab"),
        (r"^num_key_value_heads$", _kv_heads, True, "size"),
        (r"key_value_heads|kv_heads|kv_n_heads|query_groups|key_heads", _kv_heads, False, "size"),
        (r"n_groups|ngroups|n_group$|expert_group|topk_group", _cap(lambda d: 1), False, "size"),
        (r"(mamba|ssm).*(head_dim|d_head|headdim)", _set(lambda d: d.ssm_head_dim), False, "size"),
        (r"attention_heads|num_heads|n_heads?$|heads_per|value_heads|_heads$", _set(lambda d: d.num_heads), False,
         "size"),
        (r"^qk_head_dim$", _set(lambda d: 2 * d.head_dim), False, "size"),  # MLA: qk_nope + qk_rope head dims
        (r"^head_dim$", _set(lambda d: d.head_dim), True, "size"),
        (r"head_dim|head_size|d_head|dim_head|kv_channels|headdim|rotary_dim|rope_dim", _set(lambda d: d.head_dim),
         False, "size"),
        (r"intermediate|ffn|ff_|_ff$|dim_ff|d_inner|dff|inner_size|mlp_dim|^n_inner$",
         _cap(lambda d: d.intermediate_size), False, "size"),
        (r"shared_experts?$|num_shared_experts", _cap(lambda d: 1), False, "size"),
        (r"experts_per_tok|^top_?k$|moe_k$|moe_top_?k$|experts_per_token",
         _cap(lambda d: d.experts_per_token or _UNSET), True, "experts"),
        (r"experts|expert_num", _cap(lambda d: d.num_experts or _UNSET), True, "experts"),
        (_POSITIONS, _set(lambda d: d.max_positions), False, "size"),
        (r"window|chunk|local_attention|block_size|topk", _cap(lambda d: d.window), False, "size"),
        (r"rank$|lowrank", _cap(lambda d: d.rank), False, "size"),
        (r"state_size|d_state|state_dim", _cap(lambda d: d.state_size), False, "size"),
        (r"^image_size$", _cap(lambda d: d.image_size), False, "size"),
        (r"^max_(img|image)_size$", _cap(lambda d: 2 * d.image_size), False, "size"),  # the image processors' bound
        (r"^patch_size$", _cap(lambda d: d.patch_size), False, "size"),
        (_WIDTHS, _set(lambda d: d.hidden_size), False, "size"),
)
_INT_RULES: tuple[tuple[re.Pattern[str], Rule, bool, RuleKind], ...] = tuple(
    (re.compile(pattern), rule, fills_none, kind) for pattern, rule, fills_none, kind in _RULE_TABLE)
#: What an unset field is shrunk from when its rule fills it: larger than any tiny size, so caps apply.
_UNSET = 1 << 30

#: Standard names of config attributes (an ``attribute_map`` alias of one of these is a legacy name).
_STANDARD = frozenset({"vocab_size", "hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size",
                       "max_position_embeddings", "num_key_value_heads", "head_dim"})

#: Main dimensions whose original value identifies otherwise unnamed aliases (e.g. ``lru_width == hidden_size``).
_RELATED = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


def config_class(model_type: str) -> type[PreTrainedConfig]:
    """The transformers config class registered for ``model_type``."""
    from transformers import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]


def _field_defaults(cls: type[PreTrainedConfig]) -> dict[str, Any]:
    """The declared defaults of the class's init fields (``None`` where unset: derived in ``__post_init__``)."""
    defaults: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if not field.init or field.name.startswith("_"):
            continue
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            defaults[field.name] = field.default_factory()
    defaults.setdefault("per_layer_config", None)  # an init keyword of every config, not a declared field
    return defaults


def _instance(cls: type[PreTrainedConfig], kwargs: Mapping[str, Any]) -> PreTrainedConfig | None:
    """The full-size config, for the values ``__post_init__`` derives; None when its defaults do not validate."""
    try:
        return cls(**kwargs)
    except Exception:  # noqa: BLE001 - a few classes ship defaults that fail their own validation
        return None


def _canonical_names(cls: type[PreTrainedConfig]) -> dict[str, str]:
    """Field name -> standard name (``n_embd`` -> ``hidden_size``) from ``attribute_map``; standard fields stay."""
    return {field: alias for alias, field in cls.attribute_map.items() if field not in _STANDARD}


def _serialized(instance: PreTrainedConfig | None, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The set values of the full-size config's fields, as ``to_dict`` writes them (derived lists included)."""
    if instance is None:
        return {}
    return {key: value for key, value in instance.to_dict().items() if key in defaults and value is not None}


def _derived(instance: PreTrainedConfig | None, name: str) -> Any:
    """An attribute of the full-size config (a field, or a property such as Jamba's ``layers_block_type``)."""
    if instance is None:
        return None
    try:
        return getattr(instance, name)
    except Exception:  # noqa: BLE001 - e.g. heterogeneous configs refuse ambiguous global reads
        return None


def _text_dimensions(instance: PreTrainedConfig | None) -> dict[str, Any]:
    """The width of the model's text config: other sub-configs project to it (``adapter_out_dim``...)."""
    try:
        text_config = instance.get_text_config(decoder=True) if instance is not None else None
    except ValueError:  # several text configs: no single reference
        text_config = None
    return {"hidden_size": _derived(text_config, "hidden_size")}


def _is_pattern(key: str, value: Any, num_layers: int) -> bool:
    """One entry per layer: a list as long as the layer count, or a ``*pattern*`` string of that length."""
    if isinstance(value, str):
        return "pattern" in key and len(value) == num_layers
    return isinstance(value, (list, tuple)) and len(value) == num_layers


def _is_cycle(key: str, value: Any, num_layers: int) -> bool:
    """A short pattern of layer kinds repeated over the layers (``block_types = [recurrent, recurrent, attention]``)."""
    return (
        isinstance(value, (list, tuple)) and 1 < len(value) < num_layers and bool(re.search(r"types|pattern", key))
        and all(isinstance(v, str) for v in value)
    )


def _is_layer_index_list(key: str, value: Any, num_layers: int) -> bool:
    """A list of distinct layer indices (``full_attn_idxs``, ``mlp_only_layers``, ``hybrid_layer_ids``...)."""
    return (
        isinstance(value, (list, tuple)) and 0 < len(value) != num_layers and bool(re.search(r"layer|idx", key))
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < num_layers for v in value)
        and len(set(value)) == len(value)
    )


def _select_layers(kinds: Sequence[Sequence[Any]], num_layers: int, dims: TinyDims) -> list[int]:
    """Representative layers: the first layer of every kind seen in any per-layer sequence, in model order."""
    chosen = {0}
    for per_layer in kinds:
        seen: set[str] = set()
        for layer, kind in enumerate(per_layer):
            if repr(kind) not in seen:
                seen.add(repr(kind))
                chosen.add(layer)
    ordered = sorted(chosen)[: dims.max_layers]
    ordered += [layer for layer in range(num_layers) if layer not in ordered][: max(0, dims.num_layers - len(ordered))]
    return sorted(ordered)


def _shrink_int(name: str, value: int | None, shrink: _Shrink) -> int | None:
    """The tiny value of an integer field: by the first rule its name matches, else by the main dimension it
    equals (own config first, then the text config's width), else unchanged."""
    for pattern, rule, fills_none, kind in _INT_RULES:
        if pattern.search(name):
            if not _applies(kind, shrink.dims):
                return value
            if value is None:
                return rule(_UNSET, shrink) if fills_none and not shrink.dims.keep_width else None
            return rule(value, shrink)
    if value is not None and value > 1 and not shrink.dims.keep_width:
        references = [(shrink.original, main) for main in _RELATED]
        references.insert(1, (shrink.text_original, "hidden_size"))  # widths first: adapters project to the text
        for original, main in references:
            if original.get(main) == value:
                return _shrink_int(main, value, shrink)
    return value


def _rescale(section: Sequence[int], total: int) -> list[int]:
    """``section`` scaled to sum to ``total``, by largest remainders (each part at least 1)."""
    exact = [part * total / sum(section) for part in section]
    parts = [max(1, int(x)) for x in exact]
    for index in sorted(range(len(parts)), key=lambda i: int(exact[i]) - exact[i])[: total - sum(parts)]:
        parts[index] += 1
    return parts


def _shrink_rope(rope: Mapping[str, Any], original: Mapping[str, Any], dims: TinyDims) -> dict[str, Any]:
    """Rotary parameters for the tiny head dim: multimodal sections (``mrope_section``) sum to the new rotary half,
    per-frequency factor lists (``long_factor``...) get one entry per new frequency. Nested per layer type."""
    heads = original.get("num_attention_heads")
    head_dim = original.get("head_dim") or (original.get("hidden_size") or 0) // (heads or 1)
    shrunk: dict[str, Any] = {}
    for key, value in rope.items():
        if isinstance(value, Mapping):
            shrunk[key] = _shrink_rope(value, original, dims)
        elif head_dim and isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            shrunk[key] = _rescale(value, max(len(value), round(sum(value) * dims.head_dim / head_dim)))
        elif head_dim and isinstance(value, list) and value and all(isinstance(v, float) for v in value):
            shrunk[key] = value[: max(1, round(len(value) * dims.head_dim / head_dim))]
        else:
            shrunk[key] = value
    return shrunk


def _shrink_token_id(role: str, value: Any, shrink: _Shrink) -> Any:
    """A special token id inside the tiny vocabulary: the tokenizer's own token, or a reserved id (lists keep one)."""
    if value is None and role in _TOKENIZER_ROLES:
        return _SPECIAL_TOKEN_IDS[role]  # agree with the tokenizer, so trainers need not realign the config
    if isinstance(value, (list, tuple)):
        return [_shrink_token_id(role, v, shrink) for v in value][:1]
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    if role in _SPECIAL_TOKEN_IDS:
        return _SPECIAL_TOKEN_IDS[role]
    return shrink.reserved_id(role)


def _inside_vocabulary(ids: Sequence[Any], vocab_size: int) -> list[Any] | None:
    """A checkpoint's list of token ids (or of [position, id] pairs) without the ids a cut vocabulary no longer has
    (whisper-tiny forces 50259 as the decoder's second token; None where none is left)."""
    kept = [item for item in ids
            if not isinstance(token := item[-1] if isinstance(item, (list, tuple)) and item else item, int)
            or token < vocab_size]
    return kept or None


def _shrink_value(name: str, value: Any, shrink: _Shrink) -> Any:
    """The tiny value of a scalar field or a list of integers; other values are kept."""
    if _TOKEN_LIST.search(name) and isinstance(value, (list, tuple)) and shrink.dims.vocab_size is not None:
        return _inside_vocabulary(value, shrink.dims.vocab_size)
    match = _TOKEN_ID.match(name)
    if match and _TOKEN_ROLE.search(name):
        return _shrink_token_id(match.group("role"), value, shrink)
    if isinstance(value, bool):
        return value
    if value is None or isinstance(value, int):
        return _shrink_int(name, value, shrink)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) and not isinstance(v, bool)
                                                          for v in value):  # tuples too: (height, width) image sizes
        return type(value)(_shrink_int(name, v, shrink) for v in value)
    return value


class _ConfigShrinker:
    """Shrinks one config class's fields, recursing into its sub-configs."""

    def __init__(self, dims: TinyDims, *, from_checkpoint: bool = False) -> None:
        self.dims = dims
        #: a checkpoint's config is shrunk (not class defaults): a sub-config it does not give is the one its
        #: config built (older configs give a text model's fields at the top level)
        self.from_checkpoint = from_checkpoint
        self.reserved: dict[str, int] = {}
        self.text_original: dict[str, Any] | None = None

    def shrink(self, cls: type[PreTrainedConfig], given: Mapping[str, Any]) -> dict[str, Any]:
        """The kwargs that make ``cls(**given)`` tiny: ``given`` plus every changed field."""
        names = _canonical_names(cls)
        instance = _instance(cls, given)
        defaults = {**_field_defaults(cls), **given}
        full = {**defaults, **_serialized(instance, defaults)}
        canonical = {names.get(key, key): value for key, value in full.items()}
        original = {main: canonical.get(main) for main in (*_RELATED, "head_dim")}
        num_layers = original["num_hidden_layers"]
        if self.text_original is None:
            self.text_original = _text_dimensions(instance)
        shrink = _Shrink(self.dims, original, self.text_original, None, self.reserved)
        rebuilt: dict[str, Any] = {}
        if isinstance(num_layers, int) and num_layers > 1:
            shrink.layers = self._layers(full, instance, num_layers)
            rebuilt = self._rebuilt_layers(full, num_layers, shrink.layers)

        result = dict(given)
        for key, default in defaults.items():
            if key in _SKIPPED:
                continue
            value = rebuilt.get(key, default)
            if key in cls.sub_configs:
                if not isinstance(value, Mapping) and self.from_checkpoint:  # built from legacy top-level fields
                    value = full.get(key)
                result[key] = self._sub_config(cls, key, value if isinstance(value, Mapping) else None)
            elif key == "rope_parameters" and isinstance(full.get(key), Mapping) and not self.dims.keep_width:
                # often derived: use the result
                new_rope = _shrink_rope(full[key], original, self.dims)
                if new_rope != full[key]:
                    result[key] = new_rope
            elif key == "per_layer_config" and isinstance(value, Mapping):
                result[key] = {index: self._layer_overrides(names, layer, shrink) for index, layer in value.items()}
            elif not (isinstance(value, Mapping) or dataclasses.is_dataclass(value)):
                new = _shrink_value(names.get(key, key), value, shrink)
                if new != default or key in given:
                    result[key] = new
        legacy = given.get("rope_scaling")  # a checkpoint's rope before transformers 5 named it rope_parameters
        if isinstance(legacy, Mapping) and "rope_scaling" not in _field_defaults(cls) and not self.dims.keep_width:
            result["rope_scaling"] = _shrink_rope(legacy, original, self.dims)
        return result

    def _layer_overrides(self, names: Mapping[str, str], layer: Mapping[str, Any], shrink: _Shrink) -> dict[str, Any]:
        """Shrink one entry of ``per_layer_config``, whose heads relate to its own attention heads."""
        canonical = {names.get(key, key): value for key, value in layer.items()}
        local = dataclasses.replace(shrink, original={**shrink.original, **{
            k: canonical[k] for k in _RELATED if k in canonical}})
        return {key: _shrink_value(names.get(key, key), value, local) for key, value in layer.items()}

    def _layers(self, full: Mapping[str, Any], instance: PreTrainedConfig | None, num_layers: int) -> list[int]:
        """The representative layers, from every per-layer description the full-size config has."""
        kinds: list[Sequence[Any]] = [v for k, v in full.items() if _is_pattern(k, v, num_layers)]
        kinds += [[v[layer % len(v)] for layer in range(num_layers)]
                  for k, v in full.items() if _is_cycle(k, v, num_layers)]
        for name in ("layer_types", "layers_block_type", "mlp_layer_types"):
            derived = _derived(instance, name)
            if isinstance(derived, (list, tuple)) and len(derived) == num_layers:
                kinds.append(derived)
        for key, indices in full.items():
            if _is_layer_index_list(key, indices, num_layers):
                kinds.append([layer in indices for layer in range(num_layers)])
        per_layer = full.get("per_layer_config")
        if isinstance(per_layer, Mapping) and per_layer:
            listed = {int(index) for index in per_layer}
            kinds.append([layer in listed for layer in range(num_layers)])
        return _select_layers(kinds, num_layers, self.dims)

    @staticmethod
    def _rebuilt_layers(full: Mapping[str, Any], num_layers: int, kept: list[int]) -> dict[str, Any]:
        """Per-layer fields, index lists and ``per_layer_config`` restricted to the kept layers."""
        position = {layer: new for new, layer in enumerate(kept)}
        rebuilt: dict[str, Any] = {}
        for key, value in full.items():
            if key in _SKIPPED:
                continue
            if _is_pattern(key, value, num_layers):
                picked = [value[layer] for layer in kept]
                rebuilt[key] = "".join(picked) if isinstance(value, str) else picked
            elif _is_cycle(key, value, num_layers):
                rebuilt[key] = [value[layer % len(value)] for layer in kept]
            elif _is_layer_index_list(key, value, num_layers):
                rebuilt[key] = [position[layer] for layer in value if layer in position]
        per_layer = full.get("per_layer_config")
        if isinstance(per_layer, Mapping) and per_layer:
            rebuilt["per_layer_config"] = {
                str(position[int(index)]).zfill(len(str(index))): values
                for index, values in per_layer.items() if int(index) in position
            }
        return rebuilt

    def _sub_config(self, cls: type[PreTrainedConfig], key: str, value: Mapping[str, Any] | None) -> dict[str, Any]:
        """Shrink sub-config ``key`` from its declared defaults (keeping ``model_type`` where it picks the class)."""
        from transformers import PreTrainedConfig

        declared = cls.sub_configs[key]
        spec = cls.sub_configs_defaults.get(key)
        given = dict(spec.init_kwargs) if spec is not None else {}
        given.update(value or {})
        if isinstance(declared, type) and issubclass(declared, PreTrainedConfig):
            sub_cls = declared
        else:
            given.setdefault("model_type", spec.model_type if spec is not None else None)
            sub_cls = config_class(given["model_type"])
        model_type = given.pop("model_type", None)
        result = self.shrink(sub_cls, given)
        if model_type is not None and sub_cls is not declared:
            result["model_type"] = model_type
        return result


def checkpoint_base(model_type: str, base: Mapping[str, Any] | None = None, dims: TinyDims = DIMS,
                    pipeline: str | None = None) -> Mapping[str, Any] | None:
    """What a model of ``model_type`` is built from: ``base`` when given; for a tiny model (not a slice that keeps
    width), the config of the catalogued checkpoint its architecture's tiny model starts from (of ``pipeline`` for a
    diffusion backbone: :func:`hf_neuron.compat.checkpoints.tiny_base`); else None (the class defaults)."""
    if base is not None or dims.keep_width:
        return base
    from hf_neuron.compat.checkpoints import model_config, tiny_base

    found = tiny_base(model_type, pipeline)
    return None if found is None else model_config(found)


#: What a checkpoint's config states about its stored weights rather than its model: the matrix builds models in the
#: dtype a scenario asks for (a sub-config's stated bfloat16 would build that tower in bfloat16 beside a float32
#: rest), and dequantized.
_STORAGE = frozenset({"dtype", "torch_dtype", "quantization_config"})


def model_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` without what it states about its stored weights (:data:`_STORAGE`), sub-configs included."""
    return {key: model_fields(value) if isinstance(value, Mapping) else value
            for key, value in config.items() if key not in _STORAGE}


def tiny_config_kwargs(model_type: str, overrides: Mapping[str, Any] | None = None, *,
                       reviewed: Mapping[str, Override] | None = None, dims: TinyDims = DIMS,
                       base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The keyword arguments that build the tiny config of ``model_type`` (only fields that differ from defaults, and
    those ``base`` gives).

    ``base`` is a checkpoint's config (its ``config.json``): shrunk instead of the class's defaults, so that the model
    keeps what the checkpoint sets (rope scaling, window pattern, layer types, routing, softcaps, tying); by default,
    the config of the catalogued checkpoint the architecture's tiny model starts from (:func:`checkpoint_base`).
    ``reviewed`` defaults to the entries of ``compat/tiny_overrides.toml`` (none for a slice that keeps width: a real
    checkpoint's config is consistent as it is); ``overrides`` is merged last.
    """
    cls = config_class(model_type)
    base = checkpoint_base(model_type, base, dims)
    given = {key: value for key, value in model_fields(base or {}).items() if key != "model_type"}
    result = _ConfigShrinker(dims, from_checkpoint=base is not None).shrink(cls, given)
    group = generative_types().get(model_type, ("",))[0]
    if group == "decoder" and "is_decoder" in _field_defaults(cls):
        result["is_decoder"] = True  # encoder architectures (BERT...) are causal language models only as decoders
    if reviewed is None:
        reviewed = {} if dims.keep_width else load_overrides()
    if model_type in reviewed:
        result = deep_merge(result, reviewed[model_type].config)
    return deep_merge(result, overrides or {})


def tiny_config(model_type: str, overrides: Mapping[str, Any] | None = None, *,
                reviewed: Mapping[str, Override] | None = None, dims: TinyDims = DIMS,
                base: Mapping[str, Any] | None = None) -> PreTrainedConfig:
    """A tiny, valid config of ``model_type`` with eager attention (see the module docstring for the rules)."""
    kwargs = tiny_config_kwargs(model_type, overrides, reviewed=reviewed, dims=dims, base=base)
    return config_class(model_type)(**{**kwargs, "attn_implementation": "eager"})
