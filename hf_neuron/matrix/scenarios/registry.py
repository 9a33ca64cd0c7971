"""Each scenario declared once: its name, its kind, whether it trains, what it requires of a model, which groups run
it, with which function, and the sentence that says when it passes.

A *scenario set* is a module with ``SCENARIOS``, a sequence of :class:`ScenarioDeclaration` in run order; the default
is :mod:`hf_neuron.matrix.scenarios.builtin`, and ``--scenario-module`` names another (a dotted name or a ``.py``
file), e.g. the built-in set plus a scenario of one's own. Scenario names are an open set, checked at run time
against the set the run loaded (:func:`load_scenarios`): the known-failures list, ``--scenario`` and the records' names
all are. Scenario modules are imported by the pytest controller too, to list the cases: import torch and transformers
inside the functions, not at module level.

A declaration's ``implementations`` are keyed by a library (``transformers``, ``diffusers``: every group that shares
that library's scenario bodies runs it) or by a group name (that group only, before its library's): a group none of
them names has no case of the scenario. ``requires`` names a catalog feature (e.g. ``router-logits``): an architecture
without it has no case either. ``models`` says which models the scenario runs on (:data:`MODEL_SOURCES`): the
architectures' tiny models, the checkpoints' real-width slices, or both.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_neuron.errors import InputError
from hf_neuron.matrix.scenarios.contract import CaseContext, Scenario, ScenarioResult
from hf_neuron.vocabulary.groups import GROUPS, declaration
from hf_neuron.vocabulary.records import NamedScenario, is_name
from hf_neuron.vocabulary.scenarios import MODEL_SOURCES, SCENARIO_KINDS, ModelSource, ScenarioFacts, ScenarioKind

__all__ = ["DEFAULT_SCENARIO_MODULE", "LIBRARIES", "ScenarioDeclaration", "ScenarioSet", "load_scenarios"]

DEFAULT_SCENARIO_MODULE = "hf_neuron.matrix.scenarios.builtin"
#: The keys of ``implementations`` that stand for every group sharing a library's scenario bodies.
LIBRARIES = ("transformers", "diffusers")


@dataclasses.dataclass(frozen=True)
class ScenarioDeclaration:
    """One scenario: ``name`` (a verb or noun users know), ``kind`` (core, variant or extra), whether it ``trains``,
    the function of each library or group (``implementations``), the catalog feature it ``requires``, ``passes``:
    when it passes, in one sentence (the docs' table is generated from it), whether it ``decodes`` (runs a
    decoding loop), and which ``models`` it runs on (tiny models, checkpoints' slices, or both)."""

    name: str
    kind: ScenarioKind
    trains: bool
    implementations: Mapping[str, Scenario]
    passes: str
    requires: str | None = None
    decodes: bool = False
    models: tuple[ModelSource, ...] = ("tiny",)

    @property
    def facts(self) -> ScenarioFacts:
        """What the records of its cases say of it."""
        return {"kind": self.kind, "trains": self.trains, "decodes": self.decodes}

    def named(self, selected: bool = True) -> NamedScenario:
        """What a run's environment block says of it: its name, its facts, the models it runs on, whether the run's
        selection chose it (``selected``) and the groups that have a case of it."""
        return NamedScenario(name=self.name, **self.facts, models=list(self.models), selected=selected,
                             groups=list(self.groups()))

    def implementation(self, group: str, features: Collection[str] | None = None) -> Scenario | None:
        """The function that runs it for an architecture of ``group`` (with catalog ``features``, when given), or
        None when it has no such case."""
        if features is not None and self.requires is not None and self.requires not in features:
            return None
        found = self.implementations.get(group)
        return found if found is not None else self.implementations.get(declaration(group).library)

    def __call__(self, ctx: CaseContext) -> ScenarioResult:
        """Run the scenario for ``ctx``'s group (KeyError when the group has no case of it)."""
        found = self.implementation(ctx.group)
        if found is None:
            raise KeyError(f"scenario {self.name!r} has no implementation for group {ctx.group!r}")
        return found(ctx)

    def groups(self) -> tuple[str, ...]:
        """The groups that run it, in registry order."""
        return tuple(group for group in GROUPS if self.implementation(group) is not None)

    def problems(self) -> list[str]:
        """What is wrong with the declaration (empty when nothing is)."""
        found = []
        if not is_name(self.name):
            found.append(f"name {self.name!r} is not a name of letters, digits, '_', '.' and '-'")
        if self.kind not in SCENARIO_KINDS:
            found.append(f"kind {self.kind!r} is not one of {', '.join(SCENARIO_KINDS)}")
        if not isinstance(self.trains, bool):
            found.append("trains must be True or False")
        if not isinstance(self.decodes, bool):
            found.append("decodes must be True or False")
        unknown = sorted(set(self.implementations) - {*LIBRARIES, *GROUPS})
        if unknown:
            found.append(f"implementations for {unknown}, which are neither libraries ({', '.join(LIBRARIES)}) nor "
                         f"groups ({', '.join(GROUPS)})")
        if not self.implementations:
            found.append("no implementation: no group would run it")
        found += [f"the implementation for {key!r} is not a function" for key, function in self.implementations.items()
                  if not callable(function)]
        if not self.passes.strip():
            found.append("'passes' must say when it passes")
        if not self.models or not set(self.models) <= set(MODEL_SOURCES):
            found.append(f"models must name some of {', '.join(MODEL_SOURCES)}, not {self.models!r}")
        return found


@dataclasses.dataclass(frozen=True)
class ScenarioSet:
    """The scenarios of a run, by name, in run order."""

    declarations: Mapping[str, ScenarioDeclaration]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.declarations)

    def __getitem__(self, name: str) -> ScenarioDeclaration:
        return self.declarations[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.declarations)

    def of_kind(self, kind: ScenarioKind) -> tuple[str, ...]:
        """The names of the scenarios of ``kind``, in run order."""
        return tuple(name for name, found in self.declarations.items() if found.kind == kind)

    def named(self, selected: Collection[str] = ()) -> list[NamedScenario]:
        """The run's scenario set as its environment block lists it, in run order, each marked as chosen by a
        selection that names ``selected`` (every one when it names none)."""
        return [found.named(not selected or name in selected) for name, found in self.declarations.items()]

    def on(self, models: ModelSource) -> tuple[ScenarioDeclaration, ...]:
        """The scenarios that run on ``models``, in run order."""
        return tuple(found for found in self.declarations.values() if models in found.models)


def _import(spec: str) -> Any:
    if spec.endswith(".py"):
        path = Path(spec).resolve()
        if not path.is_file():
            raise InputError(f"scenario module {spec!r}: no such file")
        name = f"hf_neuron_matrix_scenarios_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise InputError(f"scenario module {spec!r}: cannot be imported as a Python file")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        loader_spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name is not None and spec.startswith(exc.name):
            raise InputError(
                f"scenario module {spec!r} not found: give a dotted module name or a path ending in .py"
            ) from exc
        raise


def load_scenarios(spec: str = DEFAULT_SCENARIO_MODULE) -> ScenarioSet:
    """Import the scenario set ``spec`` (dotted module name or ``.py`` path) and check its ``SCENARIOS``."""
    declared = getattr(_import(spec), "SCENARIOS", None)
    if not isinstance(declared, Sequence) or not declared or not all(
            isinstance(item, ScenarioDeclaration) for item in declared):
        raise InputError(f"scenario module {spec!r} must define SCENARIOS, a non-empty sequence of "
                         "ScenarioDeclaration (hf_neuron.matrix.scenarios.registry)")
    by_name: dict[str, ScenarioDeclaration] = {}
    for item in declared:
        if item.name in by_name:
            raise InputError(f"scenario module {spec!r} declares {item.name!r} twice")
        if problems := item.problems():
            raise InputError(f"scenario module {spec!r}, scenario {item.name!r}: {'; '.join(problems)}")
        by_name[item.name] = item
    return ScenarioSet(by_name)
