"""The libraries hf-neuron patches, in application order: one module of the same name in this package each.

Kept apart from the registry so that installing the import hook (inside ``import torch``) imports nothing else.
"""

from __future__ import annotations

__all__ = ["ALREADY_IMPORTED", "HOOKED", "LIBRARIES"]

LIBRARIES: tuple[str, ...] = ("torch", "safetensors", "accelerate", "transformers", "peft", "trl", "diffusers")
#: Libraries imported before the hook exists (torch's autoload installs it): their patches apply at installation
#: when a neuron device is registered, else when the first hooked library is imported.
ALREADY_IMPORTED: frozenset[str] = frozenset({"torch"})
#: The libraries whose imports the hook watches.
HOOKED: tuple[str, ...] = tuple(library for library in LIBRARIES if library not in ALREADY_IMPORTED)
