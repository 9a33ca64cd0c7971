"""The checkpoints of a run in the report: split from the tiny models' cases once, so they change no architecture
figure; their table and verdicts; their figures and the disagreements with the tiny models; their downloads, history
and pages.

The fixture ``checkpoints/results.jsonl`` holds trimmed copies of real checkpoint records (Qwen/Qwen3-0.6B and
openai/whisper-tiny from a checkpoint run) varied for each verdict, in the run and environment of ``run-2``: a
checkpoint failing on neuron only (Llama-3.2-1B's ``dtype``), one failing on neuron as its tiny model does
(Mistral-7B's ``generate``), one failing the same way on the CPU (xglm-564M), one over the memory budget (Qwen3-30B-A3B,
untested with gap ``memory-budget``), one quantized with a method not runnable on neuron (Qwen3-8B-AWQ), and two that
pass (Qwen3-0.6B; whisper-tiny, whose architecture has no tiny case in the run).
"""

from __future__ import annotations

import dataclasses
import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.compat.ranking import Ranking
from hf_neuron.report.checkpoints import Disagreement
from hf_neuron.report.figures import run_page
from hf_neuron.report.history import HISTORY_SCHEMA, cost_trend, read_history, summarize
from hf_neuron.report.load import LoadedRecords, load_records, model_source, split_sources
from hf_neuron.report.markdown import markdown_summary
from hf_neuron.report.site import RunTables, build_site, run_tables
from hf_neuron.report.tables import CASE_COLUMNS, case_frame, matrix_table, scenario_costs

RECORDS = Path(__file__).parent / "fixtures" / "records"
BASELINE = load_baseline(Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json")
RANKING = Ranking({"llama": 1, "mistral": 2, "qwen3": 3, "qwen3_moe": 4}, "hub downloads")
CHECKPOINTS = RECORDS / "checkpoints" / "results.jsonl"


def _lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CHECKPOINTS.read_text().splitlines()]


def _write(tmp_path: Path, records: list[dict[str, Any]], name: str = "changed") -> Path:
    (tmp_path / name).mkdir(exist_ok=True)
    (tmp_path / name / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path / name


def _tables(*paths: Path) -> RunTables:
    return run_tables(load_records(paths), baseline=BASELINE, ranking=RANKING)


@pytest.fixture(scope="module")
def both() -> RunTables:
    return _tables(RECORDS / "run-2", RECORDS / "checkpoints")


@pytest.fixture(scope="module")
def tiny_only() -> RunTables:
    return _tables(RECORDS / "run-2")


# -- the split ---------------------------------------------------------------------------------------------------


def test_records_are_split_by_whether_they_name_a_checkpoint() -> None:
    loaded = load_records([RECORDS / "run-2", RECORDS / "checkpoints"])
    assert (len(loaded.records), len(loaded.tiny), len(loaded.checkpoints)) == (81, 46, 35)
    assert {model_source(r) for r in loaded.tiny} == {"tiny"}
    assert {r["checkpoint"]["id"] for r in loaded.checkpoints} == {
        "Qwen/Qwen3-0.6B", "meta-llama/Llama-3.2-1B", "mistralai/Mistral-7B-v0.1", "facebook/xglm-564M",
        "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-8B-AWQ", "openai/whisper-tiny"}
    assert split_sources(loaded.records) == (loaded.tiny, loaded.checkpoints)


def test_checkpoint_records_change_no_architecture_figure(both: RunTables, tiny_only: RunTables) -> None:
    pd.testing.assert_frame_equal(both.table, tiny_only.table)
    pd.testing.assert_frame_equal(both.rates, tiny_only.rates)
    pd.testing.assert_frame_equal(both.cases, tiny_only.cases)
    pd.testing.assert_frame_equal(scenario_costs(both.cases, by=("scenario", "group")),
                                  scenario_costs(tiny_only.cases, by=("scenario", "group")))
    assert both.head == tiny_only.head
    assert both.statuses == tiny_only.statuses
    assert both.run.scenarios == tiny_only.run.scenarios
    with_checkpoints, without = (
        summarize(t.run, t.head, t.rates, t.statuses, None, scenario_costs(t.cases),
                  checkpoints=t.checkpoints.figures if t.checkpoints else None) for t in (both, tiny_only))
    # the run is every case's: it ends with its last checkpoint case; every figure of the architectures is the same
    assert (with_checkpoints.started_at, with_checkpoints.finished_at) == (without.started_at,
                                                                           "2026-11-28T03:14:00+00:00")
    assert without.checkpoints is None and with_checkpoints.checkpoints is not None
    assert dataclasses.replace(with_checkpoints, finished_at=without.finished_at, checkpoints=None) == without


def test_mixed_into_the_architecture_table_the_checkpoints_would_change_it(tiny_only: RunTables) -> None:
    """What the split prevents: the checkpoints' cases counted as their architectures' (the input that breaks the
    test above)."""
    loaded = load_records([RECORDS / "run-2", RECORDS / "checkpoints"])
    mixed = case_frame(loaded.records)
    with pytest.raises(ValueError, match="duplicate entries"):  # qwen3::forward twice, and more
        matrix_table(mixed, baseline=BASELINE, scenarios=tiny_only.run.scenarios)
    naive = run_tables(LoadedRecords([{**r, "checkpoint": None} for r in loaded.checkpoints if r["model_type"]
                                      in ("whisper", "qwen3_moe")] + loaded.tiny), baseline=BASELINE)
    assert naive.head.architectures == tiny_only.head.architectures + 2


def test_an_empty_case_frame_has_every_column() -> None:
    assert list(case_frame([]).columns) == list(CASE_COLUMNS)
    assert list(case_frame(load_records([CHECKPOINTS]).records).columns) == list(CASE_COLUMNS)


# -- the table ---------------------------------------------------------------------------------------------------


def test_the_checkpoint_table_and_its_verdicts(both: RunTables) -> None:
    assert both.checkpoints is not None
    table = both.checkpoints.table
    assert list(both.checkpoints.scenarios) == ["forward", "generate", "backward", "compile", "dtype"]
    assert [(checkpoint, row["model_type"], None if pd.isna(row["rank"]) else row["rank"], row["verdict"],
             row["tiny_verdict"], None if pd.isna(row["agreement"]) else row["agreement"])
            for checkpoint, row in table.iterrows()] == [
        ("meta-llama/Llama-3.2-1B", "llama", 1, "fails-on-neuron", "fully-passes", "worse"),
        ("mistralai/Mistral-7B-v0.1", "mistral", 2, "fails-on-neuron", "fails-on-neuron", "agree"),
        ("Qwen/Qwen3-0.6B", "qwen3", 3, "fully-passes", "fails-on-neuron", "better"),
        ("Qwen/Qwen3-8B-AWQ", "qwen3", 3, "fully-passes", "fails-on-neuron", "better"),
        ("Qwen/Qwen3-30B-A3B", "qwen3_moe", 4, "untested", "not-run", None),
        ("facebook/xglm-564M", "xglm", None, "fails-on-cpu-too", "fails-on-cpu-too", "agree"),
        ("openai/whisper-tiny", "whisper", None, "fully-passes", "not-run", None),
    ]
    assert table.loc["meta-llama/Llama-3.2-1B", ["forward", "dtype"]].tolist() == ["passed", "failed"]
    assert table.loc["facebook/xglm-564M", ["forward", "dtype"]].tolist() == ["fails-on-cpu-too", "skipped"]
    assert set(table.loc["Qwen/Qwen3-30B-A3B", list(both.checkpoints.scenarios)]) == {"untested"}
    moe = table.loc["Qwen/Qwen3-30B-A3B"]
    assert (moe["parameters"], moe["active_parameters"], moe["cores_inference"], moe["cores_full_fine_tune"],
            moe["slice_layers"]) == (30532122624, 3348695040, 3, 20, 1)
    assert moe["slice_reductions"] == "1 layer; vocabulary 151,936 -> 32,000; experts 128 -> 8"
    assert pd.isna(moe["peak_memory_bytes"])
    awq = table.loc["Qwen/Qwen3-8B-AWQ"]
    assert (awq["quantization_method"], awq["quantization_verdict"]) == ("awq", "not-runnable")
    assert (awq["stated_dtype"], awq["counted_dtype"]) == ("float16", "bfloat16")  # quantized: runs dequantized
    qwen = table.loc["Qwen/Qwen3-0.6B"]
    cases = both.checkpoints.cases[both.checkpoints.cases["checkpoint"] == "Qwen/Qwen3-0.6B"]
    assert qwen["duration_s"] == round(cases["duration_s"].sum(), 3)
    assert qwen["peak_memory_bytes"] == cases["peak_memory_bytes"].max() == 2741023432
    assert qwen["memory_inference"] == 1661861888 and qwen["counted_dtype"] == "bfloat16"
    assert pd.isna(table.loc["openai/whisper-tiny", "trainium"])  # no Trainium lane


@pytest.mark.parametrize(("change", "verdict"), [
    # the CPU fails Llama's dtype case the same way: no longer held against neuron
    ({"cpu_outcome": "failed", "cpu_verdict": "fails-on-cpu-too"}, "passes-where-tested"),
    # the dtype case is untested: forward passed, nothing fails on neuron
    ({"outcome": "untested", "gap": "checks", "reason": "no check", "failure": None, "cpu_outcome": None,
      "cpu_verdict": None}, "passes-where-tested"),
])
def test_a_checkpoint_verdict_follows_its_cases(tmp_path: Path, change: dict[str, Any], verdict: str) -> None:
    records = [{**r, "cpu_failure": r["failure"] if change.get("cpu_verdict") else None, **change}
               if r["case_id"] == "meta-llama/Llama-3.2-1B::dtype" else r for r in _lines()]
    tables = _tables(RECORDS / "run-2", _write(tmp_path, records))
    assert tables.checkpoints is not None
    assert tables.checkpoints.table.loc["meta-llama/Llama-3.2-1B", "verdict"] == verdict


def test_the_dtype_memory_is_counted_in_is_the_plans(tmp_path: Path) -> None:
    """A record carries the dtype the planner counted memory in (the report shows it): a config that states none, one
    that states bfloat16, and a quantized one, planned and compared."""
    from hf_neuron.checkpoint.facts import Prepared, checkpoint_facts
    from hf_neuron.checkpoint.plan import plan
    from hf_neuron.checkpoint.quantization import quantization
    from hf_neuron.checkpoint.slice import SliceRequest, plan_slice
    from hf_neuron.checkpoint.source import resolve

    base = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
            "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 256, "max_position_embeddings": 128}
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128}
    found = {}
    for name, extra in {"none": {}, "bf16": {"torch_dtype": "bfloat16"},
                        "awq": {"torch_dtype": "float16", "quantization_config": awq}}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({**base, **extra}))
        source = resolve(str(tmp_path / name))
        planned = plan(source, seq=16)
        facts = checkpoint_facts(Prepared(SliceRequest(name, source.path, 2, 1 << 30), source, planned,
                                          plan_slice(source, budget=1 << 30, layers=2),
                                          quantization(source.quantization)))
        found[name] = (facts.get("weights_dtype"), planned.dtype)
    assert found == {"none": ("float32", "float32"), "bf16": ("bfloat16", "bfloat16"),
                     "awq": ("bfloat16", "bfloat16")}


def test_the_table_shows_the_estimate_its_records_carry(tmp_path: Path) -> None:
    """A checkpoint's records carry its estimated decode rate and dollars a million output tokens by family (the
    planner's own :func:`~hf_neuron.checkpoint.facts.checkpoint_facts` writes them); the table shows trn2's and
    h100's, and nothing for records written before the estimate (the fixture's)."""
    cost = {"trn2": {"decode_tokens_per_s": 17.5, "usd_per_million_output_tokens": None},
            "h100": {"decode_tokens_per_s": 80.9, "usd_per_million_output_tokens": 23.62}}
    records = [{**r, "checkpoint": {**r["checkpoint"], "cost": cost}}
               if r["checkpoint"] and r["checkpoint"]["id"] == "Qwen/Qwen3-0.6B" else r for r in _lines()]
    table = _tables(RECORDS / "run-2", _write(tmp_path, records)).checkpoints
    assert table is not None
    row = table.table.loc["Qwen/Qwen3-0.6B"]
    assert (row["estimated_decode_tokens_per_s_trn2"], row["estimated_decode_tokens_per_s_h100"],
            row["estimated_usd_per_million_output_tokens_h100"]) == (17.5, 80.9, 23.62)
    assert pd.isna(row["estimated_usd_per_million_output_tokens_trn2"])
    assert pd.isna(table.table.loc["meta-llama/Llama-3.2-1B", "estimated_decode_tokens_per_s_h100"])
    out = tmp_path / "site"
    build_site([RECORDS / "run-2", tmp_path / "changed"], out, baseline=BASELINE, ranking=RANKING)
    page = (out / "index.html").read_text()
    assert "Estimate, not measured" in page and "docs/price-performance.md" in page
    qwen = re.search(r'<tr data-checkpoint="Qwen/Qwen3-0.6B".*?</tr>', page, re.S)
    assert qwen is not None and "17.5 / 80.9" in qwen.group(0) and "— / 23.62" in qwen.group(0)


def test_the_planner_writes_the_estimate_into_the_records(tmp_path: Path) -> None:
    from hf_neuron.checkpoint.facts import Prepared, checkpoint_facts
    from hf_neuron.checkpoint.plan import plan
    from hf_neuron.checkpoint.quantization import quantization
    from hf_neuron.checkpoint.slice import SliceRequest, plan_slice
    from hf_neuron.checkpoint.source import resolve

    source = resolve(str(Path(__file__).parents[1] / "compat" / "checkpoints" / "Qwen" / "Qwen3-0.6B"))
    facts = checkpoint_facts(Prepared(SliceRequest("q", source.path, 2, 1 << 30), source, plan(source),
                                      plan_slice(source, budget=1 << 30, layers=2), quantization(None)))
    cost = facts.get("cost") or {}
    assert set(cost) == {"trn2", "trn3", "h100", "h200"}
    assert cost["trn2"]["usd_per_million_output_tokens"] is None  # no sourced trn2 price
    assert (cost["h100"]["decode_tokens_per_s"] or 0) > 0 and (cost["h100"]["usd_per_million_output_tokens"] or 0) > 0


# -- the figures ---------------------------------------------------------------------------------------------------


def test_the_checkpoint_figures_and_the_disagreements(both: RunTables) -> None:
    assert both.checkpoints is not None
    figures = both.checkpoints.figures
    assert (figures.checkpoints, figures.passing, figures.dtype_passed, figures.dtype_applicable) == (7, 3, 3, 5)
    assert (figures.compared, figures.agree, figures.worse, figures.better, figures.not_compared) == (5, 2, 1, 2, 2)
    assert (figures.quantized, figures.not_runnable, figures.over_budget, figures.cases) == (1, 1, 1, 35)
    assert figures.verdicts == {"fully-passes": 3, "passes-where-tested": 0, "untested": 1, "fails-on-cpu-too": 1,
                                "neuron-limitation": 0, "fails-on-neuron": 2}
    assert figures.disagreements == (
        Disagreement("meta-llama/Llama-3.2-1B", "llama", "fully-passes", "fails-on-neuron", "worse", "checkpoints",
                     "dtype", "failed", "numerics-mismatch"),
        # better than the tiny model, whose compile case timed out (run-2's qwen3; its lora known failure is not a
        # scenario of the checkpoint lane, and names no disagreement)
        Disagreement("Qwen/Qwen3-0.6B", "qwen3", "fails-on-neuron", "fully-passes", "better", "tiny", "compile",
                     "timeout", "timeout"),
        Disagreement("Qwen/Qwen3-8B-AWQ", "qwen3", "fails-on-neuron", "fully-passes", "better", "tiny", "compile",
                     "timeout", "timeout"),
    )


def test_a_checkpoint_is_compared_with_its_tiny_model_over_the_scenarios_both_ran(tmp_path: Path) -> None:
    """The tiny qwen3 fails its compile case (a timeout) and its lora case (a known failure). With its compile case
    passing, only lora fails, a scenario the checkpoint lane does not run: both Qwen3 checkpoints agree with it, where
    a verdict over every tiny scenario would call them better."""
    tiny = [json.loads(line) for shard in sorted((RECORDS / "run-2").glob("*.jsonl"))
            for line in shard.read_text().splitlines()]
    passing = next(r for r in tiny if r["case_id"] == "qwen3::forward")
    tiny = [{**r, **{key: passing[key] for key in ("outcome", "failure", "reason", "cpu_outcome", "cpu_verdict")}}
            if r["case_id"] == "qwen3::compile" else r for r in tiny]
    tables = _tables(_write(tmp_path, tiny, "tiny"), RECORDS / "checkpoints")
    assert tables.checkpoints is not None
    assert tables.table.loc["qwen3", "verdict"] == "fails-on-neuron"  # the architecture's own verdict: lora
    assert tables.checkpoints.table.loc[["Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B-AWQ"], "agreement"].tolist() == [
        "agree", "agree"]
    figures = tables.checkpoints.figures
    assert (figures.agree, figures.worse, figures.better) == (4, 1, 0)


def test_a_checkpoint_only_scenario_is_compared_with_its_tiny_counterpart(tmp_path: Path) -> None:
    """Llama-3.2-1B fails its ``dtype`` case (bfloat16) where the tiny llama fully passes: worse. With the tiny
    llama's ``bf16`` case failing as well, the two agree (``dtype`` is ``bf16``'s question of a checkpoint); a
    comparison over the scenario names alone would still call the checkpoint worse."""
    tiny = [json.loads(line) for shard in sorted((RECORDS / "run-2").glob("*.jsonl"))
            for line in shard.read_text().splitlines()]
    dtype = next(r for r in _lines() if r["case_id"] == "meta-llama/Llama-3.2-1B::dtype")
    failing = {key: dtype[key] for key in ("outcome", "failure", "reason", "cpu_outcome", "cpu_verdict", "parity")}
    assert any(r["case_id"] == "llama::bf16" for r in tiny)
    tiny = [{**r, **failing} if r["case_id"] == "llama::bf16" else r for r in tiny]
    tables = _tables(_write(tmp_path, tiny, "tiny"), RECORDS / "checkpoints")
    assert tables.checkpoints is not None
    row = tables.checkpoints.table.loc["meta-llama/Llama-3.2-1B"]
    assert (row["verdict"], row["tiny_verdict"], row["agreement"]) == ("fails-on-neuron", "fails-on-neuron", "agree")


# -- pages, downloads, history, the Markdown pages --------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("checkpoints")
    build_site([RECORDS / "run-2", RECORDS / "checkpoints"], work / "site", baseline=BASELINE, ranking=RANKING,
               history_dir=work / "history")
    return work


def _text(html: str, start: str, end: str) -> str:
    """The text of ``html`` from ``start`` to the next ``end``, tags removed and whitespace collapsed."""
    begin = html.index(">", html.index(start)) + 1
    part = html[begin:html.index(end, begin)]
    text = " ".join(unescape(re.sub(r"<[^>]+>", " ", part)).split())
    return re.sub(r"\( ", "(", re.sub(r" ([,.;:)])", r"\1", text))


def test_the_index_shows_the_checkpoints_beside_the_architectures(built: Path) -> None:
    html = (built / "site" / "index.html").read_text()
    figures = _text(html, 'id="checkpoint-figures"', "</p>")
    assert figures.startswith("3 of 7 checkpoints pass at real width on the reference device")
    assert "3 of 5 pass in the 16-bit dtype their config states" in figures
    assert "of 5 compared: 2 agree, 1 checkpoint worse, 2 checkpoint better (2 not compared" in figures
    assert "1 quantized, 1 of them not runnable on neuron as published" in figures
    rows = _text(html, 'id="checkpoints"', "</table>")
    assert rows.index("meta-llama/Llama-3.2-1B") < rows.index("mistralai/Mistral-7B-v0.1") < rows.index(
        "Qwen/Qwen3-30B-A3B") < rows.index("facebook/xglm-564M")  # by rank, unranked last
    assert "30.53 B (3.35 B active)" in rows and "57.3 GiB in bfloat16" in rows and "3 / 20" in rows
    assert "awq: not runnable" in rows
    assert '<a href="arch/llama.html">llama</a>' in html  # an architecture with a page
    assert '<a href="arch/whisper.html">' not in html  # whisper has no tiny case: no page to link
    disagreements = _text(html, 'id="checkpoint-disagreements"', "</details>")
    assert "meta-llama/Llama-3.2-1B (llama): checkpoint worse: tiny model fully passes, checkpoint fails on " \
           "neuron; the checkpoint's dtype fail (numerics-mismatch)" in disagreements
    assert _text(html, 'id="headline-count"', "</span>") == "4 of 8"  # the architectures' headline, as without them
    assert "harness gap: memory-budget" in _text(html, 'id="checkpoint-notes"', "</ul>")


def test_an_architecture_page_lists_its_checkpoints_beside_its_tiny_verdict(built: Path) -> None:
    page = (built / "site" / "arch" / "qwen3.html").read_text()
    assert _text(page, 'id="tiny-beside-checkpoints"', "</p>") == (
        "The tiny model: fails on neuron. Its catalogued checkpoints at real width, each a slice of a few layers of "
        "the checkpoint's own config run through the checkpoint scenarios: Qwen/Qwen3-0.6B: fully passes, "
        "Qwen/Qwen3-8B-AWQ: fully passes.")
    table = _text(page, 'id="arch-checkpoints"', "</table>")
    assert "Qwen/Qwen3-0.6B" in table and "Llama" not in table
    assert 'id="arch-checkpoints"' not in (built / "site" / "arch" / "bert.html").read_text()  # bert has none


def test_the_checkpoint_table_is_a_download(built: Path, tmp_path: Path) -> None:
    csv = pd.read_csv(built / "site" / "downloads" / "checkpoints.csv", index_col="checkpoint")
    assert len(csv) == 7 and csv.loc["Qwen/Qwen3-8B-AWQ", "quantization_verdict"] == "not-runnable"
    assert "downloads/checkpoints.csv" in (built / "site" / "index.html").read_text()
    site = tmp_path / "site"
    build_site([RECORDS / "run-2", RECORDS / "checkpoints"], site, baseline=BASELINE)
    build_site([RECORDS / "run-2"], site, baseline=BASELINE)  # rebuilt without checkpoints: no stale file
    assert not (site / "downloads" / "checkpoints.csv").exists()
    assert "downloads/checkpoints.csv" not in (site / "index.html").read_text()


def test_the_history_keeps_the_checkpoint_figures(built: Path, tmp_path: Path) -> None:
    written = json.loads((built / "history" / "nightly-2026-11-28.json").read_text())
    assert written["schema"] == HISTORY_SCHEMA == 7
    assert {k: written["checkpoints"][k] for k in ("checkpoints", "passing", "agree", "worse", "better")} == {
        "checkpoints": 7, "passing": 3, "agree": 2, "worse": 1, "better": 2}
    [summary] = read_history(built / "history")
    assert summary.checkpoints == written["checkpoints"]
    trend = cost_trend([summary])
    assert trend.checkpoints == [(written["checkpoints"]["case_seconds"] / 60,
                                  written["checkpoints"]["compile_seconds"] / 60)]
    assert 'data-cost-checkpoints' in (built / "site" / "index.html").read_text()
    build_site([RECORDS / "run-2"], tmp_path / "site", baseline=BASELINE, history_dir=tmp_path / "history")
    tiny = json.loads((tmp_path / "history" / "nightly-2026-11-28.json").read_text())
    assert tiny["schema"] == 6 and "checkpoints" not in tiny  # as before there were checkpoints
    assert cost_trend(read_history(tmp_path / "history")).checkpoints == []


@pytest.mark.parametrize("results", [["checkpoints"], ["run-2"], ["run-2", "checkpoints"]])
def test_a_run_of_either_kind_of_case_or_both_builds_a_site(tmp_path: Path, results: list[str]) -> None:
    result = build_site([RECORDS / name for name in results], tmp_path / "site", baseline=BASELINE,
                        history_dir=tmp_path / "history")
    html = (tmp_path / "site" / "index.html").read_text()
    assert (result.architectures, result.checkpoints) == ((8 if "run-2" in results else 0),
                                                          (7 if "checkpoints" in results else 0))
    assert ('id="checkpoints"' in html) == ("checkpoints" in results)
    assert ('id="no-checkpoints"' in html) == ("checkpoints" not in results)
    if results == ["checkpoints"]:
        assert _text(html, 'id="headline-title"', "</h1>").startswith(
            "3 of 7 checkpoints pass at real width on the reference device")
        [summary] = read_history(tmp_path / "history")
        assert (summary.architectures, summary.checkpoints["checkpoints"]) == (0, 7)  # type: ignore[index]


def test_the_sample_page_gives_the_checkpoint_figures_or_says_there_are_none(both: RunTables,
                                                                              tiny_only: RunTables) -> None:
    page = run_page(both, title="t", source="s")
    section = page[page.index("## Checkpoints"):]
    assert "**3 of 7 checkpoints pass at real width**" in section
    assert "3 of 5 pass in the 16-bit dtype their config states" in section
    assert "of 5 compared: 2 agree, 1 checkpoint worse, 2 checkpoint better; 2 not compared" in section
    assert ("| `meta-llama/Llama-3.2-1B` | `llama` | fully passes | fails on neuron | checkpoint worse | the "
            "checkpoint's `dtype`: fail | `numerics-mismatch` |") in section
    assert "0.30 of them the checkpoints' cases" in page
    none = run_page(tiny_only, title="t", source="s")
    assert "This run has no checkpoint case, so it gives no figure about checkpoints" in none
    assert "checkpoints' cases" not in none.split("## Checkpoints")[0]
    # every section before the checkpoints' is the same with and without them, but the run's times and cases
    assert none.split("## Cost by group")[1].split("## Checkpoints")[0] == \
        page.split("## Cost by group")[1].split("## Checkpoints")[0]


def test_the_job_summary_lists_checkpoints_apart() -> None:
    loaded = load_records([RECORDS / "run-2", RECORDS / "checkpoints"])
    architectures, checkpoints = markdown_summary(loaded.records).split("#### Checkpoints (7)")
    alone = markdown_summary(loaded.tiny).split("#### Failing")[0]
    assert [line for line in architectures.splitlines() if line.startswith("|")] == [
        line for line in alone.splitlines() if line.startswith("|")]
    assert "| meta-llama/Llama-3.2-1B | llama | ✅ pass | ✅ pass | ✅ pass | ✅ pass | ❌ fail |" in checkpoints
    assert "- **meta-llama/Llama-3.2-1B::dtype**" in checkpoints


def test_the_architecture_table_leaves_out_the_scenarios_only_checkpoints_run() -> None:
    """``backward`` and ``dtype`` run on checkpoints only (``env.scenarios``'s ``models``): a run of tiny models alone
    shows no empty column of them; records that do not say (older runs) keep every scenario."""
    from hf_neuron.matrix.scenarios.registry import load_scenarios
    from hf_neuron.report.tables import run_info

    record = next(r for r in _lines() if r["scenario"] == "forward")
    declared = load_scenarios().named()
    tiny = run_info([{**record, "env": {**record["env"], "scenarios": declared}}])
    assert "forward" in tiny.scenarios and not {"backward", "dtype"} & set(tiny.scenarios)
    unsaid = [{key: value for key, value in scenario.items() if key != "models"} for scenario in declared]
    older = run_info([{**record, "env": {**record["env"], "scenarios": unsaid}}])
    assert {"backward", "dtype"} <= set(older.scenarios)


def test_a_slices_graphs_per_generation_and_breaks_are_columns(tmp_path: Path) -> None:
    """The checkpoint lane's compile figures: the slice's compiled decoding's graph budget from its ``generate`` case's
    leg, flagged where it grows (the input that breaks it: Mistral's sliding window, a graph a token), and its
    ``compile`` case's breaks."""
    from hf_neuron.vocabulary.records import GRAPH_BUDGET, GRAPHS_PER_GENERATION

    def budget(graphs: dict[str, int]) -> dict[str, Any]:
        return {"name": GRAPH_BUDGET, "outcome": "passed", "reason": None, "parity": None,
                "details": {GRAPHS_PER_GENERATION: graphs}}

    grown = {"meta-llama/Llama-3.2-1B::generate": {"6": 1, "10": 1}, "mistralai/Mistral-7B-v0.1::generate":
             {"6": 5, "10": 8}}
    records = [{**r, "legs": [*(r["legs"] or []), budget(grown[r["case_id"]])]} if r["case_id"] in grown
               else {**r, "compile": {**r["compile"], "graph_breaks": 3}} if r["case_id"] == "Qwen/Qwen3-0.6B::compile"
               else r for r in _lines()]
    tables = _tables(RECORDS / "run-2", _write(tmp_path, records))
    assert tables.checkpoints is not None
    table = tables.checkpoints.table
    assert table["decoding_graphs"].dropna().to_dict() == {"meta-llama/Llama-3.2-1B": 1,
                                                           "mistralai/Mistral-7B-v0.1": 8}
    assert table["bounded_decoding"].dropna().to_dict() == {"meta-llama/Llama-3.2-1B": True,
                                                            "mistralai/Mistral-7B-v0.1": False}
    assert table.loc["Qwen/Qwen3-0.6B", "breaks"] == 3
