"""The model groups of the catalog, each declared once: the registry every layer reads.

A group is a family of architectures that is found, built, fed and trained the same way. Its declaration says what
it is called (and what old records and baselines called it), which library's scenario bodies it shares
(``transformers`` or ``diffusers``), where transformers' auto mappings list its model types and which auto class
users load them with, and which package of :mod:`hf_neuron.tiny` implements it (tiny models, the catalog's CPU
check, inputs, LoRA targets: :mod:`hf_neuron.tiny.groups` says what such a package provides).

The order of :data:`REGISTRY` is the catalog's and the report's order, and it decides which group a model type
belongs to: a type listed by the auto mappings of two groups belongs to the one declared first (a later group, such
as audio, is declared before the text groups to claim its types). A group may also leave to others the types of a
mapping it would otherwise claim (``leaves``: a group that reads a mapping listing both its types and another group's,
such as transformers' multimodal-LM mapping). Adding a group is its package under
:mod:`hf_neuron.tiny` and one declaration here (its name in :data:`Group` beside it; a test keeps the two equal).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from hf_neuron.errors import InputError

__all__ = [
    "GROUPS",
    "GROUP_ALIASES",
    "REGISTRY",
    "Group",
    "GroupDeclaration",
    "Library",
    "declaration",
    "group_name",
    "groups_of",
]

Library = Literal["transformers", "diffusers"]

Group = Literal["audio", "decoder", "encoder-decoder", "image-text", "diffusion"]


@dataclasses.dataclass(frozen=True)
class GroupDeclaration:
    """One group: its ``name``, what it holds (``description``), the ``library`` whose scenario bodies it shares, the
    dotted name of its :mod:`hf_neuron.tiny` package (``models``), the transformers auto mappings that list its types
    with the auto class that loads each (``auto_classes``, in priority order: a type in two of them is tested through
    the first), the names older records and baselines gave it (``aliases``), and the auto mappings whose types it
    leaves to the groups that list them although its own mappings list them too (``leaves``)."""

    name: Group
    description: str
    library: Library
    models: str
    auto_classes: tuple[tuple[str, str], ...] = ()
    aliases: tuple[str, ...] = ()
    leaves: tuple[str, ...] = ()


REGISTRY: tuple[GroupDeclaration, ...] = (
    GroupDeclaration(
        "audio", "speech-to-text, audio-text-to-text and text-to-audio models of transformers", "transformers",
        "hf_neuron.tiny.audio.group",
        (("MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "AutoModelForSpeechSeq2Seq"),
         ("MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES", "AutoModelForMultimodalLM"),
         ("MODEL_FOR_TEXT_TO_WAVEFORM_MAPPING_NAMES", "AutoModelForTextToWaveform"),
         ("MODEL_FOR_TEXT_TO_SPECTROGRAM_MAPPING_NAMES", "AutoModelForTextToSpectrogram")),
        leaves=("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",),
    ),
    GroupDeclaration(
        "decoder", "causal language models of transformers", "transformers", "hf_neuron.tiny.transformers.group",
        (("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "AutoModelForCausalLM"),),
    ),
    GroupDeclaration(
        "encoder-decoder", "sequence-to-sequence language models of transformers", "transformers",
        "hf_neuron.tiny.transformers.group",
        (("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "AutoModelForSeq2SeqLM"),),
    ),
    GroupDeclaration(
        "image-text", "image-text-to-text (vision-language) models of transformers", "transformers",
        "hf_neuron.tiny.image_text.group",
        (("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "AutoModelForImageTextToText"),),
        aliases=("multimodal",),
    ),
    GroupDeclaration("diffusion", "the denoiser backbones of diffusers", "diffusers", "hf_neuron.tiny.diffusion.group"),
)

#: The group names, in registry order.
GROUPS: tuple[Group, ...] = tuple(declaration.name for declaration in REGISTRY)
#: Names that older records, catalogs and baselines gave a group -> its name now.
GROUP_ALIASES: dict[str, Group] = {alias: d.name for d in REGISTRY for alias in d.aliases}

_BY_NAME = {d.name: d for d in REGISTRY}


def group_name(name: str) -> Group | None:
    """The group ``name`` stands for (itself, or the group an alias names), or None when it names none."""
    if name in _BY_NAME:
        return _BY_NAME[name].name
    return GROUP_ALIASES.get(name)


def declaration(name: str) -> GroupDeclaration:
    """The declaration of group ``name`` (or of the group an alias names); :class:`InputError` for an unknown one."""
    group = group_name(name)
    if group is None:
        raise InputError(f"unknown group {name!r}; groups are {', '.join(GROUPS)}")
    return _BY_NAME[group]


def groups_of(library: Library) -> tuple[Group, ...]:
    """The groups that share ``library``'s scenario bodies, in registry order."""
    return tuple(d.name for d in REGISTRY if d.library == library)

