"""Which cases a run has: catalog architectures x scenarios, narrowed by name, group, slice and shard.

The order is deterministic (catalog order, then scenario order), and so is sharding: case ``k`` of that order
belongs to shard ``k mod N + 1``. Shards of one run therefore partition it exactly, whatever machine computes
them, and are balanced to within one case.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.checkpoint.slice import SliceRequest
from hf_neuron.compat.slices import load_slices
from hf_neuron.errors import InputError
from hf_neuron.vocabulary.gaps import Gap
from hf_neuron.vocabulary.groups import GROUPS, Group, group_name
from hf_neuron.vocabulary.records import case_id
from hf_neuron.vocabulary.scenarios import MODEL_SOURCES, ModelSource, ScenarioFacts

if TYPE_CHECKING:
    from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration, ScenarioSet

__all__ = ["TOP_RANKED", "TOP_RANKED_FEATURE", "Architecture", "Case", "Selection", "Shard", "Slicing",
           "group_option", "read_catalog", "select"]


#: How many of the best-ranked architectures of each group (``compat/ranking.csv``) have the catalog feature
#: :data:`TOP_RANKED_FEATURE`, which :func:`read_catalog` derives from the ranking (the catalog does not store it): a
#: scenario too costly for every architecture (``trl_cli``: TRL's command line on two devices) requires it.
TOP_RANKED = 10
TOP_RANKED_FEATURE = f"top-{TOP_RANKED}"

#: A harness gap and why: ``(gap, reason)``.
GapReason = tuple[Gap, str]


@dataclasses.dataclass(frozen=True)
class Architecture:
    """What the runner needs of a catalog entry (:class:`hf_neuron.compat.catalog.CatalogEntry`).

    ``untested`` is set when the catalog says the tiny model does not build on the CPU: its cases are selected and
    recorded as ``untested`` (gap ``tiny-build``) with that reason, without running, so the report shows them and
    why. ``reviewed_gap`` is the harness gap the reviewed data gives an architecture whose tiny model does not run
    on the CPU (e.g. it needs an input the harness cannot build): a case that fails the same way on the CPU is
    recorded as ``untested`` with it.
    """

    model_type: str
    group: Group
    untested: GapReason | None = None
    reviewed_gap: GapReason | None = None
    features: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class Case:
    """One (architecture, scenario) pair, or (checkpoint, scenario) for a checkpoint's real-width slice
    (``checkpoint``): one test, one record (``untested``: recorded so, not run); ``facts`` are what its record says of
    the scenario."""

    model_type: str
    group: Group
    scenario: str
    facts: ScenarioFacts
    untested: GapReason | None = None
    reviewed_gap: GapReason | None = None
    checkpoint: SliceRequest | None = None

    @property
    def case_id(self) -> str:
        """The record's ``case_id``: ``"llama::forward"``, ``"meta-llama/Llama-3.1-8B::forward"``."""
        return case_id(self.model_type, self.scenario, None if self.checkpoint is None else self.checkpoint.id)

    @property
    def test_id(self) -> str:
        """The pytest parameter id: ``"llama/forward"`` (``::`` would split a pytest node id)."""
        return self.case_id.replace("::", "/")


_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclasses.dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based), as written ``--shard 2/3``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SHARD.match(text)
        if match is None:
            raise InputError(f"--shard {text!r} is not i/N: write e.g. --shard 2/3 for the second of three")
        index, count = int(match[1]), int(match[2])
        if count < 1 or not 1 <= index <= count:
            raise InputError(
                f"--shard {text}: i must be between 1 and N (N >= 1), as in 1/{max(count, 1)} ... "
                f"{max(count, 1)}/{max(count, 1)}"
            )
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclasses.dataclass(frozen=True)
class Selection:
    """The user's choice of cases; empty fields do not narrow. ``models`` says which models the cases are built from
    (the architectures' tiny models, the catalogued checkpoints' real-width slices, or both: tiny cases first);
    ``checkpoints`` narrows the checkpoints by id."""

    archs: tuple[str, ...] = ()
    group: Group | None = None
    scenarios: tuple[str, ...] = ()
    slice: str | None = None
    shard: Shard | None = None
    models: tuple[ModelSource, ...] = ("tiny",)
    checkpoints: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """Plain JSON, as a run manifest stores it."""
        return {
            "archs": list(self.archs),
            "group": self.group,
            "scenarios": list(self.scenarios),
            "slice": self.slice,
            "shard": None if self.shard is None else str(self.shard),
            "models": list(self.models),
            "checkpoints": list(self.checkpoints),
        }


@dataclasses.dataclass(frozen=True)
class Slicing:
    """How the run slices a checkpoint: the ``layers`` to keep, the memory ``budget`` (bytes) of a slice, and the
    checkpoint catalog to read (None: ``compat/checkpoints.toml``)."""

    layers: int
    budget: int
    catalog: Path | None = None


def read_catalog(path: Path | None = None, ranking: Path | None = None) -> tuple[Architecture, ...]:
    """The architectures of the catalog ``path`` (default ``compat/catalog.json``), in catalog order, each with its
    catalog features and, among the :data:`TOP_RANKED` best-ranked of its group in the ranking ``ranking`` (default
    ``compat/ranking.csv``), :data:`TOP_RANKED_FEATURE`."""
    from hf_neuron.compat.catalog import load_catalog
    from hf_neuron.compat.ranking import best_of_each_group, load_ranking

    catalog = load_catalog(path)  # a malformed file raises DataFileError, an InputError naming the file
    top = best_of_each_group({entry.model_type: entry.group for entry in catalog.entries}, TOP_RANKED,
                             load_ranking(ranking))
    architectures = []
    for entry in catalog.entries:
        untested: GapReason | None = None
        if entry.builds is False:
            untested = ("tiny-build", f"the tiny model does not build on the CPU: {entry.reason}")
        reviewed: GapReason | None = None
        if entry.gap is not None:  # the catalog's reader checked that it names a gap
            reviewed = (entry.gap, entry.reason or f"the harness cannot test {entry.model_type} ({entry.gap})")
        features = frozenset(entry.features) | ({TOP_RANKED_FEATURE} if entry.model_type in top else set())
        architectures.append(Architecture(entry.model_type, entry.group, untested, reviewed, features))
    return tuple(architectures)


#: Up to this many valid names are printed with an unknown-name error; above it, the count and how to list them.
_LISTED_NAMES = 12

#: How to see every valid name of a kind that is too long to print in an error.
_HOW_TO_LIST = {"architecture": "`hf-neuron matrix list --architectures` lists them",
                "checkpoint": "compat/checkpoints.toml lists them"}
_HOW_TO_LIST_CASES = "`hf-neuron matrix list` lists the cases (architecture::scenario)"


def _check_known(kind: str, option: str, names: Iterable[str], valid: Sequence[str]) -> None:
    """Raise InputError for names of ``option`` not in ``valid``: "did you mean" suggestions, and the valid names
    (or, when there are more than a dozen, their count and the command that lists them)."""
    unknown = [name for name in names if name not in valid]
    if not unknown:
        return
    hints = [
        f"{name!r} (did you mean {', '.join(map(repr, close))}?)" if (close := difflib.get_close_matches(name, valid))
        else repr(name)
        for name in unknown
    ]
    if len(valid) <= _LISTED_NAMES:
        known = f"valid ({len(valid)}): {', '.join(valid)}"
    else:
        known = f"{len(valid)} {kind}s are known; {_HOW_TO_LIST.get(kind, _HOW_TO_LIST_CASES)}"
    raise InputError(f"{option}: unknown {kind} {', '.join(hints)}; {known}")


def group_option(name: str | None) -> Group | None:
    """The group ``--group name`` names (an old name of a group names it too); InputError for none."""
    if name is None:
        return None
    group = group_name(name)
    if group is None:
        _check_known("group", "--group", [name], GROUPS)
    return group


def _architectures(catalog: Sequence[Architecture], selection: Selection, slices_file: Path) -> tuple[
        list[Architecture], tuple[str, ...] | None]:
    """The architectures the selection names (by name, group and slice), in catalog order, and the checkpoints its
    slice lists (None: the slice lists none, or there is no slice)."""
    model_types = [entry.model_type for entry in catalog]
    _check_known("architecture", "--arch", selection.archs, model_types)
    wanted = set(selection.archs) if selection.archs else set(model_types)
    listed: tuple[str, ...] | None = None
    if selection.slice is not None:
        slices = load_slices(slices_file)
        _check_known("slice", "--slice", [selection.slice], list(slices))
        members = slices[selection.slice].architectures
        missing = [name for name in members if name not in model_types]
        if missing:
            raise InputError(
                f"{slices_file}: slice {selection.slice!r} lists {', '.join(missing)}, which the catalog does not "
                "have: fix the slice or the catalog"
            )
        wanted &= set(members)
        listed = slices[selection.slice].checkpoints or None
    return [entry for entry in catalog if entry.model_type in wanted and selection.group in (None, entry.group)], listed


def _checkpoint_cases(catalog: Sequence[Architecture], architectures: Sequence[Architecture],
                      scenarios: Sequence[ScenarioDeclaration], selection: Selection, listed: tuple[str, ...] | None,
                      slicing: Slicing) -> list[Case]:
    """The cases of the catalogued checkpoints of ``architectures`` (of the ``catalog``'s: those ``listed`` by the
    slice, those the selection names), each with each of ``scenarios`` that has a case for it."""
    from hf_neuron.compat.checkpoints import CHECKPOINTS_PATH, load_checkpoints

    by_type = {entry.model_type: entry for entry in architectures}
    found = load_checkpoints(slicing.catalog or CHECKPOINTS_PATH,
                             architectures=[entry.model_type for entry in catalog])
    ids = [checkpoint.id for checkpoint in found]
    _check_known("checkpoint", "--checkpoint", selection.checkpoints, ids)
    named = None if listed is None else set(listed)
    if listed is not None:
        _check_known("checkpoint", f"slice {selection.slice!r}", listed, ids)
    if selection.checkpoints:
        named = set(selection.checkpoints) if named is None else named & set(selection.checkpoints)
    return [
        Case(entry.model_type, entry.group, scenario.name, scenario.facts, entry.untested, entry.reviewed_gap,
             SliceRequest(checkpoint.id, checkpoint.config_path, slicing.layers, slicing.budget,
                          scenario.trains))
        for checkpoint in found
        if (entry := by_type.get(checkpoint.architecture)) is not None and (named is None or checkpoint.id in named)
        for scenario in scenarios
        if scenario.implementation(entry.group, entry.features) is not None
    ]


def select(
    catalog: Sequence[Architecture],
    scenarios: ScenarioSet,
    selection: Selection,
    slices_file: Path,
    slicing: Slicing | None = None,
) -> list[Case]:
    """The cases of ``selection``, in run order: each architecture's tiny model with each scenario of ``scenarios``
    that has a case for it (its group and features), then each catalogued checkpoint's slice likewise (``slicing``
    says how; needed when the selection asks for checkpoints); unknown names and an empty result raise InputError."""
    _check_known("scenario", "--scenario", selection.scenarios, scenarios.names)
    _check_known("model source", "--models", selection.models, MODEL_SOURCES)
    if selection.checkpoints and "checkpoints" not in selection.models:
        raise InputError("--checkpoint names checkpoints, whose cases run with --models checkpoints")
    architectures, listed = _architectures(catalog, selection, slices_file)
    cases: list[Case] = []
    for models in MODEL_SOURCES:
        if models not in selection.models:
            continue
        chosen = [scenario for scenario in scenarios.on(models)
                  if not selection.scenarios or scenario.name in selection.scenarios]
        if models == "tiny":
            cases += [
                Case(entry.model_type, entry.group, scenario.name, scenario.facts, entry.untested, entry.reviewed_gap)
                for entry in architectures
                for scenario in chosen
                if scenario.implementation(entry.group, entry.features) is not None
            ]
        else:
            if slicing is None:
                raise ValueError("select() needs the run's slicing to select checkpoint cases")
            cases += _checkpoint_cases(catalog, architectures, chosen, selection, listed, slicing)
    if selection.shard is not None:
        shard = selection.shard
        cases = cases[shard.index - 1 :: shard.count]
    if not cases:
        raise InputError(
            f"the selection is empty: {json.dumps(selection.as_json())} matches no case; "
            "`hf-neuron matrix list` shows what a selection holds"
        )
    return cases
