"""The report's numbers, computed with pandas from records: cases, the matrix, headline, pass rates, run diff."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from hf_neuron.compat.baselines import Baseline, Mode
from hf_neuron.compat.catalog import Catalog
from hf_neuron.compat.ranking import Ranking
from hf_neuron.matrix.records import (
    CORE_SCENARIOS,
    TRAINING_SCENARIOS,
    Record,
    parse_time,
)
from hf_neuron.report.status import (
    FAILING,
    NEUTRAL,
    NOT_RUN,
    cell_status,
    runs_unmodified,
    scenario_order,
)

__all__ = [
    "Change",
    "Headline",
    "RunInfo",
    "Statuses",
    "baseline_mode",
    "case_frame",
    "case_statuses",
    "counted_core",
    "diff_runs",
    "frame_rows",
    "headline",
    "matrix_table",
    "run_info",
    "scenario_columns",
    "scenario_rates",
]

#: ``{model_type: {scenario: status}}`` for the cases that have a record.
Statuses = Mapping[str, Mapping[str, str]]

#: Columns of :func:`matrix_table` before and after the scenario columns.
_LEAD_COLUMNS = ["rank", "top", "group", "has_records", "runs_unmodified"]
_TRAIL_COLUMNS = ["baseline_inference", "baseline_training", "changed"]


@dataclass(frozen=True)
class RunInfo:
    """Which run the records come from, when, and on what (each env key maps to its distinct values, sorted and
    joined: several values mean the shards ran on different hosts or versions)."""

    run_id: str
    started_at: str
    finished_at: str
    backend: str
    env: Mapping[str, str]


@dataclass(frozen=True)
class Headline:
    """The figures at the top of the index."""

    architectures: int
    runs_unmodified: int
    #: the core scenarios counted: those of :data:`~hf_neuron.matrix.records.CORE_SCENARIOS` the run ran
    core: tuple[str, ...]
    catalog_not_run: int
    baseline_name: str
    baseline_inference: int
    baseline_training: int
    baseline_in_run: int
    top: int
    top_runs_unmodified: int


@dataclass(frozen=True)
class Change:
    """A case whose status differs from the previous run's."""

    model_type: str
    scenario: str
    before: str
    after: str

    @property
    def kind(self) -> str:
        """``regression`` (passed before, not now), ``new-pass`` (passes now, did not before) or ``other``."""
        if self.before == "passed":
            return "regression"
        return "new-pass" if self.after == "passed" else "other"


def baseline_mode(scenario: str) -> Mode:
    """Which baseline support ``scenario`` is compared with: training for the scenarios that train
    (:data:`~hf_neuron.matrix.records.TRAINING_SCENARIOS`), inference for the others."""
    return "training" if scenario in TRAINING_SCENARIOS else "inference"


def run_info(records: Sequence[Record]) -> RunInfo:
    """The run the records belong to; they must all share one ``run_id`` (check that first)."""
    started = min(records, key=lambda r: parse_time(r["started_at"]))["started_at"]
    finished = max(records, key=lambda r: parse_time(r["finished_at"]))["finished_at"]
    values: dict[str, set[str]] = {}
    for record in records:
        for key, value in record["env"].items():
            found = values.setdefault(key, set())
            if value is not None:
                found.add(str(value))
    env = {key: ", ".join(sorted(found)) for key, found in values.items()}
    return RunInfo(records[0]["run_id"], started, finished, env["backend"], env)


def case_frame(records: Sequence[Record]) -> pd.DataFrame:
    """One row per case, with the record's fields flattened and the cell ``status`` added."""
    rows: list[dict[str, Any]] = []
    for r in records:
        parity: Mapping[str, Any] = r["parity"] or {}
        failure: Mapping[str, Any] = r["failure"] or {}
        rows.append(
            {
                "model_type": r["model_type"],
                "group": r["group"],
                "scenario": r["scenario"],
                "outcome": r["outcome"],
                "cpu_outcome": r["cpu_outcome"],
                "status": cell_status(r["outcome"], r["cpu_outcome"]),
                "reason": r["reason"],
                "duration_s": r["duration_s"],
                "peak_memory_bytes": r["peak_memory_bytes"],
                "parity_metric": parity.get("metric"),
                "parity_value": parity.get("value"),
                "parity_tolerance": parity.get("tolerance"),
                "failure_type": failure.get("type"),
                "failure_message": failure.get("message"),
                "failure_frame": failure.get("frame"),
                "fingerprint": failure.get("fingerprint"),
                "traceback": failure.get("traceback"),
                "failure_class": failure.get("failure_class"),
                "known_failure": r["known_failure"],
                "cpu_failure": r.get("cpu_failure"),
            }
        )
    frame = pd.DataFrame(rows)
    frame["peak_memory_bytes"] = frame["peak_memory_bytes"].astype("Int64")
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


def diff_runs(previous: Statuses, current: Statuses) -> list[Change]:
    """Every case whose status changed between two runs (a case absent from a run counts as ``not-run``)."""
    changes = []
    for model_type in sorted(set(previous) | set(current)):
        before, after = previous.get(model_type, {}), current.get(model_type, {})
        for scenario in scenario_order(set(before) | set(after)):
            pair = before.get(scenario, NOT_RUN), after.get(scenario, NOT_RUN)
            if pair[0] != pair[1]:
                changes.append(Change(model_type, scenario, *pair))
    return changes


def matrix_table(
    cases: pd.DataFrame,
    *,
    baseline: Baseline,
    catalog: Catalog | None = None,
    ranking: Ranking | None = None,
    top_n: int = 100,
    changed: frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """One row per architecture (run or in the catalog), one status column per scenario, and the baseline columns.

    ``runs_unmodified`` applies :func:`~hf_neuron.report.status.runs_unmodified` to the :func:`counted_core`
    scenarios of the architecture's group, so a run that left out a core scenario entirely (a slice), or a group the
    scenario does not apply to (diffusion backbones have no ``load`` or ``train``), is judged on the core scenarios
    that group ran.

    Rows are ordered by rank (unranked last), then by name. ``top`` marks the ``top_n`` best-ranked rows;
    ``changed`` names the architectures to flag as changed since the previous run.
    """
    entries = catalog.by_type() if catalog else {}
    scenarios = scenario_order(cases["scenario"])
    table = cases.pivot(index="model_type", columns="scenario", values="status")
    table = table.reindex(index=sorted(set(table.index) | set(entries)), columns=scenarios)
    table = table.astype(object).fillna(NOT_RUN)
    table.columns.name = None
    groups = cases.groupby("model_type")["group"].first()
    table["group"] = [groups.get(m) or (entries[m].group if m in entries else "") for m in table.index]
    table["rank"] = pd.array([ranking.ranks.get(m) if ranking else None for m in table.index], dtype="Int64")
    table["has_records"] = table.index.isin(groups.index)
    core = {group: counted_core(rows) for group, rows in table.groupby("group")}
    table["runs_unmodified"] = [
        runs_unmodified(table.loc[m, core[g]]) for m, g in zip(table.index, table["group"], strict=True)
    ]
    table = table.sort_values("rank", kind="stable", na_position="last")
    table["top"] = table["rank"].notna().to_numpy() & (pd.RangeIndex(len(table)) < top_n)
    table["baseline_inference"] = table.index.isin(baseline.inference)
    table["baseline_training"] = table.index.isin(baseline.training)
    table["changed"] = table.index.isin(changed)
    table.index.name = "model_type"
    return table[_LEAD_COLUMNS + scenarios + _TRAIL_COLUMNS]


def counted_core(table: pd.DataFrame) -> list[str]:
    """The core scenarios this run ran (a core scenario with no record at all is left out of the verdict)."""
    return [s for s in CORE_SCENARIOS if s in table.columns and (table[s] != NOT_RUN).any()]


def scenario_columns(table: pd.DataFrame) -> list[str]:
    """The scenario columns of a :func:`matrix_table`, in order."""
    return [c for c in table.columns if c not in _LEAD_COLUMNS and c not in _TRAIL_COLUMNS]


def headline(table: pd.DataFrame, baseline: Baseline) -> Headline:
    """The index's headline figures, from :func:`matrix_table`."""
    run = table[table["has_records"]]
    top = table[table["top"]]
    return Headline(
        architectures=len(run),
        runs_unmodified=int(run["runs_unmodified"].sum()),
        core=tuple(counted_core(table)),
        catalog_not_run=len(table) - len(run),
        baseline_name=baseline.name,
        baseline_inference=len(baseline.inference),
        baseline_training=len(baseline.training),
        baseline_in_run=int(run["baseline_inference"].sum()),
        top=len(top),
        top_runs_unmodified=int(top["runs_unmodified"].sum()),
    )


def scenario_rates(table: pd.DataFrame, baseline: Baseline) -> pd.DataFrame:
    """Per scenario: passed, failing, excused (neutral) and not-run counts over the run's architectures, the pass
    rate (passed / (passed + failing)), and how many of those architectures the baseline supports in the scenario's
    mode (:func:`baseline_mode`)."""
    run = table[table["has_records"]]
    rows = []
    for scenario in scenario_columns(table):
        column = run[scenario]
        passed, failing = int((column == "passed").sum()), int(column.isin(FAILING).sum())
        rows.append(
            {
                "scenario": scenario,
                "core": scenario in CORE_SCENARIOS,
                "passed": passed,
                "failing": failing,
                "excused": int(column.isin(NEUTRAL).sum()),
                "not_run": int((column == NOT_RUN).sum()),
                "rate": passed / (passed + failing) if passed + failing else float("nan"),
                "baseline_mode": baseline_mode(scenario),
                "baseline_supported": sum(baseline.supports(m, baseline_mode(scenario)) for m in run.index),
                "architectures": len(run),
            }
        )
    return pd.DataFrame(rows).set_index("scenario")
