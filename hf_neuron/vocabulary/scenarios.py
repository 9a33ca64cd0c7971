"""What kind a scenario is, and what the records of each schema say of theirs.

Scenario names are an open set: each is declared once, with its metadata, in the scenario registry
(:mod:`hf_neuron.matrix.scenarios.registry`), which is where a run checks the names it is given; a scenario declared
in a module of its own (``--scenario-module``) is as good as a built-in one. Records carry each case's
:class:`ScenarioFacts` (schema 3), so the report needs no registry to tell a core scenario from a variant or a
training scenario from an inference one. Records of older schemas name only built-in scenarios:
:data:`SCHEMA_2_SCENARIOS` says what those were.
"""

from __future__ import annotations

from typing import Literal, TypedDict, get_args

__all__ = ["SCENARIO_KINDS", "SCHEMA_2_SCENARIOS", "ScenarioFacts", "ScenarioKind"]

ScenarioKind = Literal["core", "extra", "variant"]
#: ``core``: an architecture must pass it (or it must not apply) to count as running unmodified; ``extra``: any other
#: scenario (LoRA, bf16, compile, save, ddp...), reported and counted in the verdict; ``variant``: a variant of a core
#: scenario users hit (another attention implementation, an explicit compile config), reported on its own. In this
#: order the report shows them.
SCENARIO_KINDS: tuple[ScenarioKind, ...] = get_args(ScenarioKind)


class ScenarioFacts(TypedDict):
    """What a record says of its scenario: its ``kind`` and whether it ``trains`` (then it is compared with a
    baseline's training support, else with its inference support)."""

    kind: ScenarioKind
    trains: bool


#: The built-in scenarios of record schemas 1 and 2, which did not carry their facts, in the order reports showed them.
SCHEMA_2_SCENARIOS: dict[str, ScenarioFacts] = {
    "load": {"kind": "core", "trains": False},
    "forward": {"kind": "core", "trains": False},
    "generate": {"kind": "core", "trains": False},
    "train": {"kind": "core", "trains": True},
    "lora": {"kind": "extra", "trains": True},
    "bf16": {"kind": "extra", "trains": False},
    "compile": {"kind": "extra", "trains": False},
    "save": {"kind": "extra", "trains": False},
    "ddp": {"kind": "extra", "trains": True},
    "sdpa": {"kind": "variant", "trains": False},
    "flex_attention": {"kind": "variant", "trains": False},
    "generate_compiled": {"kind": "variant", "trains": False},
    "train_aux_loss": {"kind": "variant", "trains": True},
}
