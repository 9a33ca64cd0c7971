"""Build the report site of one run: load records, compute the tables, render, write downloads and history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hf_neuron.compat.baselines import Baseline
from hf_neuron.compat.catalog import Catalog
from hf_neuron.compat.library_bugs import LibraryBugs
from hf_neuron.compat.ranking import Ranking
from hf_neuron.errors import InputError
from hf_neuron.report.chart import trend_chart
from hf_neuron.report.checkpoints import CheckpointView, checkpoint_view
from hf_neuron.report.downloads import write_downloads
from hf_neuron.report.history import (
    cost_trend,
    previous_run,
    read_history,
    summarize,
    with_run,
    write_summary,
)
from hf_neuron.report.load import LoadedRecords, load_records, split_sources
from hf_neuron.report.render import ArchPage, IndexPage, render_site
from hf_neuron.report.tables import (
    Headline,
    Lane,
    RunInfo,
    case_frame,
    case_statuses,
    diff_runs,
    fallback_ops,
    frame_rows,
    headline,
    lane,
    library_bugs_of,
    matrix_table,
    run_info,
    scenario_columns,
    scenario_costs,
    scenario_fallbacks,
    scenario_rates,
    split_lanes,
)
from hf_neuron.report.upstream import load_upstream
from hf_neuron.vocabulary.jsonl import LineProblem
from hf_neuron.vocabulary.records import ConflictPolicy, Record, is_name

__all__ = ["BuildResult", "RunTables", "build_site", "run_tables"]


@dataclass(frozen=True)
class BuildResult:
    """What a build produced."""

    index: Path
    run_id: str
    records: int
    architectures: int
    previous_run_id: str | None
    problems: list[LineProblem] = field(default_factory=list)
    #: checkpoints with records (their cases are not in ``architectures``)
    checkpoints: int = 0
    #: conflicting records replaced by a later one (``on_conflict="latest"``)
    replaced: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunTables:
    """Everything the report computes from one load of records: the primary lane's run (every case of it) and its
    tiny models' cases, their matrix table, headline and pass rates, the statuses of those cases, the Trainium lane
    beside it (None without one), and the lane's checkpoints (None without checkpoint cases)."""

    loaded: LoadedRecords
    run: RunInfo
    cases: pd.DataFrame
    table: pd.DataFrame
    head: Headline
    rates: pd.DataFrame
    statuses: dict[str, dict[str, str]]
    trainium: Lane | None
    checkpoints: CheckpointView | None = None


def run_tables(loaded: LoadedRecords, *, baseline: Baseline, catalog: Catalog | None = None,
               ranking: Ranking | None = None, top_n: int = 100, missing_shards: Sequence[str] = ()) -> RunTables:
    """The report's tables of ``loaded`` (the one place every page and figure of a run is computed); raises
    :class:`InputError` when no valid record is found or several runs of one backend mix.

    The tiny models' cases and the checkpoints' are split here, once (:func:`~hf_neuron.report.load.split_sources`):
    the architecture table, headline, rates and statuses count the tiny models' cases only, so checkpoint cases change
    none of them; the run (its times, environment and patches) is every case's. ``missing_shards``: the shards of
    the run that never came back (the headline says so)."""
    if not loaded.records:
        raise InputError("no valid record")
    backend, records, real_records = _lanes(loaded)
    tiny, checkpoints = split_sources(records)
    real_tiny, real_checkpoints = split_sources(real_records)
    trainium = None
    if real_tiny:
        real_run = run_info(real_records, real_tiny)
        trainium = lane(matrix_table(case_frame(real_tiny), baseline=baseline, scenarios=real_run.scenarios,
                                     plan=real_run.plan), real_run)
    run = run_info(records, tiny)
    cases = case_frame(tiny)
    table = matrix_table(cases, baseline=baseline, scenarios=run.scenarios, catalog=catalog, ranking=ranking,
                         top_n=top_n, trainium=trainium, plan=run.plan)
    head = headline(table, baseline, backend=backend, scenarios=run.scenarios, cases=cases, catalog=catalog,
                    trainium=trainium, missing_shards=missing_shards)
    statuses = case_statuses(cases)
    view = checkpoint_view(checkpoints, tiny_table=table, tiny_cases=cases, tiny_statuses=statuses,
                           tiny_order=scenario_columns(table), ranking=ranking, trainium=real_checkpoints)
    return RunTables(loaded, run, cases, table, head, scenario_rates(table, baseline, run.scenarios), statuses,
                     trainium, view)


def _one_run(backend: str, records: Sequence[Record]) -> None:
    if len(run_ids := sorted({r["run_id"] for r in records})) > 1:
        raise InputError(f"the {backend} records hold {len(run_ids)} runs ({', '.join(run_ids)}): build one run "
                         "at a time (one per backend)")


def _lanes(loaded: LoadedRecords) -> tuple[str, list[Record], list[Record]]:
    """The primary lane (the reference device's, else the real backend's), its records, and the real backend's
    records to show beside it (empty when there are none, or when the real backend is the primary lane)."""
    lanes = split_lanes(loaded.records)
    primary, *others = lanes
    if unknown := sorted(set(others) - {"real"}):
        raise InputError(f"records from backends {', '.join([primary, *others])}: a report shows the reference "
                         f"device and real Trainium side by side, not {', '.join(unknown)}; build those apart")
    for backend, records in lanes.items():
        _one_run(backend, records)
    return primary, lanes[primary], lanes.get("real", []) if primary != "real" else []


def build_site(
    results: Sequence[Path],
    out: Path,
    *,
    baseline: Baseline,
    catalog: Catalog | None = None,
    ranking: Ranking | None = None,
    history_dir: Path | None = None,
    top_n: int = 100,
    on_conflict: ConflictPolicy = "error",
    upstream: Sequence[Path] = (),
    library_bugs: LibraryBugs | None = None,
    missing_shards: Sequence[str] = (),
) -> BuildResult:
    """Build the site of the run whose records are in ``results`` (directories or record files) into ``out``.

    The records of the reference device make the table; records of the real backend (``env.backend == "real"``),
    one run of its own, add a Trainium column beside it. Checkpoint cases make the checkpoint table beside the
    architecture table (:mod:`hf_neuron.report.checkpoints`), its download, figures and history. ``catalog``'s
    architectures without records are listed as not run, and each page shows its catalog entry. With
    ``history_dir``, the previous run's summary there gives the diff, all summaries the trend, and this run's summary
    is added to it. Raises :class:`InputError` when no valid
    record is found, several runs of one backend mix, or records of one case disagree (unless ``on_conflict`` is
    ``"latest"``). With ``upstream`` (directories of ``hf-neuron upstream`` records), the index gets a column and a
    section per library, and each architecture's page a section per library that ran tests on it. Each page shows
    the bugs of ``library_bugs`` (``compat/library_bugs.toml``) that name its architecture, in the library versions
    the run used, as the libraries' bugs, beside the cases they fail. ``missing_shards`` names the shards of the
    run that never came back: the page's banner says the run is incomplete, as it does when a case the run meant to
    run has no record.
    """
    entries = catalog.by_type() if catalog else {}
    if bad := sorted(m for m in entries if not is_name(m)):
        raise InputError(f"catalog model types must be names of letters, digits, '_', '.' or '-': {bad}")
    upstream_view = load_upstream(upstream) if upstream else None
    loaded = load_records(results, on_conflict)
    if not loaded.records:
        raise InputError(f"no valid record in {', '.join(map(str, results))}")
    tables = run_tables(loaded, baseline=baseline, catalog=catalog, ranking=ranking, top_n=top_n,
                        missing_shards=missing_shards)
    run, cases, table, head, rates = tables.run, tables.cases, tables.table, tables.head, tables.rates
    history = read_history(history_dir) if history_dir else []
    previous = previous_run(history, run)
    groups = {model_type: group for model_type, group, recorded in
              table[["group", "has_records"]].itertuples() if recorded and group}
    changes = diff_runs(previous.statuses, tables.statuses, list(run.scenarios),
                        groups=(previous.groups, groups)) if previous else []
    table["changed"] = table.index.isin({change.model_type for change in changes})
    position = {model_type: index for index, model_type in enumerate(table.index)}
    changes.sort(key=lambda change: position.get(change.model_type, len(position)))  # table order: by rank
    view = tables.checkpoints
    summary = summarize(run, head, rates, tables.statuses, groups, scenario_costs(cases),
                        checkpoints=view.figures if view else None)

    out.mkdir(parents=True, exist_ok=True)
    for stale in (out / "arch").glob("*.html"):
        stale.unlink()
    index = IndexPage(
        run=run,
        headline=head,
        rates=rates,
        table=table,
        changes=changes,
        previous=previous,
        chart=trend_chart(with_run(history, summary), head.all_core),
        costs=cost_trend(with_run(history, summary)),
        downloads=write_downloads(out, loaded.records, table, checkpoints=view.table if view else None),
        loaded=loaded,
        ranking_source=ranking.source if ranking else None,
        catalog=catalog,
        upstream=upstream_view,
        checkpoints=view,
    )
    by_arch: dict[str, dict[str, dict[str, Any]]] = {}
    for case in frame_rows(cases):
        by_arch.setdefault(case["model_type"], {})[case["scenario"]] = case
    archs = (
        ArchPage(
            model_type=row["model_type"],
            row=row,
            cases=by_arch.get(row["model_type"], {}),
            previous=previous.statuses.get(row["model_type"], {}) if previous else None,
            catalog_entry=entries.get(row["model_type"]),
            fallback_ops=fallback_ops(cases, row["model_type"]),
            scenario_fallbacks=scenario_fallbacks(cases, row["model_type"]),
            upstream=upstream_view.for_arch(row["model_type"]) if upstream_view else (),
            library_bugs=library_bugs_of(library_bugs, row["model_type"], cases, run.env) if library_bugs else (),
            checkpoints=frame_rows(view.of(row["model_type"])) if view else (),
        )
        for row in frame_rows(table)
    )
    render_site(index, archs, out)
    if history_dir:
        write_summary(history_dir, summary)
    return BuildResult(
        index=out / "index.html",
        run_id=run.run_id,
        records=len(loaded.records),
        architectures=head.architectures,
        previous_run_id=previous.run_id if previous else None,
        problems=loaded.problems,
        replaced=loaded.replaced,
        checkpoints=view.figures.checkpoints if view else 0,
    )
