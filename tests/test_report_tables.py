"""The report's numbers from fixture records: statuses, the matrix, headline, pass rates, the run diff."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from _helpers_report import a_catalog

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.compat.ranking import Ranking
from hf_neuron.matrix.records import CORE_SCENARIOS
from hf_neuron.matrix.records import SCENARIO_NAMES as SCENARIOS
from hf_neuron.report.load import load_records
from hf_neuron.report.status import cell_status, runs_unmodified
from hf_neuron.report.tables import (
    case_frame,
    case_statuses,
    diff_runs,
    headline,
    matrix_table,
    run_info,
    scenario_rates,
)

RECORDS = Path(__file__).parent / "fixtures" / "records"
BASELINE = load_baseline(Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json")


def _cases(run: str) -> pd.DataFrame:
    return case_frame(load_records([RECORDS / run]).records)


@pytest.fixture(scope="module")
def cases() -> pd.DataFrame:
    return _cases("run-2")


@pytest.fixture(scope="module")
def table(cases: pd.DataFrame) -> pd.DataFrame:
    return matrix_table(cases, baseline=BASELINE)


def test_core_scenarios_are_one_named_subset() -> None:
    assert CORE_SCENARIOS == ("load", "forward", "generate", "train")
    assert set(CORE_SCENARIOS) <= set(SCENARIOS)


def test_a_failure_that_also_fails_on_the_cpu_is_not_held_against_neuron() -> None:
    assert cell_status("error", "error") == "cpu-fails"
    assert cell_status("failed", "passed") == "failed"
    assert cell_status("error", None) == "error"
    assert cell_status("passed", "error") == "passed"


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["passed", "passed", "passed", "passed"], True),
        (["passed", "passed", "skipped", "cpu-fails"], True),
        (["skipped", "skipped", "skipped", "skipped"], False),
        (["passed", "passed", "passed", "known-failure"], False),
        (["passed", "passed", "passed", "not-run"], False),
    ],
)
def test_runs_unmodified(statuses: list[str], expected: bool) -> None:
    assert runs_unmodified(statuses) is expected


def test_matrix_has_one_row_per_architecture_and_a_status_per_scenario(table: pd.DataFrame) -> None:
    assert sorted(table.index) == ["bert", "falcon", "gpt2", "llama", "mistral", "phi3", "qwen3"]
    assert table.loc["falcon", "forward"] == "cpu-fails"
    assert table.loc["qwen3", "lora"] == "known-failure"
    assert table.loc["phi3", "lora"] == "not-run"
    assert table.loc["bert", "group"] == "encoder"
    assert table["runs_unmodified"].to_dict() == {
        "bert": True, "falcon": True, "gpt2": True, "llama": True, "mistral": False, "phi3": False, "qwen3": True
    }


def test_baseline_columns(table: pd.DataFrame) -> None:
    assert table.index[table["baseline_inference"]].tolist() == ["llama", "phi3", "qwen3"]
    assert table.index[table["baseline_training"]].tolist() == ["llama", "qwen3"]


def test_headline_figures(table: pd.DataFrame) -> None:
    head = headline(table, BASELINE)
    assert (head.runs_unmodified, head.architectures) == (5, 7)
    assert (head.baseline_inference, head.baseline_training, head.baseline_in_run) == (9, 3, 3)
    assert head.baseline_name == "Optimum Neuron 0.4.5"
    assert head.catalog_not_run == 0
    assert head.core == CORE_SCENARIOS
    assert head.top == 0  # no ranking: no top-N view


def test_pass_rates_per_scenario(table: pd.DataFrame) -> None:
    rates = scenario_rates(table, BASELINE)
    assert rates.index.tolist() == list(SCENARIOS)
    counts = rates[["passed", "failing", "excused", "not_run", "baseline_supported"]]
    assert counts.loc["forward"].tolist() == [5, 1, 1, 0, 3]
    assert counts.loc["generate"].tolist() == [3, 2, 2, 0, 3]
    assert counts.loc["train"].tolist() == [6, 1, 0, 0, 2]
    assert counts.loc["lora"].tolist() == [1, 1, 0, 5, 2]
    assert rates.loc["forward", "rate"] == pytest.approx(5 / 6)
    assert rates.loc["generate", "rate"] == pytest.approx(3 / 5)
    assert rates["core"].tolist() == [s in CORE_SCENARIOS for s in SCENARIOS]
    assert rates.loc["train", "baseline_mode"] == "training"


def test_a_scenario_nobody_counted_has_no_rate(cases: pd.DataFrame) -> None:
    only_bert = matrix_table(cases[cases["model_type"] == "bert"], baseline=BASELINE)
    assert math.isnan(scenario_rates(only_bert, BASELINE).loc["generate", "rate"])


def test_ranking_orders_rows_and_marks_the_top_n(cases: pd.DataFrame) -> None:
    ranking = Ranking({"qwen3": 1, "gpt2": 2, "llama": 3, "mistral": 4}, "hub downloads")
    table = matrix_table(cases, baseline=BASELINE, ranking=ranking, top_n=3)
    assert table.index.tolist() == ["qwen3", "gpt2", "llama", "mistral", "bert", "falcon", "phi3"]
    assert table.index[table["top"]].tolist() == ["qwen3", "gpt2", "llama"]
    head = headline(table, BASELINE)
    assert (head.top_runs_unmodified, head.top) == (3, 3)


def test_catalog_adds_groups_and_not_run_rows(cases: pd.DataFrame) -> None:
    catalog = a_catalog(llama="encoder-decoder", gemma3="decoder")  # llama's records say decoder: records win
    table = matrix_table(cases, baseline=BASELINE, catalog=catalog)
    assert table.loc["llama", "group"] == "decoder"
    assert table.loc["gemma3", ["group", "has_records", "runs_unmodified"]].tolist() == ["decoder", False, False]
    assert (table.loc["gemma3", list(SCENARIOS)] == "not-run").all()
    head = headline(table, BASELINE)
    assert (head.runs_unmodified, head.architectures, head.catalog_not_run) == (5, 7, 1)


def test_diff_between_two_runs() -> None:
    changes = diff_runs(case_statuses(_cases("run-1")), case_statuses(_cases("run-2")))
    by_kind = {kind: {(c.model_type, c.scenario, c.before, c.after) for c in changes if c.kind == kind}
               for kind in ("regression", "new-pass", "other")}
    assert by_kind["regression"] == {
        ("gpt2", "compile", "passed", "crashed"), ("mistral", "generate", "passed", "error")}
    assert by_kind["new-pass"] == {
        ("bert", "train", "error", "passed"),
        ("falcon", "load", "not-run", "passed"),
        ("falcon", "train", "not-run", "passed"),
        ("phi3", "load", "error", "passed"),
    }
    assert by_kind["other"] == {
        ("falcon", "forward", "not-run", "cpu-fails"), ("falcon", "generate", "not-run", "cpu-fails")}


def test_changed_rows_are_flagged(cases: pd.DataFrame) -> None:
    table = matrix_table(cases, baseline=BASELINE, changed=frozenset({"gpt2"}))
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
    table = matrix_table(load_forward, baseline=BASELINE)
    head = headline(table, BASELINE)
    assert head.core == ("load", "forward")
    assert table.index[table["runs_unmodified"]].tolist() == ["bert", "falcon", "gpt2", "llama", "mistral", "qwen3"]


def test_a_group_is_judged_on_the_core_scenarios_it_runs(cases: pd.DataFrame) -> None:
    # A diffusion backbone has forward and generate only; a decoder missing train is still not proven to run.
    llama = cases[cases["model_type"] == "llama"]
    backbone = llama[llama["scenario"].isin(["forward", "generate"])]
    backbone = backbone.assign(model_type="UNet2DModel", group="diffusion")
    short = llama[llama["scenario"] != "train"].assign(model_type="llama_no_train")
    table = matrix_table(pd.concat([cases, backbone, short]), baseline=BASELINE)
    assert table.loc["UNet2DModel", ["load", "train", "runs_unmodified"]].tolist() == ["not-run", "not-run", True]
    assert table.loc["llama_no_train", ["train", "runs_unmodified"]].tolist() == ["not-run", False]
    assert headline(table, BASELINE).core == CORE_SCENARIOS


def test_env_values_that_are_null_are_left_out() -> None:
    records = load_records([RECORDS / "run-2"]).records
    records = [{**r, "env": {**r["env"], "backend_version": None}} for r in records]
    assert run_info(records).env["backend_version"] == ""
