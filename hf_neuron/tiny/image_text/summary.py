"""A one-line description of a tiny image-text model, for readers of the catalog and the report.

The report must not import transformers or build models, so the catalog records this line when it checks each
architecture on the CPU (:mod:`hf_neuron.matrix.catalog.cpu_check`), and the architecture's page shows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hf_neuron.tiny.image_text.image_processor import processor_side, vision_sizes

if TYPE_CHECKING:
    from transformers import PreTrainedConfig
    from transformers.image_processing_utils import BaseImageProcessor

__all__ = ["tiny_summary"]

_TEXT_FIELDS = (("num_hidden_layers", "layers"), ("hidden_size", "width"), ("num_attention_heads", "heads"),
                ("num_key_value_heads", "kv heads"), ("vocab_size", "vocab"))
_VISION_FIELDS = (("num_hidden_layers", "layers"), ("depth", "layers"), ("hidden_size", "width"),
                  ("num_attention_heads", "heads"), ("num_heads", "heads"), ("image_size", "image"),
                  ("patch_size", "patch"), ("spatial_merge_size", "merge"))


def _fields(config: Any, fields: tuple[tuple[str, str], ...]) -> str:
    values = config.to_dict()
    parts, seen = [], set()
    for name, label in fields:
        value = values.get(name)
        if value is not None and label not in seen:
            seen.add(label)
            parts.append(f"{label} {value[0] if isinstance(value, (list, tuple)) else value}")
    return f"{values.get('model_type') or type(config).__name__}: " + ", ".join(parts)


def _vision_config(config: PreTrainedConfig) -> Any:
    for name in getattr(config, "sub_configs", {}):
        sub = getattr(config, name, None)
        if sub is not None and "vision" in name and hasattr(sub, "to_dict"):
            return sub
    return None


def tiny_summary(config: PreTrainedConfig, image_processor: BaseImageProcessor | None, parameters: int) -> str:
    """E.g. ``"text llama: layers 2, width 64, ...; vision clip_vision_model: ...; images 32 px
    (LlavaImageProcessorPil); 0.2M parameters"``."""
    parts = [f"text {_fields(config.get_text_config(decoder=True), _TEXT_FIELDS)}"]
    vision = _vision_config(config)
    if vision is not None:
        parts.append(f"vision {_fields(vision, _VISION_FIELDS)}")
    if image_processor is not None:
        sizes = vision_sizes(config)
        parts.append(f"images {processor_side(image_processor)} px, patch unit {sizes.unit} "
                     f"({type(image_processor).__name__})")
    parts.append(f"{parameters / 1e6:.2f}M parameters")
    return "; ".join(parts)
