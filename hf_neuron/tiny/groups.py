"""What the package of a model group provides, and how it is found from the group's declaration.

Each group of :data:`hf_neuron.vocabulary.groups.REGISTRY` names a module (``models``) that implements
:class:`GroupModels`: which model types it holds, how their tiny checkpoints are built, the catalog's CPU check, the
reviewed data that says a type cannot run (with the harness's gap), and the catalog features that decide which
scenario variants apply. A group whose library is transformers shares the transformers scenario bodies, which ask it
for inputs and LoRA targets (:class:`TransformersModels`). :func:`group_models` loads a group's module on first use;
importing this module imports nothing heavy.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from hf_neuron.vocabulary.gaps import Gap
from hf_neuron.vocabulary.groups import declaration

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel

__all__ = ["CatalogType", "CpuCheck", "GroupModels", "Reviewed", "TransformersModels", "group_models",
           "transformers_models"]


@dataclasses.dataclass(frozen=True)
class CatalogType:
    """A model type of a group, as the catalog names it: the class that builds it, its config class, and the class
    users load it through (a transformers auto class; the model class itself for a diffusers backbone)."""

    model_class: str
    config_class: str
    load_class: str


@dataclasses.dataclass(frozen=True)
class CpuCheck:
    """What a tiny model did on the CPU; ``stage`` is the first step that failed (``config``, ``build``,
    ``forward``, ``generate``), or ``"ok"``; ``tiny`` says what the tiny model is, for readers of the catalog that must
    not build models (None when not recorded or it did not build)."""

    model_type: str
    stage: str
    error: str | None = None
    parameters: int = 0
    seconds: float = 0.0
    tiny: str | None = None

    @property
    def ok(self) -> bool:
        return self.stage == "ok"


@dataclasses.dataclass(frozen=True)
class Reviewed:
    """What reviewed data says of a type that cannot run as a tiny model here: why, and the harness's gap when the
    cause is the harness's (then its cases that fail the same way on the CPU are ``untested``)."""

    reason: str
    gap: Gap | None = None


class GroupModels(Protocol):
    """What every group's package provides."""

    def catalog_types(self, group: str) -> Mapping[str, CatalogType]:
        """The model types of the installed libraries that belong to ``group``, sorted (before other groups claim
        theirs: a type two groups list belongs to the one declared first)."""

    def materialize(self, name: str, out_dir: Path, /, *, seed: int = 0) -> Path:
        """Write the tiny checkpoint of ``name`` to ``out_dir`` (reused when already there) and return it."""

    def cpu_check(self, name: str) -> CpuCheck:
        """Build the tiny ``name`` and run it on the CPU as the scenarios will; never raises."""

    def reviewed(self, name: str) -> Reviewed | None:
        """The reviewed data's verdict that ``name`` cannot run here (None when it says nothing of the kind)."""

    def features(self, name: str) -> tuple[str, ...]:
        """The catalog features of ``name`` that decide which scenario variants apply (``router-logits``,
        ``sdpa``, ``flex-attention``)."""


class TransformersModels(GroupModels, Protocol):
    """What a group that shares the transformers scenario bodies also provides: the inputs of its models and where a
    LoRA adapter goes."""

    def sample_ids(self, model_type: str, checkpoint: Path, model: PreTrainedModel, rows: int,
                   seed: int) -> torch.Tensor:
        """``(rows, length)`` token ids on the CPU that stand for the case's inputs, the same for every device of
        the case (any subset of the rows goes to :meth:`model_inputs`: a DDP rank's share)."""

    def model_inputs(self, model: PreTrainedModel, input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        """The keyword inputs of a forward pass behind ``input_ids``, on ``model``'s device."""

    def lora_targets(self, model: PreTrainedModel) -> str | list[str]:
        """The modules a LoRA adapter goes on (PEFT's ``target_modules``)."""


@functools.cache
def _module(name: str) -> Any:
    return importlib.import_module(name)


def group_models(group: str) -> GroupModels:
    """The package of ``group`` (its declared ``models`` module), imported on first use."""
    return cast(GroupModels, _module(declaration(group).models))


def transformers_models(group: str) -> TransformersModels:
    """The package of a group that shares the transformers scenario bodies."""
    found = declaration(group)
    if found.library != "transformers":
        raise TypeError(f"group {group!r} shares the {found.library} scenarios, not the transformers ones")
    return cast(TransformersModels, _module(found.models))
