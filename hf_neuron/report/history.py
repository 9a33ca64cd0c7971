"""Past runs as data: one small JSON summary per run, so the trend and the diff survive without old sites.

A summary holds the run's headline counts, per-scenario counts, the hf-neuron version and commit that ran it,
every case's status and each architecture's group (a few tens of kB for a full run). Files are named after the run
id; rebuilding a run replaces its summary. Summaries of schema 1 (before verdicts had to fail where the CPU passes)
are still read: they lack the hf-neuron commit, the verdict counts and the applicable denominators, and their rates
count passed over passed and failing; summaries before schema 4 lack the groups (no architecture is known to have
moved since them); summaries before schema 5 lack what each scenario cost (its case-seconds and compile seconds);
summaries before schema 6 lack the machine the run ran on; summaries before schema 7 lack the run's checkpoint
figures. A summary is written in the oldest schema that holds it: a run without checkpoint cases is written in schema
6, as before there were any (every reader of schema 6 reads it), one with checkpoint cases in schema 7.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hf_neuron.errors import InputError
from hf_neuron.report.checkpoints import CheckpointFigures
from hf_neuron.report.status import STATUS_ALIASES
from hf_neuron.report.tables import Headline, RunInfo, Statuses
from hf_neuron.vocabulary.outcomes import ARCH_VERDICTS
from hf_neuron.vocabulary.records import parse_time

__all__ = ["HISTORY_SCHEMA", "CostTrend", "RunSummary", "cost_trend", "hf_neuron_label", "machine_label",
           "previous_run", "read_history", "summarize", "with_run", "write_summary"]

HISTORY_SCHEMA = 7
#: The schema of a summary without checkpoint figures (schema 7 added them, and nothing else).
_WITHOUT_CHECKPOINTS = 6
#: Schemas this module reads: the current one and those before it (whose missing fields default).
_READABLE = (1, 2, 3, 4, 5, _WITHOUT_CHECKPOINTS, HISTORY_SCHEMA)


@dataclass(frozen=True)
class RunSummary:
    """What later builds need to know about a run."""

    run_id: str
    started_at: str
    finished_at: str
    backend: str
    architectures: int
    runs_unmodified: int
    #: ``{scenario: {"passed": n, "failing": n, "applicable": n}}``
    scenarios: Mapping[str, Mapping[str, int]]
    statuses: Statuses
    #: ``hf_neuron`` version and short commit that ran the run ("0.3.0 (abc1234)"); None in schema 1
    hf_neuron: str | None = None
    profile: str | None = None
    #: architectures per verdict (:data:`~hf_neuron.vocabulary.outcomes.ARCH_VERDICTS`)
    verdicts: Mapping[str, int] = field(default_factory=dict)
    #: ``{model_type: group}`` of the run's architectures (empty before schema 4)
    groups: Mapping[str, str] = field(default_factory=dict)
    #: ``{scenario: {"cases": n, "case_seconds": s, "compile_seconds": s or None}}`` (empty before schema 5;
    #: ``compile_seconds`` None when no case of the scenario measured it)
    costs: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    #: the processor the run ran on (:func:`machine_label`); None before schema 6 and where the records do not say
    machine: str | None = None
    #: the figures of the run's checkpoints (:meth:`~hf_neuron.report.checkpoints.CheckpointFigures.counts`); None
    #: when the run had no checkpoint case (and before schema 7)
    checkpoints: Mapping[str, Any] | None = None

    def rate(self, scenario: str) -> float | None:
        """Pass rate of ``scenario`` (passed / applicable; schema 1: passed / (passed + failing)), or None when
        nothing counted."""
        counts = self.scenarios.get(scenario, {})
        counted = counts.get("applicable", counts.get("passed", 0) + counts.get("failing", 0))
        return counts.get("passed", 0) / counted if counted else None

    @property
    def unmodified_rate(self) -> float | None:
        """Share of the run's architectures that run unmodified."""
        return self.runs_unmodified / self.architectures if self.architectures else None


def summarize(run: RunInfo, head: Headline, rates: pd.DataFrame, statuses: Statuses,
              groups: Mapping[str, str] | None = None, costs: pd.DataFrame | None = None, *,
              checkpoints: CheckpointFigures | None = None) -> RunSummary:
    """The summary of the run being built (``groups``: each architecture's; ``costs``: each scenario's,
    :func:`~hf_neuron.report.tables.scenario_costs`, over the tiny models' cases; ``checkpoints``: the figures of the
    run's checkpoints, None without any)."""
    return RunSummary(
        run_id=run.run_id,
        started_at=run.started_at,
        finished_at=run.finished_at,
        backend=run.backend,
        architectures=head.architectures,
        runs_unmodified=head.runs_unmodified,
        scenarios={s: {"passed": int(row.passed), "failing": int(row.failing), "applicable": int(row.applicable)}
                   for s, row in rates.iterrows()},
        statuses=statuses,
        hf_neuron=hf_neuron_label(run),
        machine=machine_label(run),
        profile=run.env.get("profile") or None,
        verdicts=dict(head.verdicts),
        groups=dict(groups or {}),
        costs={} if costs is None else {
            str(scenario): {"cases": int(row.cases), "case_seconds": round(float(row.case_seconds), 3),
                            "compile_seconds": None if pd.isna(row.compile_seconds)
                            else round(float(row.compile_seconds), 3)}
            for scenario, row in costs.iterrows()},
        checkpoints=None if checkpoints is None else checkpoints.counts(),
    )


@dataclass(frozen=True)
class CostTrend:
    """What each scenario cost over the last runs of the history that say it (oldest first): ``runs`` their ids,
    ``wall_minutes`` each run's first case's start to its last case's end, ``machines`` what each ran on (None where
    its summary does not say), ``rows`` per scenario of the tiny models the case-minutes and the compile minutes of
    each run (None where the run did not run the scenario or did not measure it), and ``checkpoints`` the same of
    each run's checkpoint cases, all scenarios together (empty when no run had any)."""

    runs: Sequence[str]
    wall_minutes: Sequence[float]
    machines: Sequence[str | None]
    rows: Mapping[str, Sequence[tuple[float | None, float | None]]]
    checkpoints: Sequence[tuple[float | None, float | None]] = ()

    @property
    def machines_differ(self) -> bool:
        """Whether the runs did not all run on one known machine: their times then measure machines as well as code."""
        return len(set(self.machines)) > 1 or None in self.machines


def cost_trend(history: Sequence[RunSummary], max_runs: int = 6) -> CostTrend:
    """The :class:`CostTrend` of the last ``max_runs`` runs of ``history`` (oldest first) that recorded costs (of
    their tiny models' cases or of their checkpoints')."""
    costed = [summary for summary in history if summary.costs or summary.checkpoints][-max_runs:]
    scenarios = list(dict.fromkeys(scenario for summary in costed for scenario in summary.costs))

    def minutes(value: float | None) -> float | None:
        return None if value is None else value / 60

    rows = {scenario: [(minutes(summary.costs[scenario]["case_seconds"]) if scenario in summary.costs else None,
                        minutes(summary.costs[scenario]["compile_seconds"]) if scenario in summary.costs else None)
                       for summary in costed]
            for scenario in scenarios}
    wall = [(parse_time(s.finished_at) - parse_time(s.started_at)).total_seconds() / 60 for s in costed]
    checkpoints = [(minutes(s.checkpoints["case_seconds"]), minutes(s.checkpoints["compile_seconds"]))
                   if s.checkpoints else (None, None) for s in costed]
    return CostTrend(runs=[summary.run_id for summary in costed], wall_minutes=wall,
                     machines=[summary.machine for summary in costed], rows=rows,
                     checkpoints=checkpoints if any(s.checkpoints for s in costed) else [])


def hf_neuron_label(run: RunInfo) -> str | None:
    """The hf-neuron version and commit of a run, as ``"0.3.0 (abc1234)"``, or None when unknown."""
    version, commit = run.env.get("hf_neuron"), run.env.get("hf_neuron_commit")
    if not version:
        return None
    return f"{version} ({commit[:12]})" if commit else version


def machine_label(run: RunInfo) -> str | None:
    """The processor a run ran on, as ``"AMD EPYC, 2 CPUs, avx2"`` (its model, the CPUs the run could use, which of
    :data:`~hf_neuron.vocabulary.records.CPU_ISA` it has), or None when the records do not say (before hf-neuron
    recorded it)."""
    env = run.env
    if "cpus" not in env:
        return None
    isa = env.get("cpu_isa")  # "none": none of them; absent or empty: the system did not say
    return ", ".join([env.get("cpu_model") or "unknown processor", f"{env['cpus']} CPUs", *([isa] if isa else [])])


def _file_name(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", run_id) + ".json"


def write_summary(directory: Path, summary: RunSummary) -> Path:
    """Write ``summary`` into ``directory`` (created if needed); return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / _file_name(summary.run_id)
    fields = asdict(summary)
    schema = HISTORY_SCHEMA
    if summary.checkpoints is None:
        del fields["checkpoints"]
        schema = _WITHOUT_CHECKPOINTS
    path.write_text(json.dumps({"schema": schema, **fields}, indent=1, sort_keys=True) + "\n")
    return path


def _read_summary(path: Path) -> RunSummary:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        if data.pop("schema") not in _READABLE:
            raise ValueError(f"schema is not one of {_READABLE}")
        data["statuses"] = {model_type: {scenario: STATUS_ALIASES.get(status, status)
                                         for scenario, status in statuses.items()}
                            for model_type, statuses in data["statuses"].items()}
        if data.get("verdicts"):  # a verdict added since the summary was written (neuron-limitation) counted none
            data["verdicts"] = {verdict: data["verdicts"].get(verdict, 0) for verdict in ARCH_VERDICTS}
        summary = RunSummary(**data)
        parse_time(summary.finished_at)
        if summary.machine is not None and not isinstance(summary.machine, str):
            raise ValueError("machine must be a string or null")
        if summary.checkpoints is not None and not isinstance(summary.checkpoints, dict):
            raise ValueError("checkpoints must be an object or null")
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InputError(f"{path}: not a run summary of schema {' or '.join(map(str, _READABLE))}: {exc}; "
                         "move it out of the history directory or rebuild its run") from None
    return summary


def read_history(directory: Path) -> list[RunSummary]:
    """Every summary in ``directory`` (none if it does not exist), oldest first."""
    summaries = [_read_summary(p) for p in sorted(directory.glob("*.json"))] if directory.is_dir() else []
    return sorted(summaries, key=lambda s: parse_time(s.finished_at))


def with_run(history: Sequence[RunSummary], summary: RunSummary) -> list[RunSummary]:
    """``history`` with ``summary`` in it (replacing an earlier summary of the same run), oldest first."""
    others = [s for s in history if s.run_id != summary.run_id]
    return sorted([*others, summary], key=lambda s: parse_time(s.finished_at))


def previous_run(history: Sequence[RunSummary], run: RunInfo) -> RunSummary | None:
    """The latest other run of ``history`` (oldest first) that finished before ``run``, if any."""
    finished = parse_time(run.finished_at)
    earlier = [s for s in history if s.run_id != run.run_id and parse_time(s.finished_at) < finished]
    return earlier[-1] if earlier else None
