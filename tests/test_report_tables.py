"""The report's numbers from fixture records: statuses, the matrix, headline, pass rates, the run diff."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from _helpers_matrix import a_record
from _helpers_report import a_catalog

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.compat.ranking import Ranking
from hf_neuron.report.load import load_records
from hf_neuron.report.status import arch_verdict, cell_status, runs_unmodified, scenario_order
from hf_neuron.report.tables import (
    Change,
    ScenarioFallback,
    case_frame,
    case_statuses,
    core_scenarios,
    diff_runs,
    fallback_ops,
    graphs_per_generation,
    headline,
    matrix_table,
    run_info,
    scenario_fallbacks,
    scenario_rates,
    variant_scenarios,
)
from hf_neuron.vocabulary.failures import failure
from hf_neuron.vocabulary.records import GRAPH_BUDGET, GRAPHS_PER_GENERATION, case_verdict, upgrade
from hf_neuron.vocabulary.scenarios import SCHEMA_2_SCENARIOS

RECORDS = Path(__file__).parent / "fixtures" / "records"
#: The fixture runs' scenarios (their records are of schema 1: the built-in set of the time).
FACTS = dict(SCHEMA_2_SCENARIOS)
SCENARIOS = scenario_order(FACTS)
CORE_SCENARIOS = tuple(core_scenarios(FACTS))
BASELINE = load_baseline(Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json")


def _cases(run: str) -> pd.DataFrame:
    return case_frame(load_records([RECORDS / run]).records)


@pytest.fixture(scope="module")
def cases() -> pd.DataFrame:
    return _cases("run-2")


@pytest.fixture(scope="module")
def table(cases: pd.DataFrame) -> pd.DataFrame:
    return matrix_table(cases, baseline=BASELINE, scenarios=FACTS)


def test_a_failure_counts_against_neuron_unless_the_cpu_fails_the_same_way() -> None:
    failure = {"type": "E", "message": "m", "frame": "f", "fingerprint": "E|m|f", "failure_class": "other"}
    other = {**failure, "fingerprint": "E|n|f"}
    assert cell_status(upgrade(a_record("a::forward", outcome="error", cpu_outcome="error", failure=failure,
                                cpu_failure=failure))) == "fails-on-cpu-too"
    assert cell_status(upgrade(a_record("a::forward", outcome="error", cpu_outcome="error", failure=failure,
                                cpu_failure=other))) == "error"
    assert cell_status(upgrade(a_record("a::forward", outcome="failed", cpu_outcome="passed",
                                        failure=failure))) == "failed"
    assert cell_status(upgrade(a_record("a::forward", outcome="error", failure=failure))) == "error"
    assert cell_status(upgrade(a_record("a::forward", outcome="untested", gap="inputs"))) == "untested"
    assert cell_status(upgrade(a_record("a::forward", outcome="passed", cpu_outcome="error"))) == "passed"


def test_a_failure_at_a_limitation_of_the_device_is_not_the_models() -> None:
    """AnyFlowFARTransformer3DModel's forward, which hard-wires torch's flex attention: known or not, the case is a
    limitation of neuron (with its fix), not a failure on neuron; any other failure still is."""
    flex = failure("ValueError", "FlexAttention is only supported on CUDA, CPU, HPU, or MPS devices. Found input "
                   "tensors on neuron device.", "flex_attention.py:_validate_device", outcome="error")
    assert flex["failure_class"] == "flex-attention"
    for outcome in ("error", "known-failure"):
        record = upgrade(a_record("a::forward", outcome=outcome, failure=flex, cpu_verdict="not-rerun"))
        assert (case_verdict(record), cell_status(record)) == ("neuron-limitation", "neuron-limitation")
    other = failure("ValueError", "something else", "m.py:f", outcome="error")
    assert cell_status(upgrade(a_record("a::forward", outcome="error", failure=other))) == "error"


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ({"load": "passed", "forward": "passed", "generate": "passed", "train": "passed"}, True),
        ({"load": "passed", "forward": "passed", "generate": "skipped", "train": "passed"}, True),
        # forward must pass: load alone, or a forward that fails on the CPU too, is not a model that ran
        ({"load": "passed", "forward": "fails-on-cpu-too", "generate": "fails-on-cpu-too",
          "train": "fails-on-cpu-too"}, False),
        ({"load": "passed", "forward": "untested", "generate": "untested", "train": "untested"}, False),
        ({"load": "skipped", "forward": "skipped", "generate": "skipped", "train": "skipped"}, False),
        # every other core scenario passes or does not apply: a CPU failure or a harness gap is not a pass
        ({"load": "passed", "forward": "passed", "generate": "passed", "train": "fails-on-cpu-too"}, False),
        ({"load": "passed", "forward": "passed", "generate": "untested", "train": "passed"}, False),
        ({"load": "passed", "forward": "passed", "generate": "passed", "train": "known-failure"}, False),
        ({"load": "passed", "forward": "passed", "generate": "passed"}, False),
        # a limitation of the device, with its fix, is not running unmodified either
        ({"load": "passed", "forward": "neuron-limitation", "generate": "passed", "train": "passed"}, False),
    ],
)
def test_runs_unmodified(statuses: dict[str, str], expected: bool) -> None:
    assert runs_unmodified(statuses, CORE_SCENARIOS) is expected


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ({"forward": "passed", "generate": "skipped", "train": "passed"}, "fully-passes"),
        ({"forward": "passed", "train": "untested"}, "passes-where-tested"),
        ({"forward": "passed", "train": "fails-on-cpu-too"}, "passes-where-tested"),
        ({"load": "passed", "forward": "untested"}, "untested"),
        ({"load": "passed", "forward": "fails-on-cpu-too", "train": "fails-on-cpu-too"}, "fails-on-cpu-too"),
        ({"forward": "passed", "compile": "timeout"}, "fails-on-neuron"),
        # a core case stopped by a limitation of the device (flex attention) is not the model's failure...
        ({"load": "passed", "forward": "neuron-limitation", "train": "neuron-limitation"}, "neuron-limitation"),
        ({"forward": "passed", "generate": "neuron-limitation"}, "neuron-limitation"),
        # ...but it does not hide another failure on neuron, or a harness gap
        ({"forward": "neuron-limitation", "save": "error"}, "fails-on-neuron"),
        ({"forward": "untested", "train": "neuron-limitation"}, "untested"),
        ({"forward": "untested", "train": "known-failure"}, "fails-on-neuron"),
        # a variant scenario is reported on its own, not in the verdict
        ({"forward": "passed", "flex_attention": "error"}, "fully-passes"),
    ],
)
def test_arch_verdict(statuses: dict[str, str], expected: str) -> None:
    assert arch_verdict(statuses, variant_scenarios(FACTS)) == expected


def test_matrix_has_one_row_per_architecture_and_a_status_per_scenario(table: pd.DataFrame) -> None:
    assert sorted(table.index) == ["bert", "falcon", "gpt2", "llama", "mistral", "phi3", "qwen3", "xglm"]
    assert table.loc["falcon", "forward"] == "failed"  # the CPU fails too, but differently
    assert table.loc["falcon", "generate"] == "fails-on-cpu-too"  # the CPU fails the same way
    assert table.loc["qwen3", "lora"] == "known-failure"
    assert table.loc["gpt2", "lora"] == "untested"
    assert table.loc["phi3", "lora"] == "not-run"
    assert table.loc["bert", "group"] == "encoder"
    assert table["runs_unmodified"].to_dict() == {
        "bert": True, "falcon": False, "gpt2": True, "llama": True, "mistral": False, "phi3": False, "qwen3": True,
        "xglm": False,  # load passed, the rest fails the same way on the CPU: the model never ran
    }
    assert table["verdict"].to_dict() == {
        "bert": "fully-passes", "falcon": "fails-on-neuron", "gpt2": "fails-on-neuron", "llama": "fully-passes",
        "mistral": "fails-on-neuron", "phi3": "fails-on-neuron", "qwen3": "fails-on-neuron",
        "xglm": "fails-on-cpu-too",
    }


def test_compile_and_fallback_columns(table: pd.DataFrame, cases: pd.DataFrame) -> None:
    assert table["compiled"].dropna().to_dict() == {"gpt2": "recompiles", "llama": "1 graph", "mistral": "2 breaks"}
    assert table["fullgraph"].dropna().to_dict() == {"llama": True, "mistral": False}
    assert table.loc["llama", "fallbacks"] == 1
    assert table.loc["bert", "fallbacks"] == 0
    assert pd.isna(table.loc["phi3", "fallbacks"])  # no op log: not measured, not "none"
    assert fallback_ops(cases, "llama") == {"aten::nonzero": 2}
    assert fallback_ops(cases, "phi3") is None


def _compiled(graphs: int, breaks: int = 0, recompiles: int = 0) -> dict[str, object]:
    return {"backends": ["neuron"], "graphs": graphs, "graph_breaks": breaks, "break_reasons": [],
            "recompiles": recompiles, "recompile_reasons": []}


def test_fallbacks_per_scenario_divide_calls_by_the_steps_the_case_ran() -> None:
    records = [a_record("a::forward", fallback_ops={"aten::x": 1}),
               a_record("a::train", fallback_ops={"aten::x": 8, "aten::b": 4}, details={"device_steps": 4}),
               a_record("a::generate", fallback_ops={"aten::x": 6}, details={"device_steps": "six"}),
               a_record("a::lora", fallback_ops={}), a_record("b::train", fallback_ops={"aten::q": 1})]
    cases = case_frame([upgrade(record) for record in records])
    assert scenario_fallbacks(cases, "a") == [
        ScenarioFallback("forward", "aten::x", 1, None, None),
        ScenarioFallback("generate", "aten::x", 6, None, None),  # a step count that is not a count: not divided
        ScenarioFallback("train", "aten::b", 4, 4, 1.0),
        ScenarioFallback("train", "aten::x", 8, 4, 2.0)]
    assert scenario_fallbacks(cases, "c") == []


def _signal_records() -> list[dict[str, object]]:
    """Records in which each headline figure of compilation and fallbacks has a value of its own."""
    def case(case_id: str, outcome: str = "passed", compiled: object = None, fallback_ops: object = None
             ) -> dict[str, object]:
        return a_record(case_id, schema=2, outcome=outcome, gap=None, cpu_verdict=None, compile=compiled,
                        fallback_ops=fallback_ops, details=None,
                        failure=None if outcome == "passed" else {"type": "E", "message": "m", "frame": "f",
                                                                   "fingerprint": "E|m|f", "failure_class": "other"})
    compile_cases = {"a": _compiled(1), "b": _compiled(1), "c": _compiled(1), "e": _compiled(4),
                     "f": _compiled(1, recompiles=5)}  # f recompiles in its compile case only: not decoding
    records = [case(f"{m}::compile", compiled=facts) for m, facts in compile_cases.items()]
    records.append(case("d::compile", "failed", compiled=_compiled(2, breaks=1)))
    decoding = {"a": 2, "b": 1, "c": 0, "d": 0, "e": 0, "g": 0, "h": 0}  # a and b recompile while decoding
    records += [case(f"{m}::generate", compiled=_compiled(1, recompiles=n)) for m, n in decoding.items()]
    fallbacks = {"a::train": {"aten::x": 3}, "b::bf16": {"aten::y": 1}, "c::forward": {"aten::z": 2}, "d::forward": {},
                 "e::train": {}, "f::load": {"aten::w": 1}, "g::ddp": {"aten::q": 2}, "h::lora": {}}
    records += [case(case_id, fallback_ops=ops) for case_id, ops in fallbacks.items()]
    return [upgrade(record) for record in records]


def test_each_signal_is_computed_once_from_the_cases_that_measure_it() -> None:
    cases = case_frame(_signal_records())
    table = matrix_table(cases, baseline=BASELINE, scenarios=FACTS)
    head = headline(table, BASELINE, backend="reference", scenarios=FACTS, cases=cases)
    assert (head.one_graph, head.graph_breaks, head.compiled_architectures) == (4, 1, 6)
    assert (head.decoding_recompiles, head.decoding_architectures) == (2, 7)
    assert (head.with_fallbacks, head.step_fallbacks, head.fallback_architectures) == (5, 3, 8)
    assert table["compiled"].dropna().to_dict() == {
        "a": "1 graph, recompiles", "b": "1 graph, recompiles", "c": "1 graph", "d": "1 break", "e": "4 graphs",
        "f": "1 graph"}
    assert table.index[table["one_graph"].fillna(False)].tolist() == ["a", "b", "c", "f"], \
        "one graph however its decoding went; not a compile case that failed"
    assert table.index[table["step_fallbacks"].fillna(False)].tolist() == ["a", "b", "g"]


def test_graphs_per_generation_and_breaks_are_columns_and_the_bounded_decoders_a_signal() -> None:
    """The input that breaks the budget's signal: a decoder whose longer generation compiled more graphs (a graph a
    token) counts as measured but not bounded, and its column says it grows."""
    def budget(graphs: dict[str, int] | None, outcome: str = "passed") -> list[dict[str, object]]:
        legs: list[dict[str, object]] = [{"name": "compiled decoding", "outcome": "passed", "reason": None,
                                          "parity": None, "details": {"graphs": 1}}]
        if graphs is not None:
            legs.append({"name": GRAPH_BUDGET, "outcome": outcome, "reason": None, "parity": None,
                         "details": {GRAPHS_PER_GENERATION: graphs, "recompiles": 0, "recompile_reasons": []}})
        return legs

    legs = {"a": budget({"6": 1, "10": 1}), "b": budget({"10": 8, "6": 5}, "failed"), "c": budget(None)}
    records = [{**upgrade(a_record(f"{m}::generate_compiled", schema=2, gap=None, cpu_verdict=None,
                                   compile=_compiled(1), fallback_ops=None, details=None)), "legs": found}
               for m, found in legs.items()]
    records += [upgrade(a_record("a::compile", schema=2, gap=None, cpu_verdict=None, compile=_compiled(3, breaks=2),
                                 fallback_ops=None, details=None))]
    cases = case_frame(records)
    table = matrix_table(cases, baseline=BASELINE, scenarios=FACTS)
    head = headline(table, BASELINE, backend="reference", scenarios=FACTS, cases=cases)
    assert (head.bounded_decoding, head.budget_architectures) == (1, 2)
    assert table["decoding_graphs"].dropna().to_dict() == {"a": 1, "b": 8}  # the longer generation's, in token order
    assert table["bounded_decoding"].dropna().to_dict() == {"a": True, "b": False}
    assert table["breaks"].dropna().to_dict() == {"a": 2}
    assert graphs_per_generation(records[1]["legs"]) == {6: 5, 10: 8}


def test_baseline_columns(table: pd.DataFrame) -> None:
    assert table.index[table["baseline_inference"]].tolist() == ["llama", "phi3", "qwen3"]
    assert table.index[table["baseline_training"]].tolist() == ["llama", "qwen3"]


def test_headline_figures(table: pd.DataFrame, cases: pd.DataFrame) -> None:
    head = headline(table, BASELINE, backend="reference", scenarios=FACTS, cases=cases)
    assert (head.backend, head.runs_unmodified, head.architectures) == ("reference", 4, 8)
    assert head.verdicts == {"fully-passes": 2, "passes-where-tested": 0, "untested": 0, "fails-on-cpu-too": 1,
                             "neuron-limitation": 0, "fails-on-neuron": 5}
    assert head.baseline_name == "Optimum Neuron 0.4.5"
    assert "Inf2/Trn1" in head.baseline_means
    assert head.catalog_not_run == 0
    assert head.core == CORE_SCENARIOS
    assert head.top == 0  # no ranking: no top-N view
    assert (head.one_graph, head.graph_breaks, head.decoding_recompiles, head.with_fallbacks) == (1, 1, 1, 1)
    assert head.untested_by_gap == {"lora-targets": 1}
    assert head.trainium is None


def test_the_baseline_is_compared_group_by_group(table: pd.DataFrame) -> None:
    groups = {g.group: g for g in headline(table, BASELINE, backend="reference", scenarios=FACTS).groups}
    assert list(groups) == ["decoder", "encoder"]  # catalog groups first, then the others the run has
    decoder = groups["decoder"]
    assert (decoder.architectures, decoder.runs_unmodified, decoder.baseline_in_run) == (7, 3, 3)
    assert decoder.baseline_inference == BASELINE.count("decoder", "inference")
    assert (groups["encoder"].baseline_inference, groups["encoder"].baseline_training) == (0, 0)


def test_pass_rates_per_scenario(table: pd.DataFrame) -> None:
    rates = scenario_rates(table, BASELINE, FACTS)
    assert rates.index.tolist() == SCENARIOS
    counts = rates[["passed", "not_applicable", "untested", "fails_on_cpu_too", "failing", "not_run", "applicable",
                    "baseline_supported"]]
    assert counts.loc["forward"].tolist() == [5, 0, 0, 1, 2, 0, 8, 3]
    assert counts.loc["generate"].tolist() == [3, 1, 0, 2, 2, 0, 7, 3]
    assert counts.loc["train"].tolist() == [6, 0, 0, 1, 1, 0, 8, 2]
    assert counts.loc["lora"].tolist() == [1, 0, 1, 0, 1, 5, 3, 2]
    # the denominator is every architecture the scenario applies to: a CPU failure or a gap stays in it
    assert rates.loc["forward", "rate"] == pytest.approx(5 / 8)
    assert rates.loc["generate", "rate"] == pytest.approx(3 / 7)
    assert rates.loc["lora", "rate"] == pytest.approx(1 / 3)
    assert rates["core"].tolist() == [s in CORE_SCENARIOS for s in SCENARIOS]
    assert rates.loc["train", "baseline_mode"] == "training"


def test_a_scenario_nobody_counted_has_no_rate(cases: pd.DataFrame) -> None:
    only_bert = matrix_table(cases[cases["model_type"] == "bert"], baseline=BASELINE, scenarios=FACTS)
    assert math.isnan(scenario_rates(only_bert, BASELINE, FACTS).loc["generate", "rate"])


def test_ranking_orders_rows_and_marks_the_top_n(cases: pd.DataFrame) -> None:
    ranking = Ranking({"qwen3": 1, "gpt2": 2, "llama": 3, "mistral": 4}, "hub downloads")
    table = matrix_table(cases, baseline=BASELINE, scenarios=FACTS, ranking=ranking, top_n=3)
    assert table.index.tolist() == ["qwen3", "gpt2", "llama", "mistral", "bert", "falcon", "phi3", "xglm"]
    assert table.index[table["top"]].tolist() == ["qwen3", "gpt2", "llama"]
    head = headline(table, BASELINE, backend="reference", scenarios=FACTS)
    assert (head.top_runs_unmodified, head.top) == (3, 3)


def test_catalog_adds_groups_and_not_run_rows(cases: pd.DataFrame) -> None:
    catalog = a_catalog(llama="encoder-decoder", gemma3="decoder")  # llama's records say decoder: records win
    table = matrix_table(cases, baseline=BASELINE, scenarios=FACTS, catalog=catalog)
    assert table.loc["llama", "group"] == "decoder"
    assert table.loc["gemma3", ["group", "has_records", "runs_unmodified"]].tolist() == ["decoder", False, False]
    assert (table.loc["gemma3", list(SCENARIOS)] == "not-run").all()
    head = headline(table, BASELINE, backend="reference", scenarios=FACTS, catalog=catalog)
    assert (head.runs_unmodified, head.architectures, head.catalog_not_run) == (4, 8, 1)
    decoder = next(g for g in head.groups if g.group == "decoder")
    assert (decoder.catalog, decoder.architectures) == (1, 7)  # the catalog's count is its own: gemma3 only


def test_diff_between_two_runs() -> None:
    changes = diff_runs(case_statuses(_cases("run-1")), case_statuses(_cases("run-2")), SCENARIOS)
    by_kind = {kind: {(c.model_type, c.scenario, c.before, c.after) for c in changes if c.kind == kind}
               for kind in ("regression", "new-pass", "other")}
    assert by_kind["regression"] == {
        ("gpt2", "compile", "passed", "crashed"), ("mistral", "generate", "passed", "error")}
    assert by_kind["new-pass"] == {
        ("bert", "train", "error", "passed"),
        ("falcon", "load", "not-run", "passed"),
        ("falcon", "train", "not-run", "passed"),
        ("phi3", "load", "error", "passed"),
        ("mistral", "compile", "not-run", "passed"),
        ("xglm", "load", "not-run", "passed"),
    }
    assert by_kind["other"] == {
        ("falcon", "forward", "not-run", "failed"), ("falcon", "generate", "not-run", "fails-on-cpu-too"),
        ("gpt2", "lora", "not-run", "untested"), ("xglm", "forward", "not-run", "fails-on-cpu-too"),
        ("xglm", "generate", "not-run", "fails-on-cpu-too"), ("xglm", "train", "not-run", "fails-on-cpu-too")}


def test_a_scenario_the_previous_run_did_not_have_is_its_own_kind_of_change() -> None:
    before = {"llama": {"forward": "passed"}, "gpt2": {"forward": "error"}}
    after = {"llama": {"forward": "passed", "ddp": "passed"}, "gpt2": {"forward": "passed", "ddp": "error"}}
    assert diff_runs(before, after, SCENARIOS) == [
        Change("gpt2", "forward", "error", "passed"),
        Change("gpt2", "ddp", "not-run", "error", scenario_added=True),
        Change("llama", "ddp", "not-run", "passed", scenario_added=True),
    ]
    assert [c.kind for c in diff_runs(before, after, SCENARIOS)] == ["new-pass", "scenario-added", "scenario-added"]


def test_an_architecture_that_moved_to_another_group_is_neither_a_regression_nor_a_new_pass() -> None:
    """whisper was a decoder (its decoder alone) before the audio group claimed it: its cases test another thing."""
    before = {"whisper": {"forward": "passed", "generate": "failed"}, "llama": {"forward": "passed"}}
    after = {"whisper": {"forward": "failed", "generate": "passed"}, "llama": {"forward": "error"}}
    groups = ({"whisper": "decoder", "llama": "decoder"}, {"whisper": "encoder-decoder", "llama": "decoder"})
    changes = diff_runs(before, after, SCENARIOS, groups=groups)
    assert [(c.model_type, c.scenario, c.kind, c.groups) for c in changes] == [
        ("llama", "forward", "regression", None),
        ("whisper", "forward", "moved", ("decoder", "encoder-decoder")),
        ("whisper", "generate", "moved", ("decoder", "encoder-decoder")),
    ]
    unknown = diff_runs(before, after, SCENARIOS, groups=({}, groups[1]))  # a summary from before groups were kept
    assert [c.kind for c in unknown] == ["regression", "regression", "new-pass"]


def test_changed_rows_are_flagged(cases: pd.DataFrame) -> None:
    table = matrix_table(cases, baseline=BASELINE, scenarios=FACTS, changed=frozenset({"gpt2"}))
    assert table.index[table["changed"]].tolist() == ["gpt2"]


def test_run_info_joins_distinct_env_values() -> None:
    records = load_records([RECORDS / "run-2"]).records
    records[0] = {**records[0], "env": {**records[0]["env"], "host": "ci-runner-2"}}
    info = run_info(records)
    assert info.run_id == "nightly-2026-11-28"
    assert info.backend == "reference"
    assert info.env["host"] == "ci-runner-1, ci-runner-2"
    assert (info.started_at, info.finished_at) == ("2026-11-28T02:00:00+00:00", "2026-11-28T02:39:30+00:00")


def test_a_slice_without_some_core_scenarios_is_judged_on_the_core_it_ran(cases: pd.DataFrame) -> None:
    load_forward = cases[cases["scenario"].isin(["load", "forward"])]
    table = matrix_table(load_forward, baseline=BASELINE, scenarios=FACTS)
    head = headline(table, BASELINE, backend="reference", scenarios=FACTS)
    assert head.core == ("load", "forward")
    assert table.index[table["runs_unmodified"]].tolist() == ["bert", "gpt2", "llama", "mistral", "qwen3"]


def test_a_group_is_judged_on_the_core_scenarios_it_runs(cases: pd.DataFrame) -> None:
    # A diffusion backbone has forward and generate only; a decoder missing train (which its group ran: the run meant
    # to run it) is missing, not proven to run.
    llama = cases[cases["model_type"] == "llama"]
    backbone = llama[llama["scenario"].isin(["forward", "generate"])]
    backbone = backbone.assign(model_type="UNet2DModel", group="diffusion")
    short = llama[llama["scenario"] != "train"].assign(model_type="llama_no_train")
    table = matrix_table(pd.concat([cases, backbone, short]), baseline=BASELINE)
    assert table.loc["UNet2DModel", ["load", "train", "runs_unmodified"]].tolist() == ["not-run", "not-run", True]
    assert table.loc["llama_no_train", ["train", "runs_unmodified"]].tolist() == ["missing", False]
    assert headline(table, BASELINE, backend="reference", scenarios=FACTS).core == CORE_SCENARIOS


def test_env_values_that_are_null_are_left_out() -> None:
    records = load_records([RECORDS / "run-2"]).records
    records = [{**r, "env": {**r["env"], "backend_version": None}} for r in records]
    assert run_info(records).env["backend_version"] == ""


def test_the_run_page_says_what_the_records_say() -> None:
    """The figures page is computed from the records: a record that changes changes the page."""
    from hf_neuron.report.figures import run_page
    from hf_neuron.report.load import LoadedRecords
    from hf_neuron.report.site import run_tables

    records = load_records([RECORDS / "run-2"]).records
    page = run_page(run_tables(LoadedRecords(records), baseline=BASELINE), title="t", source="s")
    assert "**4 of 8 architectures run unmodified**" in page
    assert "| `forward` | core | 5 | 8 | 62% |" in page
    llama_forward = next(i for i, r in enumerate(records) if r["case_id"] == "llama::forward")
    records[llama_forward] = {**records[llama_forward], "outcome": "failed", "cpu_outcome": "passed",
                              "cpu_verdict": "passes"}
    changed = run_page(run_tables(LoadedRecords(records), baseline=BASELINE), title="t", source="s")
    assert "**3 of 8 architectures run unmodified**" in changed and "| `forward` | core | 4 | 8 | 50% |" in changed


def _run_of(records: list[dict[str, object]]) -> tuple[pd.DataFrame, object]:
    """The matrix table and headline of ``records`` (upgraded), as the site computes them."""
    upgraded = [upgrade(record) for record in records]
    run = run_info(upgraded)
    cases = case_frame(upgraded)
    table = matrix_table(cases, baseline=BASELINE, scenarios=run.scenarios, plan=run.plan)
    return table, headline(table, BASELINE, backend="reference", scenarios=run.scenarios, cases=cases)


def _declared(selected: tuple[str, ...]) -> dict[str, object]:
    """An env block whose scenario set is the built-in one of schema 2, ``selected`` chosen, on every group."""
    return {"backend": "reference", "scenarios": [
        {"name": name, **facts, "selected": name in selected, "groups": ["decoder", "diffusion"]}
        for name, facts in SCHEMA_2_SCENARIOS.items()]}


def test_a_core_case_the_run_meant_to_run_without_a_record_is_missing() -> None:
    """`matrix run --arch llama --scenario load forward generate train`, its generate and train records lost (a shard
    that never came back): the old table filled them with not-run and called llama fully-passes and running
    unmodified; now they are missing and llama is neither."""
    env = _declared(("load", "forward", "generate", "train"))
    table, head = _run_of([a_record(f"llama::{s}", env=env) for s in ("load", "forward")])
    assert (table.loc["llama", "generate"], table.loc["llama", "train"]) == ("missing", "missing")
    assert table.loc["llama", "verdict"] == "passes-where-tested"
    assert not table.loc["llama", "runs_unmodified"]
    assert (head.runs_unmodified, head.verdicts["fully-passes"], head.missing, head.incomplete) == (0, 0, 2, True)
    # a scenario the selection did not choose is not run, and a group that has no case of one is not held to it
    env = _declared(("load", "forward"))
    table, head = _run_of([a_record(f"llama::{s}", env=env) for s in ("load", "forward")])
    assert (table.loc["llama", "generate"], table.loc["llama", "verdict"]) == ("not-run", "fully-passes")
    assert table.loc["llama", "runs_unmodified"] and not head.incomplete
    env = _declared(("load", "forward", "generate", "train"))
    env["scenarios"] = [{**s, "groups": ["diffusion"]} if s["name"] == "train" else s  # type: ignore[union-attr]
                        for s in env["scenarios"]]  # type: ignore[union-attr]
    table, head = _run_of([a_record(f"llama::{s}", env=env) for s in ("load", "forward", "generate")])
    assert (table.loc["llama", "train"], table.loc["llama", "verdict"], head.missing) == ("not-run", "fully-passes", 0)


def test_records_that_do_not_say_what_the_run_chose_miss_what_the_run_ran_elsewhere() -> None:
    """Records before the scenario set said what the selection chose: a core scenario the run has a record of, on
    any architecture, was meant for every one (llama's lost train case is missing, not a pass)."""
    records = [a_record(f"{m}::{s}") for m in ("llama", "gpt2") for s in ("load", "forward", "generate", "train")]
    table, head = _run_of([r for r in records if r["case_id"] != "llama::train"])
    assert table.loc["llama", "train"] == "missing"
    assert table.loc["llama", "verdict"] == "passes-where-tested" and not table.loc["llama", "runs_unmodified"]
    assert (head.missing, head.architectures, head.runs_unmodified) == (1, 2, 1)


@pytest.mark.parametrize("statuses", [{"forward": "passed", "train": "missing"},
                                      {"load": "missing", "forward": "passed"}])
def test_a_missing_case_is_no_pass(statuses: dict[str, str]) -> None:
    assert arch_verdict(statuses, ()) == "passes-where-tested"
    assert not runs_unmodified(statuses, CORE_SCENARIOS)
    assert arch_verdict({"load": "passed", "forward": "missing"}, ()) == "untested"
