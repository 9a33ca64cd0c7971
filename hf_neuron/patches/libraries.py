"""The libraries hf-neuron patches, in application order: one module of the same name in this package each.

Kept apart from the registry so that installing the import hook (inside ``import torch``) imports nothing else.
"""

from __future__ import annotations

__all__ = ["LIBRARIES"]

LIBRARIES: tuple[str, ...] = ("safetensors", "accelerate", "transformers", "peft", "trl", "diffusers")
