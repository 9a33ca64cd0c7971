"""A run's figures as a Markdown page: what it ran on, how many architectures run unmodified, by group and by
scenario, every case by outcome, the harness gaps, the failures by class, the Trainium signals, what it cost, and its
checkpoints (how many pass at real width and in their own 16-bit dtype, and where they disagree with their
architectures' tiny models) — each figure with its denominator, computed from the records by the report's own
tables (:func:`~.site.run_tables`), so no figure about a run is typed by hand. ``scripts/update_docs.py`` writes the
sample run's page with it (``docs/sample-run.md``) and checks, in the tests, that the page and the records agree.
Pure: tables in, text out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from hf_neuron.report.checkpoints import CheckpointFigures
from hf_neuron.report.history import RunSummary, machine_label
from hf_neuron.report.site import RunTables
from hf_neuron.report.tables import scenario_costs
from hf_neuron.vocabulary.gaps import GAP_MEANINGS
from hf_neuron.vocabulary.outcomes import ARCH_VERDICTS, OUTCOMES, label
from hf_neuron.vocabulary.records import parse_time

__all__ = ["run_page"]


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}"


def _list(counts: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{name} {n:,}" for name, n in counts) or "none"


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)]


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f}"


def _run(tables: RunTables) -> list[str]:
    run, env = tables.run, tables.run.env
    started, finished = parse_time(run.started_at), parse_time(run.finished_at)
    wall = (finished - started).total_seconds()
    commits = sorted({c for c in env.get("hf_neuron_commit", "").split(", ") if c})
    versions = ", ".join(f"{name} {env[name]}" for name in ("torch", "transformers", "diffusers", "accelerate", "peft")
                         if env.get(name))
    view = tables.checkpoints
    tiny_seconds = float(tables.cases["duration_s"].sum())
    checkpoint_seconds = view.figures.case_seconds if view else 0.0
    of_checkpoints = f" ({_hours(checkpoint_seconds)} of them the checkpoints' cases)" if view else ""
    return [
        f"- Run `{run.run_id}`, from {run.started_at} to {run.finished_at}: {wall / 60:.1f} minutes from the first "
        f"case's start to the last case's end; the cases' own times sum to "
        f"{_hours(tiny_seconds + checkpoint_seconds)} case-hours{of_checkpoints}.",
        f"- Backend `{run.backend}` {env.get('backend_version', '')}, profile `{env.get('profile') or 'none'}`, "
        f"{env.get('device_count') or '?'} devices, host {env.get('host') or '?'} "
        f"({machine_label(run) or 'processor not recorded'}); {versions}.",
        f"- hf-neuron {env.get('hf_neuron', '?')} at {len(commits)} commit(s) ({', '.join(commits) or 'unknown'}): "
        + ("one commit ran every case." if len(commits) == 1 else
           "the run was resumed with changed code, so its records do not come from one version."),
        f"- {len(run.patches)} hf-neuron patches applied ({len(run.reference_gap_patches)} of them work around a gap "
        "of the reference device itself).",
    ]


def _headline(tables: RunTables, previous: RunSummary | None) -> list[str]:
    head = tables.head
    verdicts = ", ".join(f"{head.verdicts[v]:,} {label(v)}" for v in ARCH_VERDICTS)
    lines = [
        f"**{head.runs_unmodified:,} of {head.architectures:,} architectures run unmodified** (`forward` passed and "
        f"every core scenario of its group — {', '.join(head.core)} — passed or does not apply), on the "
        f"`{head.backend}` backend. By verdict: {verdicts}.",
    ]
    if head.catalog_not_run:
        lines.append(f"{head.catalog_not_run:,} architectures of the catalog have no record in this run.")
    shards = f"; shards {', '.join(head.missing_shards)} never came back" if head.missing_shards else ""
    lines.append(f"**The run is incomplete**: {head.missing:,} core cases it meant to run have no record{shards}."
                 if head.incomplete else f"{head.missing:,} core cases the run meant to run have no record: it is "
                 "complete.")
    if previous is not None:
        lines.append(f"The run before it in the history (`{previous.run_id}`) had {previous.runs_unmodified:,} of "
                     f"{previous.architectures:,}.")
    return lines


def _groups(tables: RunTables) -> list[str]:
    head = tables.head
    rows = [(f"`{g.group}`", g.architectures, g.runs_unmodified, g.catalog,
             f"{g.baseline_inference} / {g.baseline_training}") for g in head.groups]
    lines = _table(("group", "architectures with records", "run unmodified", "in the catalog",
                    f"{head.baseline_name} supports (inference / training)"), rows)
    if head.top:
        lines += ["", f"Of the top {head.top} architectures by `compat/ranking.csv`, {head.top_runs_unmodified} run "
                      "unmodified."]
    lines += ["", f"{head.baseline_name}'s *supported* means: {head.baseline_means}. Here an architecture is "
                  "supported when its tiny random model passes the scenarios on this backend."]
    return lines


def _cases(tables: RunTables) -> list[str]:
    cases = tables.cases
    outcomes = Counter(cases["outcome"])
    what = "tiny-model cases (the checkpoints' are under Checkpoints)" if tables.checkpoints else "cases"
    lines = [f"{len(cases):,} {what}: " + _list((o, outcomes[o]) for o in OUTCOMES if outcomes[o]) + "."]
    gaps = tables.head.untested_by_gap
    if gaps:
        lines.append(f"Untested (harness gaps to close), {sum(gaps.values()):,}: "
                     + _list((f"{GAP_MEANINGS.get(gap, gap)} (`{gap}`)", n) for gap, n in gaps.items()) + ".")
    on_neuron = cases[cases["verdict"] == "fails-on-neuron"]
    classes = Counter(on_neuron["failure_class"].fillna("none"))
    known = int((on_neuron["outcome"] == "known-failure").sum())
    lines.append(f"{len(on_neuron):,} cases fail on neuron and not the same way on the CPU ({known:,} of them known "
                 f"failures, `compat/known_failures.toml`), by failure class: {_list(classes.most_common())}.")
    too = int((cases["verdict"] == "fails-on-cpu-too").sum())
    lines.append(f"{too:,} cases fail the same way on the CPU, which are not held against neuron.")
    return lines


def _signals(tables: RunTables) -> list[str]:
    head = tables.head
    return [f"Of the {head.compiled_architectures:,} architectures whose `compile` case compiled, {head.one_graph:,} "
            f"pass in one graph and {head.graph_breaks:,} have graph breaks.",
            f"Of the {head.decoding_architectures:,} architectures whose decoding compiled, "
            f"{head.decoding_recompiles:,} recompile while decoding.",
            f"Of the {head.budget_architectures:,} architectures whose compiled decoding's graphs were counted for two "
            f"lengths (`generate_compiled`'s graph budget), {head.bounded_decoding:,} decode in a bounded number of "
            "graphs (no more for more new tokens)." if head.budget_architectures else
            "No record of this run has `generate_compiled`'s graph budget (compiled decoding's graphs counted for two "
            "lengths): whether decoding compiles a bounded number of graphs was not measured.",
            f"Of the {head.fallback_architectures:,} architectures whose operators were logged, "
            f"{head.with_fallbacks:,} run operators expected to fall back to the CPU on Trainium, "
            f"{head.step_fallbacks:,} of them in a training or decoding step."]


def _scenarios(tables: RunTables) -> list[str]:
    costs = scenario_costs(tables.cases)
    rows = []
    for scenario, rate in tables.rates.iterrows():
        share = "—" if pd.isna(rate["rate"]) else f"{rate['rate']:.0%}"
        kind = "core" if rate["core"] else "variant" if rate["variant"] else "extra"
        cost = costs.loc[scenario] if scenario in costs.index else None
        compiling = "—" if cost is None or pd.isna(cost["compile_seconds"]) else _hours(float(cost["compile_seconds"]))
        rows.append((f"`{scenario}`", kind, rate["passed"], rate["applicable"], share, rate["not_applicable"],
                     rate["untested"], rate["fails_on_cpu_too"], rate["failing"], rate["not_run"],
                     _hours(0.0 if cost is None else float(cost["case_seconds"])), compiling))
    return _table(("scenario", "kind", "passed", "applicable", "pass rate", "not applicable", "untested",
                   "fails on the CPU too", "failing", "not run", "case-hours", "of them compiling"), rows)


def _costs_by_group(tables: RunTables) -> list[str]:
    cases = tables.cases
    by_group = cases.groupby("group")["duration_s"].agg(["count", "sum"])
    return _table(("group", "cases", "case-hours"),
                  ((f"`{group}`", int(row["count"]), _hours(float(row["sum"]))) for group, row in by_group.iterrows()))


def _checkpoint_figures(figures: CheckpointFigures, backend: str) -> list[str]:
    verdicts = ", ".join(f"{figures.verdicts[v]:,} {label(v)}" for v in ARCH_VERDICTS)
    lines = [
        f"**{figures.passing:,} of {figures.checkpoints:,} checkpoints pass at real width** (verdict "
        f"{label('fully-passes')} or {label('passes-where-tested')}: the architecture's rule over the checkpoint's own "
        f"scenarios), on the `{backend}` backend. By verdict: {verdicts}.",
        f"{figures.dtype_passed:,} of {figures.dtype_applicable:,} pass in the 16-bit dtype their config states "
        "(bfloat16 or float16: their `dtype` case passed; of those it applies to, the others state float32 or no "
        "dtype).",
        f"Against their architecture's tiny model in this run, of {figures.compared:,} compared: {figures.agree:,} "
        f"agree, {figures.worse:,} checkpoint worse, {figures.better:,} checkpoint better; {figures.not_compared:,} "
        "not compared (untested on either side, or no tiny case of the architecture in this run).",
        f"{figures.quantized:,} quantized ({figures.not_runnable:,} of them not runnable on neuron as published; "
        f"their slices run dequantized); {figures.over_budget:,} with cases over the run's memory budget (untested, "
        "gap `memory-budget`: a slice too big to train here still runs the cases that do not train when they fit).",
    ]
    if figures.disagreements:
        rows = [(f"`{d.checkpoint}`", f"`{d.model_type}`", label(d.tiny_verdict), label(d.verdict),
                 f"checkpoint {d.kind}",
                 f"{'the checkpoint' if d.side == 'checkpoints' else 'the tiny model'}'s `{d.scenario}`: "
                 f"{label(d.status or '')}" if d.scenario else "—",
                 f"`{d.failure_class}`" if d.failure_class else "—")
                for d in figures.disagreements]
        lines += ["", *_table(("checkpoint", "architecture", "tiny model", "checkpoint", "disagreement",
                               "the scenario that decides", "failure class"), rows)]
    return lines


def _checkpoints(tables: RunTables) -> list[str]:
    view = tables.checkpoints
    if view is None:
        return ["This run has no checkpoint case, so it gives no figure about checkpoints: how many pass at real "
                "width and in their own 16-bit dtype, and how they agree with their architectures' tiny models, are "
                "given here for a run that has them (`hf-neuron matrix run --models checkpoints` runs the catalogued "
                "checkpoints' real-width slices)."]
    return _checkpoint_figures(view.figures, tables.run.backend)


def run_page(tables: RunTables, *, title: str, source: str, previous: RunSummary | None = None,
             notes: Mapping[str, str] | None = None) -> str:
    """The Markdown page of one run's figures; ``source`` says where the records are, ``previous`` is the run before
    it in the history (None: none), ``notes`` adds a paragraph under a section's heading."""
    notes = notes or {}
    sections = [
        ("The run", _run(tables)),
        ("Headline", _headline(tables, previous)),
        ("By group", _groups(tables)),
        ("Cases", _cases(tables)),
        ("Trainium signals", _signals(tables)),
        ("By scenario", _scenarios(tables)),
        ("Cost by group", _costs_by_group(tables)),
        ("Checkpoints", _checkpoints(tables)),
    ]
    lines = [f"# {title}", "",
             f"Generated by `python scripts/update_docs.py` from {source}; a test fails when this page and the records "
             "disagree, so do not edit it.", ""]
    for heading, body in sections:
        lines += [f"## {heading}", ""]
        if heading in notes:
            lines += [notes[heading], ""]
        lines += [*body, ""]
    return "\n".join(lines).rstrip() + "\n"
