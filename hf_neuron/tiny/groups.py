"""What the package of a model group provides, and how it is found from the group's declaration.

Each group of :data:`hf_neuron.vocabulary.groups.REGISTRY` names a module (``models``) that implements
:class:`GroupModels`: which model types it holds, how their tiny checkpoints are built, the catalog's CPU check, the
reviewed data that says a type cannot run (with the harness's gap), and the catalog features that decide which
scenario variants apply. A group whose library is transformers shares the transformers scenario bodies, which ask it
for inputs and LoRA targets, the outputs a forward pass compares, what generation makes and a training step's inputs
(:class:`TransformersModels`; :mod:`hf_neuron.tiny.transformers.outputs` is the language models' default).
:func:`group_models` loads a group's module on first use; importing this module imports nothing heavy.
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

    from hf_neuron.tiny.transformers.config import TinyDims

__all__ = ["CatalogType", "CpuCheck", "Decoding", "GroupModels", "Reviewed", "TransformersModels", "group_models",
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


@dataclasses.dataclass(frozen=True)
class Decoding:
    """What a model's generation made, on the CPU, and the ``device`` it ran on. A model that writes tokens gives
    greedy decoding's new ``tokens`` ``(rows, n)`` and the ``scores`` each step chose from ``(n, rows, vocab)``; one
    that makes something else (a waveform, audio codes, a spectrogram) gives it by name in ``outputs``, compared with
    the CPU's within tolerance. A model may give both. ``cache`` is the class of the cache it decoded with, and
    ``compileable`` whether transformers compiles decoding with it (a static cache)."""

    device: str
    tokens: torch.Tensor | None = None
    scores: torch.Tensor | None = None
    outputs: Mapping[str, torch.Tensor] = dataclasses.field(default_factory=dict)
    cache: str = "NoneType"
    compileable: bool = False


class GroupModels(Protocol):
    """What every group's package provides."""

    def catalog_types(self, group: str) -> Mapping[str, CatalogType]:
        """The model types of the installed libraries that belong to ``group``, sorted (before other groups claim
        theirs: a type two groups list belongs to the one declared first)."""

    def materialize(self, name: str, out_dir: Path, /, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                    dims: TinyDims = ...) -> Path:
        """Write the tiny checkpoint of ``name`` to ``out_dir`` (reused when already there) and return it: from
        ``base`` (a checkpoint's config) instead of the class's defaults, and with ``dims`` instead of the tiny ones
        where given (a real checkpoint's slice keeps width)."""

    def config_kwargs(self, name: str, /, *, base: Mapping[str, Any] | None = None,
                      dims: TinyDims = ...) -> dict[str, Any]:
        """The config keyword arguments (a diffusers backbone's arguments) :meth:`materialize` builds ``name`` from,
        without building it."""

    def cpu_check(self, name: str) -> CpuCheck:
        """Build the tiny ``name`` and run it on the CPU as the scenarios will; never raises."""

    def reviewed(self, name: str) -> Reviewed | None:
        """The reviewed data's verdict that ``name`` cannot run here (None when it says nothing of the kind)."""

    def features(self, name: str) -> tuple[str, ...]:
        """The catalog features of ``name`` that decide which scenario variants apply (``router-logits``,
        ``sdpa``, ``flex-attention``)."""


class TransformersModels(GroupModels, Protocol):
    """What a group that shares the transformers scenario bodies also provides: the inputs of its models, where a
    LoRA adapter goes, and what the scenarios compute with them (what a forward pass compares, what generation makes,
    a training step's inputs; a language model's are :mod:`hf_neuron.tiny.transformers.outputs`)."""

    def sample_ids(self, model_type: str, checkpoint: Path, model: PreTrainedModel, rows: int,
                   seed: int) -> torch.Tensor:
        """``(rows, length)`` token ids on the CPU that stand for the case's inputs, the same for every device of
        the case (any subset of the rows goes to :meth:`model_inputs`: a DDP rank's share)."""

    def model_inputs(self, model: PreTrainedModel, input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        """The keyword inputs of a forward pass behind ``input_ids``, on ``model``'s device."""

    def lora_targets(self, model: PreTrainedModel) -> str | list[str]:
        """The modules a LoRA adapter goes on (PEFT's ``target_modules``)."""

    def forward_outputs(self, model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], *,
                        seed: int = 0) -> dict[str, torch.Tensor]:
        """One forward pass of ``model`` (or its compiled wrapper) on ``inputs``, from ``torch.manual_seed(seed)``,
        without gradients, and the outputs the scenarios compare with the CPU's, by name (a language model's
        ``logits``)."""

    def decode(self, model: PreTrainedModel, inputs: Mapping[str, torch.Tensor], new_tokens: int, *, seed: int = 0,
               **generate_kwargs: Any) -> Decoding:
        """Generate greedily from the forward ``inputs`` (``new_tokens`` steps where the model writes tokens), from
        ``torch.manual_seed(seed)``; ``generate_kwargs`` add to ``generate`` (``cache_implementation``,
        ``compile_config``)."""

    def training_inputs(self, model: PreTrainedModel, inputs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The keyword inputs of a training step behind the forward ``inputs``: the ``loss`` of its output is what
        training lowers (a language model's: the prompt as labels)."""

    def no_training_loss(self, model: PreTrainedModel) -> str | None:
        """Why ``model`` has no training loss, about the model (then the training scenarios do not apply), or
        None."""


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
