"""A run's checkpoint cases: one row per checkpoint, the figures over them, and how each agrees with its
architecture's tiny model.

A checkpoint's cases are those of its real-width slice (records of schema 6 that name a ``checkpoint``), split from the
tiny models' by :func:`~hf_neuron.report.load.split_sources`. A checkpoint gets the cells an architecture gets
(:func:`~hf_neuron.report.status.cell_status`) and its verdict by the architecture's rule over its own scenarios
(:func:`~hf_neuron.report.status.arch_verdict`), beside what its records say of it at full size
(:class:`~hf_neuron.vocabulary.records.CheckpointFacts`). Its verdict is compared with its architecture's tiny
verdict in the same run: the two ``agree``, or the checkpoint's is ``worse`` or ``better`` in the order of
:data:`~hf_neuron.vocabulary.outcomes.ARCH_VERDICTS` (best first); an ``untested`` verdict on either side says nothing
to compare, and neither does an architecture the run has no tiny case of. Pure: records in, tables out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from hf_neuron.compat.ranking import Ranking
from hf_neuron.report.status import FAILING, arch_verdict, scenario_order
from hf_neuron.report.tables import case_frame, decoding_budgets, frame_rows, scenarios_of, variant_scenarios
from hf_neuron.vocabulary.outcomes import ARCH_VERDICTS, FAILS_ON_CPU_TOO, NOT_RUN
from hf_neuron.vocabulary.records import CheckpointFacts, Record
from hf_neuron.vocabulary.scenarios import COMPILE_SCENARIO, TINY_COUNTERPARTS, ModelSource, ScenarioFacts

__all__ = ["COST_FAMILIES", "DTYPE_SCENARIO", "PASSING", "TABLE_FAMILY", "CheckpointFigures", "CheckpointView",
           "Disagreement", "checkpoint_figures", "checkpoint_scenarios", "checkpoint_table", "checkpoint_view"]

#: The instance family whose NeuronCores the table shows (records plan each family of
#: ``hf_neuron/checkpoint/instances.toml``; ``hf-neuron check`` prints them all).
TABLE_FAMILY = "trn2"
#: The instance families whose estimated price-performance the table shows (records estimate each family of
#: ``compat/hardware.toml``): Trainium, and a GPU for comparison.
COST_FAMILIES = (TABLE_FAMILY, "h100")
#: The scenario that runs a checkpoint's slice in the 16-bit dtype its config states (bfloat16 or float16).
DTYPE_SCENARIO = "dtype"
#: The verdicts of a checkpoint that passes at real width.
PASSING: frozenset[str] = frozenset({"fully-passes", "passes-where-tested"})

#: Columns of :func:`checkpoint_table` before and after the scenario columns.
_LEAD_COLUMNS = ["model_type", "group", "rank", "verdict", "tiny_verdict", "agreement", "trainium"]
#: Columns of the estimated price-performance, by family of :data:`COST_FAMILIES`.
_COST_COLUMNS = [f"estimated_{figure}_{family}" for family in COST_FAMILIES
                 for figure in ("decode_tokens_per_s", "usd_per_million_output_tokens")]
_TRAIL_COLUMNS = ["stated_dtype", "counted_dtype", "parameters", "active_parameters", "memory_inference",
                  "cores_inference", "cores_full_fine_tune", *_COST_COLUMNS, "quantization_method",
                  "quantization_verdict", "slice_layers", "slice_reductions", "duration_s", "peak_memory_bytes",
                  "breaks", "decoding_graphs", "bounded_decoding"]
_INTEGERS = ("rank", "parameters", "active_parameters", "memory_inference", "cores_inference", "cores_full_fine_tune",
             "slice_layers", "peak_memory_bytes", "breaks", "decoding_graphs")
#: Verdicts that can be compared, best first (an untested verdict says nothing either way).
_COMPARED = tuple(verdict for verdict in ARCH_VERDICTS if verdict != "untested")

Agreement = Literal["agree", "worse", "better"]


def agreement(tiny: str, checkpoint: str) -> Agreement | None:
    """How a checkpoint's verdict compares with its architecture's tiny verdict; None when either is untested or not
    run."""
    if tiny not in _COMPARED or checkpoint not in _COMPARED:
        return None
    if tiny == checkpoint:
        return "agree"
    return "worse" if _COMPARED.index(checkpoint) > _COMPARED.index(tiny) else "better"


def _cause(verdict: str, statuses: Mapping[str, str], order: Sequence[str]) -> str | None:
    """The scenario that makes ``verdict`` what it is, in :func:`~hf_neuron.report.status.arch_verdict`'s precedence:
    the first failing on neuron; ``forward`` for untested and failing on the CPU too; the first untested or failing on
    the CPU too for passing where tested; None for fully passing."""
    causes: Mapping[str, frozenset[str]] = {"fails-on-neuron": FAILING,
                                            "passes-where-tested": frozenset({"untested", FAILS_ON_CPU_TOO})}
    if verdict in ("untested", FAILS_ON_CPU_TOO):
        return "forward"
    return next((s for s in order if statuses.get(s, NOT_RUN) in causes.get(verdict, ())), None)


def checkpoint_scenarios(cases: pd.DataFrame) -> list[str]:
    """The scenario columns of the checkpoints' table: the scenarios their cases ran, in table order."""
    return scenario_order(scenarios_of(cases))


def tiny_scope(scenarios: Collection[str]) -> set[str]:
    """The tiny-model scenarios that ask what the checkpoint ``scenarios`` ask."""
    return {TINY_COUNTERPARTS.get(scenario, scenario) for scenario in scenarios}


def tiny_verdicts_within(tiny_table: pd.DataFrame, scenarios: Mapping[str, ScenarioFacts]) -> dict[str, str]:
    """Each architecture's verdict in ``tiny_table`` (an architecture table's rows) over the checkpoints' scenarios
    only (``scenarios``: :func:`~hf_neuron.report.tables.scenarios_of` their cases), a checkpoint-only one by its
    tiny counterpart (:data:`~hf_neuron.vocabulary.scenarios.TINY_COUNTERPARTS`: ``dtype`` by ``bf16``): a checkpoint
    is compared with its tiny model on what both lanes ran, not lowered or raised by a scenario the checkpoint lane
    never runs (TRL's, ``ddp``, ``save``)."""
    scope = tiny_scope(scenarios)
    columns = [scenario for scenario in tiny_table.columns if scenario in scope]
    variants = tiny_scope(variant_scenarios(scenarios))
    return {str(model_type): arch_verdict(dict(row), variants)
            for model_type, row in tiny_table[columns].iterrows()}


def _facts(found: Sequence[CheckpointFacts]) -> CheckpointFacts:
    """The facts of one checkpoint's cases: the fullest (a record whose worker died before planning has only the
    id)."""
    return max(found, key=len)


def checkpoint_table(cases: pd.DataFrame, *, tiny_verdicts: Mapping[str, str] | None = None,
                     ranking: Ranking | None = None, trainium: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per checkpoint of ``cases`` (the checkpoints' :func:`~hf_neuron.report.tables.case_frame`), indexed by
    its id: its architecture (``model_type``), group and the architecture's ``rank``; its ``verdict`` and its
    architecture's ``tiny_verdict`` (``tiny_verdicts``: by architecture, those with tiny cases) and their
    ``agreement``; its verdict on Trainium (``trainium``: by checkpoint; None without that lane); one status column per
    scenario; then its facts: the dtype it states (``stated_dtype``) and the one memory is ``counted_dtype`` in,
    full-size ``parameters`` and ``active_parameters`` per token, ``memory_inference`` bytes, the
    :data:`TABLE_FAMILY` NeuronCores for inference and for full fine-tuning, the estimated decode tokens a second and
    US dollars a million output tokens of each of :data:`COST_FAMILIES` (``estimated_<figure>_<family>``; None where
    the records have no estimate or the family no price), its quantization's method and verdict, the
    slice's layers and what was cut to fit the budget, and its cases' time (summed) and peak memory (the largest);
    what the slice compiled: the ``compile`` case's graph ``breaks`` and its compiled decoding's graph budget (the
    graphs of its longest generation, ``decoding_graphs``, and whether they did not grow, ``bounded_decoding``).
    Rows by rank (unranked last), then id (case aside)."""
    columns = checkpoint_scenarios(cases)
    variants = variant_scenarios(scenarios_of(cases))
    rows = []
    budgets = decoding_budgets(cases, by="checkpoint")
    for checkpoint, mine in cases.groupby("checkpoint", sort=True):
        statuses = dict.fromkeys(columns, NOT_RUN) | dict(zip(mine["scenario"], mine["status"], strict=True))
        facts = _facts(list(mine["checkpoint_facts"]))
        model_type = str(mine["model_type"].iloc[0])
        verdict = arch_verdict(statuses, variants)
        tiny = (tiny_verdicts or {}).get(model_type, NOT_RUN)
        cores = facts.get("neuron_cores", {}).get(TABLE_FAMILY, {})
        cost: Mapping[str, Any] = facts.get("cost") or {}
        cut: Mapping[str, Any] = facts.get("slice") or {}
        quantized: Mapping[str, Any] = facts.get("quantization") or {}
        rows.append({
            "checkpoint": checkpoint, "model_type": model_type, "group": str(mine["group"].iloc[0]),
            "rank": ranking.ranks.get(model_type) if ranking else None, "verdict": verdict, "tiny_verdict": tiny,
            "agreement": agreement(tiny, verdict),
            "trainium": None if trainium is None else trainium.get(str(checkpoint), NOT_RUN),
            **statuses,
            "stated_dtype": facts.get("dtype"), "counted_dtype": facts.get("weights_dtype"),
            "parameters": facts.get("parameters"),
            "active_parameters": facts.get("active_parameters"),
            "memory_inference": facts.get("memory", {}).get("inference"),
            "cores_inference": cores.get("inference"), "cores_full_fine_tune": cores.get("full_fine_tune"),
            **{f"estimated_{figure}_{family}": (cost.get(family) or {}).get(figure) for family in COST_FAMILIES
               for figure in ("decode_tokens_per_s", "usd_per_million_output_tokens")},
            "slice_layers": cut.get("layers"), "slice_reductions": "; ".join(cut.get("reductions", [])),
            "quantization_method": quantized.get("method"), "quantization_verdict": quantized.get("verdict"),
            "duration_s": round(float(mine["duration_s"].sum()), 3),
            "peak_memory_bytes": mine["peak_memory_bytes"].max(),
            "breaks": mine.loc[mine["scenario"] == COMPILE_SCENARIO, "compile_breaks"].max(),
            "decoding_graphs": budgets[checkpoint][0] if checkpoint in budgets else None,
            "bounded_decoding": budgets[checkpoint][1] if checkpoint in budgets else None,
        })
    table = pd.DataFrame(rows, columns=["checkpoint", *_LEAD_COLUMNS, *columns, *_TRAIL_COLUMNS])
    for column in _INTEGERS:
        table[column] = pd.array([None if pd.isna(v) else int(v) for v in table[column]], dtype="Int64")
    table = table.set_index("checkpoint")
    table = table.loc[sorted(table.index, key=str.casefold)]
    return table.sort_values("rank", kind="stable", na_position="last")


@dataclass(frozen=True)
class Disagreement:
    """A checkpoint whose verdict differs from its architecture's tiny verdict, and why: the ``scenario`` that makes
    the worse of the two verdicts what it is, its ``status`` and ``failure_class`` — the checkpoint's case when the
    checkpoint is ``worse`` (``side`` ``checkpoints``), the tiny model's when it is ``better`` (``side`` ``tiny``)."""

    checkpoint: str
    model_type: str
    tiny_verdict: str
    verdict: str
    kind: Agreement
    side: ModelSource
    scenario: str | None
    status: str | None
    failure_class: str | None


@dataclass(frozen=True)
class CheckpointFigures:
    """The figures over a run's checkpoints: how many have records, their verdicts, how many pass at real width
    (:data:`PASSING`), pass their :data:`DTYPE_SCENARIO` case of those it applies to, and agree with their
    architectures' tiny verdicts (of those ``compared``); how many are quantized and not runnable as published, over
    the memory budget (a case untested with gap ``memory-budget``); what their cases cost; and the disagreements."""

    checkpoints: int
    verdicts: Mapping[str, int]
    passing: int
    dtype_passed: int
    dtype_applicable: int
    compared: int
    agree: int
    worse: int
    better: int
    quantized: int
    not_runnable: int
    over_budget: int
    cases: int
    case_seconds: float
    #: the device's compilations, summed over the cases that measured them (None: none did)
    compile_seconds: float | None
    disagreements: tuple[Disagreement, ...] = ()

    @property
    def not_compared(self) -> int:
        return self.checkpoints - self.compared

    def counts(self) -> dict[str, Any]:
        """The figures a run's history summary keeps (the disagreements aside)."""
        return {"checkpoints": self.checkpoints, "verdicts": dict(self.verdicts), "passing": self.passing,
                "dtype_passed": self.dtype_passed, "dtype_applicable": self.dtype_applicable,
                "compared": self.compared, "agree": self.agree, "worse": self.worse, "better": self.better,
                "quantized": self.quantized, "not_runnable": self.not_runnable, "over_budget": self.over_budget,
                "cases": self.cases, "case_seconds": round(self.case_seconds, 3),
                "compile_seconds": None if self.compile_seconds is None else round(self.compile_seconds, 3)}


def checkpoint_figures(table: pd.DataFrame, cases: pd.DataFrame, *, tiny_statuses: Mapping[str, Mapping[str, str]],
                       tiny_cases: pd.DataFrame, tiny_order: Sequence[str]) -> CheckpointFigures:
    """The :class:`CheckpointFigures` of a :func:`checkpoint_table` and its ``cases``; ``tiny_statuses`` (by
    architecture), ``tiny_cases`` and ``tiny_order`` (the architecture table's scenario columns) explain a checkpoint
    that is better than its tiny model."""
    order = [c for c in table.columns if c not in _LEAD_COLUMNS and c not in _TRAIL_COLUMNS]
    dtype = table[DTYPE_SCENARIO] if DTYPE_SCENARIO in table.columns else pd.Series(NOT_RUN, index=table.index)
    found = Counter(table["agreement"].dropna())
    disagreements = []
    for checkpoint, row in table[table["agreement"].isin(("worse", "better"))].iterrows():
        if row["agreement"] == "worse":
            side: ModelSource = "checkpoints"
            statuses: Mapping[str, str] = {scenario: row[scenario] for scenario in order}
            scenario = _cause(row["verdict"], statuses, order)
            mine = cases[(cases["checkpoint"] == checkpoint) & (cases["scenario"] == scenario)]
        else:
            side = "tiny"
            statuses = tiny_statuses.get(row["model_type"], {})
            scenario = _cause(row["tiny_verdict"], statuses, tiny_order)
            mine = tiny_cases[(tiny_cases["model_type"] == row["model_type"]) & (tiny_cases["scenario"] == scenario)]
        failure_class = mine["failure_class"].dropna()
        disagreements.append(Disagreement(
            str(checkpoint), row["model_type"], row["tiny_verdict"], row["verdict"], row["agreement"], side, scenario,
            statuses.get(scenario, NOT_RUN) if scenario else None,
            str(failure_class.iloc[0]) if len(failure_class) else None))
    quantization = table["quantization_verdict"].dropna()
    verdicts = Counter(table["verdict"])
    return CheckpointFigures(
        checkpoints=len(table),
        verdicts={verdict: verdicts.get(verdict, 0) for verdict in ARCH_VERDICTS},
        passing=int(table["verdict"].isin(PASSING).sum()),
        dtype_passed=int((dtype == "passed").sum()),
        dtype_applicable=int((~dtype.isin(("skipped", NOT_RUN))).sum()),
        compared=sum(found.values()), agree=found.get("agree", 0), worse=found.get("worse", 0),
        better=found.get("better", 0),
        quantized=len(quantization), not_runnable=int((quantization == "not-runnable").sum()),
        over_budget=int(cases.loc[cases["gap"] == "memory-budget", "checkpoint"].nunique()),
        cases=len(cases), case_seconds=float(cases["duration_s"].sum()),
        compile_seconds=float(cases["compile_seconds"].sum()) if cases["compile_seconds"].notna().any() else None,
        disagreements=tuple(disagreements),
    )


@dataclass(frozen=True)
class CheckpointView:
    """Everything the report shows of a run's checkpoints: their cases, their table, its scenario columns, the
    figures."""

    cases: pd.DataFrame
    table: pd.DataFrame
    scenarios: tuple[str, ...]
    figures: CheckpointFigures

    def of(self, model_type: str) -> pd.DataFrame:
        """The rows of one architecture's checkpoints."""
        return self.table[self.table["model_type"] == model_type]

    def by_checkpoint(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Each checkpoint's cases by scenario, as :func:`~hf_neuron.report.tables.frame_rows` gives them."""
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for case in frame_rows(self.cases):
            found.setdefault(case["checkpoint"], {})[case["scenario"]] = case
        return found


def checkpoint_view(records: Sequence[Record], *, tiny_table: pd.DataFrame, tiny_cases: pd.DataFrame,
                    tiny_statuses: Mapping[str, Mapping[str, str]], tiny_order: Sequence[str],
                    ranking: Ranking | None = None, trainium: Sequence[Record] = ()) -> CheckpointView | None:
    """The :class:`CheckpointView` of a lane's checkpoint ``records`` (None without any), beside its architecture
    table (``tiny_table``: :func:`~hf_neuron.report.tables.matrix_table` of its tiny ``tiny_cases``, whose
    ``tiny_statuses`` and scenario columns ``tiny_order`` explain a disagreement; each tiny verdict is taken over the
    checkpoints' scenarios, :func:`tiny_verdicts_within`), and with each checkpoint's verdict in the real backend's
    lane when it has checkpoint records (``trainium``)."""
    if not records:
        return None
    cases = case_frame(records)
    scenarios = scenarios_of(cases)
    run = tiny_table[tiny_table["has_records"]]
    real = dict(checkpoint_table(case_frame(trainium))["verdict"]) if trainium else None
    table = checkpoint_table(cases, tiny_verdicts=tiny_verdicts_within(run, scenarios), ranking=ranking,
                             trainium=real)
    scope = tiny_scope(scenarios)
    figures = checkpoint_figures(table, cases, tiny_statuses=tiny_statuses, tiny_cases=tiny_cases,
                                 tiny_order=[scenario for scenario in tiny_order if scenario in scope])
    return CheckpointView(cases, table, tuple(checkpoint_scenarios(cases)), figures)
