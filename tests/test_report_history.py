"""Run summaries: written once per run, read back for the trend and the diff."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from hf_neuron.errors import InputError
from hf_neuron.report.history import HISTORY_SCHEMA, RunSummary, previous_run, read_history, with_run, write_summary
from hf_neuron.report.tables import RunInfo


def _summary(run_id: str, finished_at: str, passed: int = 3) -> RunSummary:
    return RunSummary(
        run_id=run_id,
        started_at=finished_at,
        finished_at=finished_at,
        backend="reference",
        architectures=4,
        runs_unmodified=passed,
        scenarios={"load": {"passed": passed, "failing": 4 - passed}, "ddp": {"passed": 0, "failing": 0}},
        statuses={"llama": {"load": "passed"}},
    )


def _info(summary: RunSummary) -> RunInfo:
    return RunInfo(summary.run_id, summary.started_at, summary.finished_at, "reference", {"backend": "reference"})


def test_a_summary_round_trips_through_its_file(tmp_path: Path) -> None:
    summary = _summary("nightly/2026-11-28", "2026-11-28T03:00:00+00:00")
    path = write_summary(tmp_path / "history", summary)
    assert path.name == "nightly_2026-11-28.json"
    written = json.loads(path.read_text())
    assert written["schema"] == 6 and "checkpoints" not in written  # no checkpoint figure: the schema before them
    assert read_history(tmp_path / "history") == [summary]
    with_checkpoints = replace(summary, checkpoints={"checkpoints": 2, "passing": 1})
    path = write_summary(tmp_path / "history", with_checkpoints)
    assert json.loads(path.read_text())["schema"] == HISTORY_SCHEMA == 7
    assert read_history(tmp_path / "history") == [with_checkpoints]


def test_a_summary_keeps_each_architectures_group_and_an_older_one_knows_none(tmp_path: Path) -> None:
    summary = replace(_summary("now", "2026-11-28T03:00:00+00:00"), groups={"llama": "decoder"})
    write_summary(tmp_path, summary)
    older = json.loads((tmp_path / "now.json").read_text())
    assert older.pop("groups") == {"llama": "decoder"}
    (tmp_path / "before.json").write_text(json.dumps({**older, "schema": 3, "run_id": "before",
                                                      "finished_at": "2026-11-27T03:00:00+00:00"}))
    assert [(s.run_id, s.groups) for s in read_history(tmp_path)] == [("before", {}), ("now", {"llama": "decoder"})]


def test_history_is_ordered_by_finish_time_not_by_file_name(tmp_path: Path) -> None:
    late, early = _summary("a", "2026-11-28T03:00:00+00:00"), _summary("b", "2026-11-27T03:00:00+00:00")
    for summary in (late, early):
        write_summary(tmp_path, summary)
    assert [s.run_id for s in read_history(tmp_path)] == ["b", "a"]


def test_no_history_directory_means_no_history(tmp_path: Path) -> None:
    assert read_history(tmp_path / "absent") == []


def test_a_bad_summary_is_named(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"schema": 1, "run_id": "x"}')
    schemas = "1 or 2 or 3 or 4 or 5 or 6 or 7"
    with pytest.raises(InputError, match=rf"x.json: not a run summary of schema {schemas}: .*move it out"):
        read_history(tmp_path)


def test_a_summary_of_schema_1_is_read_with_its_missing_fields_unknown(tmp_path: Path) -> None:
    old = {"schema": 1, "run_id": "old", "started_at": "2026-11-27T03:00:00+00:00",
           "finished_at": "2026-11-27T03:00:00+00:00", "backend": "reference", "architectures": 4,
           "runs_unmodified": 3, "scenarios": {"load": {"passed": 3, "failing": 1}}, "statuses": {}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    [summary] = read_history(tmp_path)
    assert (summary.hf_neuron, summary.profile, summary.verdicts) == (None, None, {})
    assert summary.rate("load") == 0.75  # schema 1 has no applicable count: passed / (passed + failing)


def test_the_rate_is_over_the_applicable_architectures() -> None:
    summary = replace(_summary("a", "2026-11-28T03:00:00+00:00"),
                      scenarios={"load": {"passed": 2, "failing": 1, "applicable": 4}})
    assert summary.rate("load") == 0.5  # a CPU failure or a harness gap stays in the denominator


def test_rates() -> None:
    summary = _summary("a", "2026-11-28T03:00:00+00:00", passed=1)
    assert summary.rate("load") == 0.25
    assert summary.rate("ddp") is None
    assert summary.rate("unknown") is None
    assert summary.unmodified_rate == 0.25


def test_previous_run_is_the_latest_other_run_that_finished_before() -> None:
    history = [_summary(f"r{d}", f"2026-11-{d}T03:00:00+00:00") for d in (25, 26, 28)]
    current = _summary("r27", "2026-11-27T03:00:00+00:00")
    assert previous_run(history, _info(current)).run_id == "r26"
    assert previous_run(history, _info(history[0])) is None
    rebuilt = replace(history[2], runs_unmodified=1)
    assert previous_run(history, _info(rebuilt)).run_id == "r26"


def test_with_run_replaces_an_earlier_summary_of_the_same_run() -> None:
    history = [_summary("r1", "2026-11-25T03:00:00+00:00"), _summary("r2", "2026-11-26T03:00:00+00:00")]
    rebuilt = replace(history[0], runs_unmodified=1)
    assert with_run(history, rebuilt) == [rebuilt, history[1]]


def test_a_summary_keeps_each_scenarios_cost_and_the_trend_shows_the_runs_that_have_one(tmp_path: Path) -> None:
    import pandas as pd

    from hf_neuron.report.history import cost_trend
    from hf_neuron.report.tables import scenario_costs

    cases = pd.DataFrame({"scenario": ["generate", "generate", "forward"], "duration_s": [30.0, 10.0, 1.5],
                          "compile_seconds": [20.0, None, None]})
    costs = scenario_costs(cases)
    assert costs.loc["generate"].tolist() == [2, 40.0, 20.0, 1]
    assert costs.loc["forward", "case_seconds"] == 1.5 and pd.isna(costs.loc["forward", "compile_seconds"])
    earlier = _summary("before", "2026-11-27T03:00:00+00:00")  # schema 4: no costs
    summary = replace(_summary("now", "2026-11-28T03:00:00+00:00"), started_at="2026-11-28T02:00:00+00:00",
                      costs={"generate": {"cases": 2, "case_seconds": 40.0, "compile_seconds": 20.0},
                             "forward": {"cases": 1, "case_seconds": 1.5, "compile_seconds": None}})
    write_summary(tmp_path, summary)
    assert read_history(tmp_path) == [summary]
    trend = cost_trend([earlier, summary])
    assert trend.runs == ["now"] and trend.wall_minutes == [60.0]
    assert trend.rows == {"generate": [(40.0 / 60, 20.0 / 60)], "forward": [(1.5 / 60, None)]}
    assert cost_trend([earlier]).runs == []


def test_the_machine_label_says_what_the_records_say_of_the_processor() -> None:
    from hf_neuron.report.history import machine_label

    def info(**env: str) -> RunInfo:
        return RunInfo("r", "2026-12-03T00:00:00+00:00", "2026-12-03T00:00:00+00:00", "reference",
                       {"backend": "reference", **env})

    assert machine_label(info(cpu_model="AMD EPYC", cpus="2", cpu_isa="avx2")) == "AMD EPYC, 2 CPUs, avx2"
    assert machine_label(info(cpu_model="Xeon", cpus="8", cpu_isa="none")) == "Xeon, 8 CPUs, none"
    # None in the records reaches RunInfo as "": the system did not say
    assert machine_label(info(cpu_model="", cpus="4", cpu_isa="")) == "unknown processor, 4 CPUs"
    assert machine_label(info()) is None, "records from before hf-neuron recorded the processor"


def test_the_cost_trend_shows_each_runs_machine_and_says_when_they_differ() -> None:
    from hf_neuron.report.history import cost_trend

    costs = {"forward": {"cases": 1, "case_seconds": 1.5, "compile_seconds": None}}
    old = replace(_summary("old", "2026-11-27T03:00:00+00:00"), costs=costs)  # schema 5: no machine
    one = replace(_summary("one", "2026-11-28T03:00:00+00:00"), costs=costs, machine="AMD EPYC, 2 CPUs, avx2")
    two = replace(_summary("two", "2026-11-29T03:00:00+00:00"), costs=costs, machine="AMD EPYC, 2 CPUs, avx2")
    other = replace(two, run_id="other", machine="Xeon, 2 CPUs, avx2 avx512f avx512_bf16")
    assert cost_trend([one, two]).machines == ["AMD EPYC, 2 CPUs, avx2"] * 2
    assert not cost_trend([one, two]).machines_differ
    assert cost_trend([one, other]).machines_differ
    assert cost_trend([old, one]).machines == [None, "AMD EPYC, 2 CPUs, avx2"]
    assert cost_trend([old, one]).machines_differ, "a run that did not say may have run elsewhere"


def test_a_summary_of_schema_5_reads_without_a_machine(tmp_path: Path) -> None:
    summary = _summary("before", "2026-11-28T03:00:00+00:00")
    path = write_summary(tmp_path, replace(summary, machine="AMD EPYC, 2 CPUs, avx2"))
    data = json.loads(path.read_text())
    assert data["machine"] == "AMD EPYC, 2 CPUs, avx2"
    del data["machine"]
    path.write_text(json.dumps({**data, "schema": 5}))
    assert read_history(tmp_path) == [summary]
    path.write_text(json.dumps({**data, "schema": 6, "machine": 3}))
    with pytest.raises(InputError, match="machine must be a string or null"):
        read_history(tmp_path)
