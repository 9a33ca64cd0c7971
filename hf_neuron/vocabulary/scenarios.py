"""What kind a scenario is, and what the records of each schema say of theirs.

Scenario names are an open set: each is declared once, with its metadata, in the scenario registry
(:mod:`hf_neuron.matrix.scenarios.registry`), which is where a run checks the names it is given; a scenario declared
in a module of its own (``--scenario-module``) is as good as a built-in one. Records carry each case's
:class:`ScenarioFacts` (schema 3), so the report needs no registry to tell a core scenario from a variant or a
training scenario from an inference one. Records of older schemas name only built-in scenarios:
:data:`SCHEMA_2_SCENARIOS` says what those were.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict, get_args

__all__ = ["COMPILE_SCENARIO", "MODEL_SOURCES", "SCENARIO_KINDS", "SCHEMA_2_SCENARIOS", "TINY_COUNTERPARTS",
           "ModelSource", "ScenarioFacts", "ScenarioKind", "decodes"]

ScenarioKind = Literal["core", "extra", "variant"]
#: ``core``: an architecture must pass it (or it must not apply) to count as running unmodified; ``extra``: any other
#: scenario (LoRA, bf16, compile, save, ddp...), reported and counted in the verdict; ``variant``: a variant of a core
#: scenario users hit (another attention implementation, an explicit compile config), reported on its own. In this
#: order the report shows them.
SCENARIO_KINDS: tuple[ScenarioKind, ...] = get_args(ScenarioKind)


ModelSource = Literal["tiny", "checkpoints"]
#: What a case's model is built from: ``tiny``, an architecture's tiny model (its config shrunk to width 64 and 2
#: layers, in float32: the per-architecture table); ``checkpoints``, a catalogued (or a user's) checkpoint's config
#: cut to a few layers at real width (``hf-neuron check``, the per-checkpoint table). A scenario says which it runs
#: on.
MODEL_SOURCES: tuple[ModelSource, ...] = get_args(ModelSource)

#: The tiny-model scenario that asks of a tiny model what a checkpoint-only scenario asks of a checkpoint's slice:
#: ``backward`` (a training step's loss and gradients) is ``train``'s question, ``dtype`` (the 16-bit dtype the config
#: states) is ``bf16``'s. The report compares a checkpoint with its tiny model over the scenarios both ran, each pair
#: counted as one.
TINY_COUNTERPARTS: dict[str, str] = {"backward": "train", "dtype": "bf16"}


class ScenarioFacts(TypedDict):
    """What a record says of its scenario: its ``kind``, whether it ``trains`` (then it is compared with a
    baseline's training support, else with its inference support), and whether it ``decodes`` (runs a decoding loop:
    the report's "recompiles while decoding" and "a decoding step runs an operator on the CPU" read it; schema 4)."""

    kind: ScenarioKind
    trains: bool
    decodes: NotRequired[bool]


#: The scenario that compiles a model's forward pass (``torch.compile``) on its own: the report's compile figures (one
#: graph, graph breaks) are its cases'.
COMPILE_SCENARIO = "compile"

#: The built-in scenarios of record schemas 1 and 2, which did not carry their facts, in the order reports showed them
#: (and of schema 3, whose facts did not say which decode).
SCHEMA_2_SCENARIOS: dict[str, ScenarioFacts] = {
    "load": {"kind": "core", "trains": False},
    "forward": {"kind": "core", "trains": False},
    "generate": {"kind": "core", "trains": False, "decodes": True},
    "train": {"kind": "core", "trains": True},
    "lora": {"kind": "extra", "trains": True},
    "bf16": {"kind": "extra", "trains": False, "decodes": True},
    "compile": {"kind": "extra", "trains": False},
    "save": {"kind": "extra", "trains": False},
    "ddp": {"kind": "extra", "trains": True},
    "sdpa": {"kind": "variant", "trains": False},
    "flex_attention": {"kind": "variant", "trains": False},
    "generate_compiled": {"kind": "variant", "trains": False, "decodes": True},
    "train_aux_loss": {"kind": "variant", "trains": True},
}


def decodes(facts: ScenarioFacts) -> bool:
    """Whether a scenario with ``facts`` runs a decoding loop (False where its records do not say)."""
    return bool(facts.get("decodes", False))
