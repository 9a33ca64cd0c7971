"""The report's numbers, computed with pandas from records: cases, the matrix, headline, pass rates, the run diff.

Every figure says what it counts and over what: a pass rate is over the architectures a scenario applies to (not
over those that happened not to be excused), the headline names the backend that produced the records, and the
baseline is compared group by group with what it supports there.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hf_neuron.compat.baselines import Baseline, Mode
from hf_neuron.compat.catalog import Catalog
from hf_neuron.compat.expected_failures import EVERY
from hf_neuron.compat.library_bugs import LibraryBugs, affects
from hf_neuron.compat.ranking import Ranking
from hf_neuron.report.status import FAILING, Plan, arch_verdict, cell_status, runs_unmodified, scenario_order
from hf_neuron.vocabulary.backends import BackendKind
from hf_neuron.vocabulary.groups import GROUPS
from hf_neuron.vocabulary.outcomes import ARCH_VERDICTS, FAILS_ON_CPU_TOO, MISSING, NOT_RUN
from hf_neuron.vocabulary.records import (
    DEVICE_STEPS,
    GRAPH_BUDGET,
    GRAPHS_PER_GENERATION,
    Record,
    case_verdict,
    parse_time,
    scenario_facts,
)
from hf_neuron.vocabulary.scenarios import COMPILE_SCENARIO, SCHEMA_2_SCENARIOS, ScenarioFacts, decodes

__all__ = [
    "CASE_COLUMNS",
    "Change",
    "GroupFigures",
    "Headline",
    "Lane",
    "LibraryBug",
    "RunInfo",
    "ScenarioFallback",
    "Statuses",
    "baseline_mode",
    "case_frame",
    "case_statuses",
    "core_scenarios",
    "counted_core",
    "decoding_budgets",
    "diff_runs",
    "fallback_ops",
    "frame_rows",
    "graphs_per_generation",
    "headline",
    "lane",
    "library_bugs_of",
    "matrix_table",
    "run_info",
    "scenario_columns",
    "scenario_costs",
    "scenario_fallbacks",
    "scenario_rates",
    "split_lanes",
    "variant_scenarios",
]

#: ``{model_type: {scenario: status}}`` for the cases that have a record.
Statuses = Mapping[str, Mapping[str, str]]

#: Columns of :func:`matrix_table` before and after the scenario columns.
_LEAD_COLUMNS = ["rank", "top", "group", "has_records", "verdict", "runs_unmodified", "trainium", "compiled",
                 "fullgraph", "one_graph", "graph_breaks", "breaks", "decoding_recompiles", "decoding_graphs",
                 "bounded_decoding", "fallbacks", "step_fallbacks"]
_TRAIL_COLUMNS = ["baseline_inference", "baseline_training", "changed"]
#: The lanes of a report, the primary one first: the reference device's table, the real backend's column beside it.
_LANE_ORDER: tuple[BackendKind, ...] = ("reference", "real")
#: The env keys that describe the run rather than one value (shown apart from the environment list).
_LISTS = ("patches", "reference_gap_patches", "scenarios", "fallback_list")


@dataclass(frozen=True)
class RunInfo:
    """Which run the records come from, when, and on what (each env key maps to its distinct values, sorted and
    joined: several values mean the shards ran on different hosts or versions), and the patches that applied."""

    run_id: str
    started_at: str
    finished_at: str
    backend: str
    env: Mapping[str, str]
    patches: tuple[str, ...] = ()
    reference_gap_patches: tuple[str, ...] = ()
    #: the run's scenario set in run order, with what its records say of each (runs before schema 3 did not record
    #: it: their built-in set)
    scenarios: Mapping[str, ScenarioFacts] = field(default_factory=lambda: dict(SCHEMA_2_SCENARIOS))
    #: where the list of operators the real backend runs on the CPU came from (the run's ``env.fallback_list``: its
    #: source, commit, kind); None when the records do not say
    fallback_list: Mapping[str, str] | None = None
    #: which core cases the run meant to run (its scenario set's ``selected`` and ``groups``)
    plan: Plan = field(default_factory=Plan)


@dataclass(frozen=True)
class Lane:
    """The real backend's run beside the reference device's: its run, and each architecture's verdict there."""

    run: RunInfo
    verdicts: Mapping[str, str]
    runs_unmodified: frozenset[str]

    @property
    def architectures(self) -> int:
        return len(self.verdicts)


@dataclass(frozen=True)
class GroupFigures:
    """One catalog group: its architectures in the run, their verdicts, and what the baseline supports there."""

    group: str
    architectures: int
    runs_unmodified: int
    verdicts: Mapping[str, int]
    catalog: int
    baseline_inference: int
    baseline_training: int
    baseline_in_run: int


@dataclass(frozen=True)
class Headline:
    """The figures at the top of the index: over the primary lane's records (``backend``), with the real backend's
    lane beside them when there is one."""

    backend: str
    architectures: int
    runs_unmodified: int
    #: the core scenarios counted: the core scenarios of the run's set that it ran
    core: tuple[str, ...]
    verdicts: Mapping[str, int]
    groups: tuple[GroupFigures, ...]
    catalog_not_run: int
    baseline_name: str
    baseline_means: str
    top: int
    top_runs_unmodified: int
    #: architectures whose ``compile`` case passed in one graph with no break; with graph breaks; of those with a
    #: ``compile`` case that compiled (the denominator of both)
    one_graph: int = 0
    graph_breaks: int = 0
    compiled_architectures: int = 0
    #: architectures whose decoding recompiled, of those whose decoding cases compiled
    decoding_recompiles: int = 0
    decoding_architectures: int = 0
    #: architectures whose compiled decoding kept to its graph budget (no more graphs for more tokens), of those
    #: whose budget was measured (a ``graph budget`` leg with its graphs per generation)
    bounded_decoding: int = 0
    budget_architectures: int = 0
    #: architectures that ran an operator expected to fall back to the CPU on Trainium; whose training or decoding
    #: step ran one; of those whose fallbacks were measured
    with_fallbacks: int = 0
    step_fallbacks: int = 0
    fallback_architectures: int = 0
    untested_by_gap: Mapping[str, int] = field(default_factory=dict)
    trainium: Lane | None = None
    #: every core scenario of the run's set (run or not), and its variant scenarios
    all_core: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    #: the core cases the run meant to run and has no record of (``missing`` cells), and the shards of the run that
    #: never came back (its results directories' manifests say which); either makes the run incomplete
    missing: int = 0
    missing_shards: tuple[str, ...] = ()

    @property
    def incomplete(self) -> bool:
        """Whether the run lacks records it meant to have: the page's banner says so."""
        return bool(self.missing or self.missing_shards)


@dataclass(frozen=True)
class Change:
    """A case whose status differs from the previous run's; ``scenario_added`` when the previous run had no case of
    that scenario at all; ``groups`` (before, after) when its architecture moved to another group (then its cases
    are tested another way, and a status that changed is no regression and no new pass)."""

    model_type: str
    scenario: str
    before: str
    after: str
    scenario_added: bool = False
    groups: tuple[str, str] | None = None

    @property
    def kind(self) -> str:
        """``moved`` (its architecture is in another group now), ``regression`` (passed before, not now),
        ``new-pass`` (passes now, did not before), ``scenario-added`` (a scenario the previous run did not have) or
        ``other``."""
        if self.groups is not None:
            return "moved"
        if self.before == "passed":
            return "regression"
        if self.scenario_added:
            return "scenario-added"
        return "new-pass" if self.after == "passed" else "other"


@dataclass(frozen=True)
class LibraryBug:
    """A bug of a library (``compat/library_bugs.toml``) as an architecture's page shows it: the entry's fields, the
    library's version in the run (None when the records do not name one version), and the run's cases it explains:
    those of its scenarios that fail as it says, the same way on the CPU."""

    library: str
    versions: str
    scenarios: tuple[str, ...]
    reason: str
    reproduction: str
    fixed_in: str | None
    upstream: str | None
    run_version: str | None
    explains: tuple[str, ...]


def library_bugs_of(bugs: LibraryBugs, model_type: str, cases: pd.DataFrame, env: Mapping[str, str]
                    ) -> list[LibraryBug]:
    """The bugs of ``bugs`` that name ``model_type`` and are in the version of their library the run used (every one
    when the records do not say which version ran), each with the cases of ``cases`` it explains."""
    own = cases[(cases["model_type"] == model_type) & (cases["cpu_verdict"] == FAILS_ON_CPU_TOO)]
    found = []
    for entry in bugs.entries:
        if not {model_type, EVERY} & set(entry.names["model_type"]):
            continue
        library = entry.fields["library"]
        version = env.get(library)
        version = version if version and "," not in version else None  # shards on several versions: not one
        if not affects(entry, version):
            continue
        explains = tuple(
            case["scenario"] for case in frame_rows(own)
            if entry.selects({"model_type": model_type, "scenario": case["scenario"]})
            and entry.expects(f"{case['failure_type']}: {case['failure_message']}"))
        found.append(LibraryBug(library, entry.fields["versions"], entry.names["scenario"], entry.reason,
                                entry.fields["reproduction"].strip(), entry.fields.get("fixed_in"),
                                entry.fields.get("upstream"), version, explains))
    return found


def baseline_mode(facts: ScenarioFacts) -> Mode:
    """Which baseline support a scenario is compared with: training for a scenario that trains, inference for the
    others."""
    return "training" if facts["trains"] else "inference"


def split_lanes(records: Sequence[Record]) -> dict[str, list[Record]]:
    """The records by backend (``env.backend``): the reference device's first, then the real backend's, then any
    other."""
    lanes: dict[str, list[Record]] = {}
    for record in records:
        lanes.setdefault(str(record["env"].get("backend")), []).append(record)
    order: dict[str, int] = {kind: index for index, kind in enumerate(_LANE_ORDER)}
    return dict(sorted(lanes.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def lane(table: pd.DataFrame, run: RunInfo) -> Lane:
    """The lane of the real backend from its own :func:`matrix_table`: each architecture's verdict there."""
    run_rows = table[table["has_records"]]
    return Lane(run, dict(run_rows["verdict"]), frozenset(run_rows.index[run_rows["runs_unmodified"]]))


def run_info(records: Sequence[Record], cases: Sequence[Record] | None = None) -> RunInfo:
    """The run the records belong to; they must all share one ``run_id`` (check that first). Its scenario set is the
    one the records declare, with any other scenario of ``cases`` (default: ``records``; the architecture table's
    run passes its tiny models' cases, so that a scenario only checkpoints ran is not added to it)."""
    started = min(records, key=lambda r: parse_time(r["started_at"]))["started_at"]
    finished = max(records, key=lambda r: parse_time(r["finished_at"]))["finished_at"]
    values: dict[str, set[str]] = {}
    for record in records:
        for key, value in record["env"].items():
            found = values.setdefault(key, set())
            if value is not None and key not in _LISTS:
                found.add(str(value))
    env = {key: ", ".join(sorted(found)) for key, found in values.items() if key not in _LISTS}
    first = records[0]["env"]
    # schema-1 records say only whether patches were on (a bool), not which
    listed: dict[str, tuple[str, ...]] = {
        key: tuple(map(str, value)) if isinstance(value := first.get(key), list) else ()
        for key in ("patches", "reference_gap_patches")
    }
    declared = first.get("scenarios")
    scenarios: dict[str, ScenarioFacts] = (  # the tiny models' scenarios: the table's columns
        {s["name"]: {"kind": s["kind"], "trains": s["trains"]} for s in declared if "tiny" in s.get("models", ["tiny"])}
        if declared else dict(SCHEMA_2_SCENARIOS))
    for record in records if cases is None else cases:  # a scenario the set does not name (a run resumed with
        scenarios.setdefault(record["scenario"], record["scenario_facts"])  # another set)
    provenance = first.get("fallback_list")
    return RunInfo(records[0]["run_id"], started, finished, env["backend"], env,
                   listed["patches"], listed["reference_gap_patches"], scenarios,
                   {str(k): str(v) for k, v in provenance.items()} if isinstance(provenance, dict) else None,
                   Plan.of(declared) if declared else Plan())


#: The columns of :func:`case_frame`, in order (an empty run's frame has them too).
CASE_COLUMNS: tuple[str, ...] = (
    "model_type", "checkpoint", "group", "scenario", "scenario_kind", "scenario_trains", "scenario_decodes",
    "outcome", "cpu_outcome", "cpu_verdict", "status", "verdict", "reason", "gap", "duration_s", "peak_memory_bytes",
    "parity_metric", "parity_value", "parity_tolerance", "parity_compared", "parity_positions", "failure_type",
    "failure_message", "failure_frame", "fingerprint", "traceback", "failure_class", "known_failure", "cpu_failure",
    "compile_backends", "compile_graphs", "compile_breaks", "compile_break_reasons", "compile_recompiles",
    "compile_recompile_reasons", "compile_seconds", "fallback_ops", "details", "legs", "checkpoint_facts",
)


def case_frame(records: Sequence[Record]) -> pd.DataFrame:
    """One row per case (:data:`CASE_COLUMNS`), with the record's fields flattened and the cell ``status`` added;
    ``checkpoint`` is the id of a checkpoint's case (None for a tiny model's) and ``checkpoint_facts`` its facts."""
    rows: list[dict[str, Any]] = []
    for r in records:
        parity: Mapping[str, Any] = r["parity"] or {}
        failure: Mapping[str, Any] = r["failure"] or {}
        compiled: Mapping[str, Any] = r["compile"] or {}
        rows.append(
            {
                "model_type": r["model_type"],
                "checkpoint": r["checkpoint"]["id"] if r["checkpoint"] else None,
                "group": r["group"],
                "scenario": r["scenario"],
                "scenario_kind": r["scenario_facts"]["kind"],
                "scenario_trains": r["scenario_facts"]["trains"],
                "scenario_decodes": decodes(r["scenario_facts"]),
                "outcome": r["outcome"],
                "cpu_outcome": r["cpu_outcome"],
                "cpu_verdict": r["cpu_verdict"],
                "status": cell_status(r),
                "verdict": case_verdict(r),
                "reason": r["reason"],
                "gap": r["gap"],
                "duration_s": r["duration_s"],
                "peak_memory_bytes": r["peak_memory_bytes"],
                "parity_metric": parity.get("metric"),
                "parity_value": parity.get("value"),
                "parity_tolerance": parity.get("tolerance"),
                "parity_compared": parity.get("compared"),
                "parity_positions": parity.get("positions"),
                "failure_type": failure.get("type"),
                "failure_message": failure.get("message"),
                "failure_frame": failure.get("frame"),
                "fingerprint": failure.get("fingerprint"),
                "traceback": failure.get("traceback"),
                "failure_class": failure.get("failure_class"),
                "known_failure": r["known_failure"],
                "cpu_failure": r["cpu_failure"],
                "compile_backends": compiled.get("backends"),
                "compile_graphs": compiled.get("graphs"),
                "compile_breaks": compiled.get("graph_breaks"),
                "compile_break_reasons": compiled.get("break_reasons"),
                "compile_recompiles": compiled.get("recompiles"),
                "compile_recompile_reasons": compiled.get("recompile_reasons"),
                "compile_seconds": compiled.get("seconds"),
                "fallback_ops": r["fallback_ops"],
                "details": r["details"],
                "legs": r["legs"],
                "checkpoint_facts": r["checkpoint"],
            }
        )
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(CASE_COLUMNS))
    for column in ("peak_memory_bytes", "compile_graphs", "compile_breaks", "compile_recompiles", "parity_compared",
                   "parity_positions"):
        frame[column] = frame[column].astype("Int64")
    return frame


def frame_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` (index included) as dicts, with missing values as None."""
    flat = frame.reset_index()
    return flat.astype(object).where(flat.notna(), None).to_dict("records")


def case_statuses(cases: pd.DataFrame) -> dict[str, dict[str, str]]:
    """The status of every case that has a record, as :data:`Statuses`."""
    statuses: dict[str, dict[str, str]] = {}
    for model_type, scenario, status in cases[["model_type", "scenario", "status"]].itertuples(index=False):
        statuses.setdefault(model_type, {})[scenario] = status
    return statuses


def diff_runs(previous: Statuses, current: Statuses, order: Sequence[str] = (), *,
              groups: tuple[Mapping[str, str], Mapping[str, str]] = ({}, {})) -> list[Change]:
    """Every case whose status changed between two runs (a case absent from a run counts as ``not-run``), scenarios
    in ``order`` (then any other by name); a scenario the previous run did not have at all makes a
    ``scenario-added`` change, not a new pass. ``groups`` are each run's groups by architecture: a change of an
    architecture both name, in two groups, is a ``moved`` one."""
    before_scenarios = {scenario for statuses in previous.values() for scenario in statuses}
    changes = []
    for model_type in sorted(set(previous) | set(current)):
        before, after = previous.get(model_type, {}), current.get(model_type, {})
        moved = groups[0].get(model_type), groups[1].get(model_type)
        found = set(before) | set(after)
        for scenario in [*(s for s in order if s in found), *sorted(found - set(order))]:
            pair = before.get(scenario, NOT_RUN), after.get(scenario, NOT_RUN)
            if pair[0] != pair[1]:
                changes.append(Change(model_type, scenario, *pair, scenario_added=scenario not in before_scenarios,
                                      groups=(moved[0], moved[1]) if moved[0] and moved[1] and moved[0] != moved[1]
                                      else None))
    return changes


@dataclass(frozen=True)
class _Compiled:
    """What one architecture's cases compiled: the ``compile`` case's graphs and breaks as the table shows them
    (``text``), whether that case passed with no graph break (``fullgraph``) and in one graph (``one_graph``), whether
    it had graph breaks and how many (``breaks``), whether a decoding case recompiled (``decoding_recompiles``), and
    its compiled decoding's graph budget: the graphs its longest generation compiled (``decoding_graphs``) and
    whether they did not grow with the tokens (``bounded_decoding``). None: no such case."""

    text: str | None = None
    fullgraph: bool | None = None
    one_graph: bool | None = None
    graph_breaks: bool | None = None
    breaks: int | None = None
    decoding_recompiles: bool | None = None
    decoding_graphs: int | None = None
    bounded_decoding: bool | None = None


def graphs_per_generation(legs: Any) -> dict[int, int] | None:
    """The graphs each generation of a case's graph budget compiled, by its new tokens (ascending), from its
    :data:`~hf_neuron.vocabulary.records.GRAPH_BUDGET` leg; None where the case has no measured budget."""
    for leg in legs if isinstance(legs, list) else ():
        found = (leg.get("details") or {}).get(GRAPHS_PER_GENERATION) if leg.get("name") == GRAPH_BUDGET else None
        if found:
            return {int(tokens): int(graphs) for tokens, graphs in sorted(found.items(), key=lambda item: int(item[0]))}
    return None


def decoding_budgets(cases: pd.DataFrame, by: str = "model_type") -> dict[str, tuple[int, bool]]:
    """Per architecture (or another column of ``cases``: ``by``) with a measured graph budget, the graphs its longest
    generation compiled (the most of its cases) and whether every case's graphs stayed the same or fewer for more
    tokens."""
    found: dict[str, tuple[int, bool]] = {}
    for key, legs in cases[[by, "legs"]].itertuples(index=False):
        graphs = graphs_per_generation(legs)
        if graphs is None:
            continue
        counts = list(graphs.values())
        most, bounded = found.get(key, (0, True))
        found[key] = max(most, counts[-1]), bounded and counts[-1] <= counts[0]
    return found


def _compile_summary(cases: pd.DataFrame) -> dict[str, _Compiled]:
    """Per architecture, what its cases compiled: the one place the compile figures of the table and the headline
    come from. The ``compile`` scenario's case says graphs and breaks; the decoding scenarios' cases (those whose
    facts say they decode) say whether decoding recompiled, a ``compile`` case's own recompilations do not."""
    decoding = cases[cases["scenario_decodes"].fillna(False).astype(bool) & cases["compile_recompiles"].notna()]
    recompiled = dict(decoding.groupby("model_type")["compile_recompiles"].sum() > 0)
    summary: dict[str, _Compiled] = {}
    for row in cases[cases["scenario"] == COMPILE_SCENARIO].itertuples(index=False):
        graphs, breaks = row.compile_graphs, row.compile_breaks
        if pd.isna(graphs):
            continue
        broken = bool(breaks and breaks > 0)
        plural = "" if (breaks if broken else graphs) == 1 else "s"
        text = f"{breaks} break{plural}" if broken else f"{graphs} graph{plural}"
        fullgraph = bool(row.status == "passed" and not broken)
        summary[row.model_type] = _Compiled(text, fullgraph, fullgraph and graphs == 1, broken,
                                            0 if pd.isna(breaks) else int(breaks))
    for model_type, (graphs, bounded) in decoding_budgets(cases).items():
        summary[model_type] = dataclasses.replace(summary.get(model_type, _Compiled()), decoding_graphs=graphs,
                                                  bounded_decoding=bounded)
    for model_type, again in recompiled.items():
        found = summary.get(model_type, _Compiled())
        shown: str | None = found.text
        if again:
            shown = f"{found.text}, recompiles" if found.text else "recompiles"
        summary[model_type] = dataclasses.replace(found, text=shown, decoding_recompiles=bool(again))
    return summary


def _fallbacks(cases: pd.DataFrame) -> dict[str, dict[str, int] | None]:
    """Per architecture, the operators its cases ran that fall back to the CPU on Trainium (None: not measured)."""
    found: dict[str, dict[str, int] | None] = {}
    for model_type, ops in cases[["model_type", "fallback_ops"]].itertuples(index=False):
        if isinstance(ops, dict):
            merged = found.get(model_type) or {}
            for name, count in ops.items():
                merged[name] = merged.get(name, 0) + int(count)
            found[model_type] = merged
        else:
            found.setdefault(model_type, None)
    return found


def _step_fallbacks(cases: pd.DataFrame) -> dict[str, bool]:
    """Per architecture whose fallbacks were measured, whether a case of a training or decoding scenario ran an
    operator that falls back to the CPU on Trainium (its step runs on the CPU in part)."""
    measured = cases[cases["fallback_ops"].map(lambda ops: isinstance(ops, dict)).astype(bool)]
    steps = measured["scenario_trains"].astype(bool) | measured["scenario_decodes"].fillna(False).astype(bool)
    found = dict.fromkeys(measured["model_type"], False)
    for model_type in measured.loc[steps & measured["fallback_ops"].map(bool), "model_type"]:
        found[model_type] = True
    return found


def fallback_ops(cases: pd.DataFrame, model_type: str) -> dict[str, int] | None:
    """The fallback operators of one architecture's cases, summed (None: not measured)."""
    return _fallbacks(cases[cases["model_type"] == model_type]).get(model_type)


@dataclass(frozen=True)
class ScenarioFallback:
    """One operator a case ran that falls back to the CPU on Trainium: its calls over the case, the steps the case
    ran on the device (:data:`~hf_neuron.vocabulary.records.DEVICE_STEPS`; None where its record does not say), and
    the calls per step (None without steps)."""

    scenario: str
    operator: str
    calls: int
    steps: int | None
    per_step: float | None


def scenario_fallbacks(cases: pd.DataFrame, model_type: str) -> list[ScenarioFallback]:
    """The fallback operators of one architecture, per scenario (in table order) and operator."""
    mine = cases[(cases["model_type"] == model_type) & cases["fallback_ops"].map(bool)]
    order = {name: index for index, name in enumerate(scenario_order(scenarios_of(cases)))}
    found = []
    for scenario, ops, details in mine[["scenario", "fallback_ops", "details"]].itertuples(index=False):
        raw = (details or {}).get(DEVICE_STEPS)
        steps = raw if isinstance(raw, int) and raw > 0 else None
        found += [ScenarioFallback(scenario, name, int(count), steps, None if steps is None else int(count) / steps)
                  for name, count in sorted(ops.items())]
    return sorted(found, key=lambda row: (order.get(row.scenario, len(order)), row.operator))


def scenario_costs(cases: pd.DataFrame, by: Sequence[str] = ("scenario",)) -> pd.DataFrame:
    """What each scenario's cases cost (``by``: the case columns to group by, in the cases' order): ``cases``,
    ``case_seconds`` (their own times summed), ``compile_seconds`` (the device's compilations, summed over the cases
    that measured them; NaN when none did: records before schema 5) and ``compile_measured`` (the cases that
    measured it)."""
    grouped = cases.groupby(list(by), sort=False)
    return pd.DataFrame({
        "cases": grouped.size(),
        "case_seconds": grouped["duration_s"].sum(),
        "compile_seconds": grouped["compile_seconds"].sum(min_count=1),
        "compile_measured": grouped["compile_seconds"].count(),
    })


def scenarios_of(cases: pd.DataFrame, declared: Mapping[str, ScenarioFacts] | None = None) -> dict[str, ScenarioFacts]:
    """The scenarios of a table: the run's declared set (every one, run or not), and every other scenario the cases
    have, with what their records say of it."""
    found: dict[str, ScenarioFacts] = dict(declared or {})
    for scenario, kind, trains in cases[["scenario", "scenario_kind", "scenario_trains"]].itertuples(index=False):
        found.setdefault(scenario, {"kind": kind, "trains": bool(trains)})
    return found


def core_scenarios(scenarios: Mapping[str, ScenarioFacts]) -> list[str]:
    """The core scenarios among ``scenarios``, in table order."""
    return [name for name in scenario_order(scenarios) if scenarios[name]["kind"] == "core"]


def variant_scenarios(scenarios: Mapping[str, ScenarioFacts]) -> list[str]:
    """The variant scenarios among ``scenarios``, in table order."""
    return [name for name in scenario_order(scenarios) if scenarios[name]["kind"] == "variant"]


def matrix_table(
    cases: pd.DataFrame,
    *,
    baseline: Baseline,
    scenarios: Mapping[str, ScenarioFacts] | None = None,
    catalog: Catalog | None = None,
    ranking: Ranking | None = None,
    top_n: int = 100,
    changed: frozenset[str] = frozenset(),
    trainium: Lane | None = None,
    plan: Plan | None = None,
) -> pd.DataFrame:
    """One row per architecture (run or in the catalog), one status column per scenario (``scenarios``: the run's
    declared set; the cases' own by default), its verdict, compile and fallback facts, and the baseline's support in
    the architecture's group.

    ``runs_unmodified`` applies :func:`~hf_neuron.report.status.runs_unmodified` to the core scenarios ``plan``
    (default: those the group has records of) says the run meant to run on the architecture's group, so a run
    that left out a core scenario (a slice), or a group that has no case of it, is judged on the core scenarios it
    meant to run; a case of those without a record is ``missing`` (never a pass).

    Rows are ordered by rank (unranked last), then by name. ``top`` marks the ``top_n`` best-ranked rows;
    ``changed`` names the architectures to flag as changed since the previous run. ``trainium`` fills the
    ``trainium`` column with each architecture's verdict in the real backend's lane (None without that lane).
    """
    entries = catalog.by_type() if catalog else {}
    facts = scenarios_of(cases, scenarios)
    columns = scenario_order(facts)
    variants = variant_scenarios(facts)
    table = cases.pivot(index="model_type", columns="scenario", values="status")
    table = table.reindex(index=sorted(set(table.index) | set(entries)), columns=columns)
    table = table.astype(object).fillna(NOT_RUN)
    table.columns.name = None
    groups = cases.groupby("model_type")["group"].first()
    table["group"] = [groups.get(m) or (entries[m].group if m in entries else "") for m in table.index]
    table["rank"] = pd.array([ranking.ranks.get(m) if ranking else None for m in table.index], dtype="Int64")
    table["has_records"] = table.index.isin(groups.index)
    recorded = cases.groupby("group")["scenario"].agg(set)
    core = {group: (plan or Plan()).core(core_scenarios(facts), group, recorded.get(group, set()))
            for group in set(table["group"])}
    for model_type in table.index[table["has_records"]]:
        for scenario in core[table.at[model_type, "group"]]:
            if table.at[model_type, scenario] == NOT_RUN:
                table.at[model_type, scenario] = MISSING
    statuses = {m: dict(zip(columns, table.loc[m, columns], strict=True)) for m in table.index}
    table["runs_unmodified"] = [runs_unmodified(statuses[m], core[g])
                                for m, g in zip(table.index, table["group"], strict=True)]
    table["verdict"] = [arch_verdict(statuses[m], variants) if has else NOT_RUN
                        for m, has in zip(table.index, table["has_records"], strict=True)]
    table["trainium"] = [trainium.verdicts.get(m, NOT_RUN) if trainium else None for m in table.index]
    compiled = _compile_summary(cases)
    table["compiled"] = [compiled.get(m, _Compiled()).text for m in table.index]
    for column in ("fullgraph", "one_graph", "graph_breaks", "decoding_recompiles", "bounded_decoding"):
        table[column] = pd.array([getattr(compiled.get(m, _Compiled()), column) for m in table.index],
                                 dtype="boolean")
    for column in ("breaks", "decoding_graphs"):
        table[column] = pd.array([getattr(compiled.get(m, _Compiled()), column) for m in table.index], dtype="Int64")
    fallbacks = _fallbacks(cases)
    table["fallbacks"] = pd.array([None if fallbacks.get(m) is None else len(fallbacks[m])  # type: ignore[arg-type]
                                   for m in table.index], dtype="Int64")
    steps = _step_fallbacks(cases)
    table["step_fallbacks"] = pd.array([steps.get(m) for m in table.index], dtype="boolean")
    table = table.sort_values("rank", kind="stable", na_position="last")
    table["top"] = table["rank"].notna().to_numpy() & (pd.RangeIndex(len(table)) < top_n)
    table["baseline_inference"] = [baseline.supports(m, "inference", g) for m, g in zip(table.index, table["group"],
                                                                                          strict=True)]
    table["baseline_training"] = [baseline.supports(m, "training", g) for m, g in zip(table.index, table["group"],
                                                                                        strict=True)]
    table["changed"] = table.index.isin(changed)
    table.index.name = "model_type"
    return table[_LEAD_COLUMNS + columns + _TRAIL_COLUMNS]


def counted_core(table: pd.DataFrame, scenarios: Mapping[str, ScenarioFacts]) -> list[str]:
    """The core scenarios this run ran or meant to run (a core scenario it has neither a record nor a ``missing`` case
    of is not counted)."""
    return [s for s in core_scenarios(scenarios) if s in table.columns and (table[s] != NOT_RUN).any()]


def scenario_columns(table: pd.DataFrame) -> list[str]:
    """The scenario columns of a :func:`matrix_table`, in order."""
    return [c for c in table.columns if c not in _LEAD_COLUMNS and c not in _TRAIL_COLUMNS]


def _verdict_counts(rows: pd.DataFrame) -> dict[str, int]:
    counts = Counter(rows["verdict"])
    return {verdict: counts.get(verdict, 0) for verdict in ARCH_VERDICTS}


def headline(table: pd.DataFrame, baseline: Baseline, *, backend: str, scenarios: Mapping[str, ScenarioFacts],
             cases: pd.DataFrame | None = None, catalog: Catalog | None = None,
             trainium: Lane | None = None, missing_shards: Sequence[str] = ()) -> Headline:
    """The index's headline figures, from :func:`matrix_table` of the ``backend`` lane and its ``scenarios`` (and the
    cases, for the harness gaps; the catalog, for each group's size; the shards of the run that never came back)."""
    run = table[table["has_records"]]
    top = table[table["top"]]
    in_catalog = Counter(entry.group for entry in catalog.entries) if catalog else Counter(table["group"])
    groups = []
    for group in (*GROUPS, *sorted(set(run["group"]) - set(GROUPS))):
        rows = run[run["group"] == group]
        if not len(rows) and not in_catalog.get(group):
            continue
        groups.append(GroupFigures(
            group=group, architectures=len(rows), runs_unmodified=int(rows["runs_unmodified"].sum()),
            verdicts=_verdict_counts(rows), catalog=in_catalog.get(group, 0),
            baseline_inference=baseline.count(group, "inference"), baseline_training=baseline.count(group, "training"),
            baseline_in_run=int(rows["baseline_inference"].sum()),
        ))
    gaps = Counter() if cases is None else Counter(cases.loc[cases["outcome"] == "untested", "gap"].dropna())

    def count(column: str) -> int:
        return int(run[column].fillna(False).sum())

    def measured(column: str) -> int:
        return int(run[column].notna().sum())

    return Headline(
        backend=backend,
        architectures=len(run),
        runs_unmodified=int(run["runs_unmodified"].sum()),
        core=tuple(counted_core(table, scenarios)),
        verdicts=_verdict_counts(run),
        groups=tuple(groups),
        catalog_not_run=len(table) - len(run),
        baseline_name=baseline.name,
        baseline_means=baseline.supported_means,
        top=len(top),
        top_runs_unmodified=int(top["runs_unmodified"].sum()),
        one_graph=count("one_graph"),
        graph_breaks=count("graph_breaks"),
        compiled_architectures=measured("graph_breaks"),
        decoding_recompiles=count("decoding_recompiles"),
        decoding_architectures=measured("decoding_recompiles"),
        bounded_decoding=count("bounded_decoding"),
        budget_architectures=measured("bounded_decoding"),
        with_fallbacks=int((run["fallbacks"].fillna(0) > 0).sum()),
        step_fallbacks=count("step_fallbacks"),
        fallback_architectures=measured("fallbacks"),
        untested_by_gap=dict(gaps.most_common()),
        trainium=trainium,
        all_core=tuple(core_scenarios(scenarios)),
        variants=tuple(variant_scenarios(scenarios)),
        missing=int((run[scenario_columns(table)] == MISSING).to_numpy().sum()),
        missing_shards=tuple(missing_shards),
    )


def scenario_rates(table: pd.DataFrame, baseline: Baseline, scenarios: Mapping[str, ScenarioFacts]) -> pd.DataFrame:
    """Per scenario, over the run's architectures: passed, not applicable, untested, failing on the CPU too, failing
    on neuron and not run; ``applicable`` (every architecture the scenario applies to: the run's, less the not
    applicable and the not run); the pass rate, passed / applicable; and how many of those architectures the
    baseline supports in the scenario's mode (:func:`baseline_mode`). ``scenarios`` says what each scenario is."""
    run = table[table["has_records"]]
    rows = []
    for scenario in scenario_columns(table):
        column = run[scenario]
        counts = {
            "passed": int((column == "passed").sum()),
            "not_applicable": int((column == "skipped").sum()),
            "untested": int((column == "untested").sum()),
            "fails_on_cpu_too": int((column == FAILS_ON_CPU_TOO).sum()),
            "failing": int(column.isin(FAILING).sum()),
            "not_run": int((column == NOT_RUN).sum()),
        }
        applicable = len(run) - counts["not_applicable"] - counts["not_run"]
        facts = scenarios.get(scenario) or scenario_facts(scenario)
        mode = baseline_mode(facts)
        rows.append(
            {
                "scenario": scenario,
                "core": facts["kind"] == "core",
                "variant": facts["kind"] == "variant",
                **counts,
                "applicable": applicable,
                "rate": counts["passed"] / applicable if applicable else float("nan"),
                "baseline_mode": mode,
                "baseline_supported": sum(baseline.supports(m, mode, g)
                                          for m, g in zip(run.index, run["group"], strict=True)),
                "architectures": len(run),
            }
        )
    return pd.DataFrame(rows).set_index("scenario")

