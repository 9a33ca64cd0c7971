"""The built site, from fixture records of two runs: the numbers shown, the diff, escaping, downloads, errors."""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
from _helpers_report import a_catalog

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.compat.catalog import CatalogEntry
from hf_neuron.compat.ranking import Ranking
from hf_neuron.errors import InputError
from hf_neuron.report.site import BuildResult, build_site
from hf_neuron.vocabulary.failures import failure
from hf_neuron.vocabulary.records import SCHEMA_VERSION

RECORDS = Path(__file__).parent / "fixtures" / "records"
BASELINE = load_baseline(Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json")
CATALOG = a_catalog(llama="decoder", qwen3="decoder", gemma3="decoder")
RANKING = Ranking({"llama": 1, "mistral": 2, "qwen3": 3, "gemma3": 4}, "hub downloads")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BuildResult]:
    work = tmp_path_factory.mktemp("report")
    common = {"baseline": BASELINE, "catalog": CATALOG, "ranking": RANKING, "history_dir": work / "history", "top_n": 3}
    build_site([RECORDS / "run-1"], work / "site-1", **common)
    result = build_site([RECORDS / "run-2"], work / "site", **common)
    return work / "site", result


def _page(site: tuple[Path, BuildResult], name: str = "index.html") -> str:
    return (site[0] / name).read_text()


class _TextOf(HTMLParser):
    """Collects the text inside the element with a given id."""

    VOID: ClassVar[set[str]] = {"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}

    def __init__(self, element_id: str) -> None:
        super().__init__()
        self.element_id, self.depth, self.found, self.parts = element_id, 0, False, []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        if self.depth:
            self.depth += 1
        elif ("id", self.element_id) in attrs:
            self.depth, self.found = 1, True

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag not in self.VOID:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


def _by_id(html: str, element_id: str) -> str:
    """The text inside the element with ``element_id``, whitespace collapsed."""
    parser = _TextOf(element_id)
    parser.feed(html)
    assert parser.found, f"no element #{element_id}"
    return " ".join("".join(parser.parts).split())


def _text(html: str) -> str:
    """The page's text, tags removed and whitespace collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_build_result(site: tuple[Path, BuildResult]) -> None:
    _, result = site
    assert (result.run_id, result.records, result.architectures) == ("nightly-2026-11-28", 46, 8)
    assert result.previous_run_id == "nightly-2026-11-27"
    assert result.problems == []


def test_headline_numbers(site: tuple[Path, BuildResult]) -> None:
    html = _page(site)
    assert _by_id(html, "headline-count") == "4 of 8"
    assert _by_id(html, "headline-title") == (
        "4 of 8 architectures run unmodified on the reference device — CPU kernels, not Trainium, with 3 hf-neuron "
        "patches.")
    assert _by_id(html, "verdicts") == (
        "2 fully passes 0 passes where tested 0 untested 1 fails on the CPU too 0 neuron limitation 5 fails on neuron")
    assert _by_id(html, "top-count") == "2 of the top 3"  # llama yes, mistral no, qwen3 yes
    assert "1 catalog architecture had no record in this run" in html
    assert "This run did not run" not in html


def test_patches_are_listed_and_reference_gaps_flagged(site: tuple[Path, BuildResult]) -> None:
    patches = _by_id(_page(site), "patches")
    assert patches.startswith("The 3 hf-neuron patches this run applied (1 work around a gap of the reference device")
    assert "torch.integer-histc-on-neuron reference-device gap" in patches
    assert "accelerate.neuron-device" in patches and "accelerate.neuron-device reference" not in patches


def test_groups_are_compared_with_the_baseline_like_for_like(site: tuple[Path, BuildResult]) -> None:
    html = _page(site)
    decoder = re.search(r'<tr data-group="decoder">(.*?)</tr>', html, re.S).group(1)
    counts = BASELINE.count("decoder", "inference"), BASELINE.count("decoder", "training")
    assert _text(decoder) == f"decoder 3 7 3 1 0 0 1 0 5 {counts[0]} / {counts[1]} (3 in this run)"
    assert _by_id(html, "denominators") == (
        "Text generation has two denominators: 3 of 3 causal-LM model types of transformers 5.24.0 (the catalog) "
        "run unmodified, and 2 of the top 3 architectures by the ranking (hub downloads).")
    means = _by_id(html, "supported-means")
    assert "Here: a tiny model with random weights" in means and BASELINE.supported_means in unescape(means)


def test_trainium_signals_and_harness_gaps(site: tuple[Path, BuildResult]) -> None:
    html = _page(site)
    assert [_by_id(html, i) for i in ("compiled-architectures", "one-graph", "graph-breaks", "decoding-architectures",
                                      "recompiles", "budget-architectures", "bounded-decoding",
                                      "fallback-architectures", "with-fallbacks", "step-fallbacks")] == [
        "2", "1", "1", "2", "1", "0", "0", "7", "1", "0"]  # the fixture's records have no graph budget
    assert "the records do not say which list of operators predicted the fallbacks" in _by_id(html, "signals")
    assert _by_id(html, "gaps") == (
        "Harness gaps to close: 1 untested cases 1 LoRA target modules PEFT refuses (lora-targets)")
    assert _by_id(html, "trainium-lane").startswith("No Trainium run yet.")


def test_a_core_scenario_left_out_of_the_run_is_said(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    lines = (RECORDS / "run-2" / "shard-0.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["scenario"] != "train"]
    (tmp_path / "results" / "slice.jsonl").write_text("\n".join(kept) + "\n")
    build_site([tmp_path / "results"], tmp_path / "site", baseline=BASELINE)
    note = _by_id((tmp_path / "site" / "index.html").read_text(), "core-note")
    assert "every other core scenario its group runs (load, forward, generate) passed or does not apply" in note
    assert note.endswith("This run did not run train, so it is not counted.")


def test_a_run_without_a_shard_says_it_is_incomplete(tmp_path: Path) -> None:
    """A shard that never came back took llama's train case: the old page called llama fully passing, and said
    nothing of the shard."""
    (tmp_path / "results").mkdir()
    lines = [line for path in sorted((RECORDS / "run-2").glob("*.jsonl")) for line in path.read_text().splitlines()]
    kept = [line for line in lines if json.loads(line)["case_id"] != "llama::train"]
    (tmp_path / "results" / "shard.jsonl").write_text("\n".join(kept) + "\n")
    build_site([tmp_path / "results"], tmp_path / "site", baseline=BASELINE, missing_shards=["2/3"])
    html = (tmp_path / "site" / "index.html").read_text()
    assert _by_id(html, "incomplete").startswith("This run is incomplete. Shard 2/3 never came back, and 1 core case "
                                                 "it meant to run has no record")
    assert _by_id(html, "headline-count") == "3 of 8"  # llama no longer counts
    matrix = pd.read_csv(tmp_path / "site" / "downloads" / "matrix.csv", index_col="model_type")
    assert matrix.loc["llama", ["train", "verdict", "runs_unmodified"]].tolist() == [
        "missing", "passes-where-tested", False]
    build_site([RECORDS / "run-2"], tmp_path / "whole", baseline=BASELINE)
    assert 'id="incomplete"' not in (tmp_path / "whole" / "index.html").read_text()


def test_pass_rates_and_baseline_per_scenario(site: tuple[Path, BuildResult]) -> None:
    html = _page(site)
    rows = {
        m.group(1): " ".join(re.sub(r"<[^>]+>", " ", m.group(2)).split())
        for m in re.finditer(r'<tr data-scenario="(\w+)">(.*?)</tr>', html, re.S)
    }
    # passed, applicable, rate, not applicable, untested, CPU fails too, failing, not run, baseline
    assert rows["forward"] == "forward core 5 8 62% 0 0 1 2 0 3 of 8"
    assert rows["generate"] == "generate core 3 7 43% 1 0 2 2 0 3 of 8"
    assert rows["train"] == "train core 6 8 75% 0 0 1 1 0 2 of 8"
    assert rows["lora"] == "lora 1 3 33% 0 1 0 1 5 2 of 8"
    assert rows["sdpa"] == "sdpa variant 0 0 — 0 0 0 0 8 3 of 8"


def _matrix_rows(html: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r'<tr data-name="([\w.-]+)".*?</tr>', html, re.S)}


def test_table_rows_follow_the_ranking_with_baseline_columns(site: tuple[Path, BuildResult]) -> None:
    rows = _matrix_rows(_page(site))
    assert list(rows) == ["llama", "mistral", "qwen3", "gemma3", "bert", "falcon", "gpt2", "phi3", "xglm"]
    cell = r'class="baseline-cell"[^>]*><span class="(yes|no)"'
    baseline_cells = {name: re.findall(cell, row) for name, row in rows.items()}
    assert baseline_cells["phi3"] == ["yes", "no"]
    assert baseline_cells["llama"] == ["yes", "yes"]
    assert baseline_cells["mistral"] == ["no", "no"]
    assert 'data-top="1"' in rows["qwen3"] and 'data-top="0"' in rows["gemma3"]
    assert 'data-changed="1"' in rows["mistral"] and 'data-changed="0"' in rows["llama"]
    assert 'data-group="decoder"' in rows["gemma3"] and "not run" in rows["gemma3"]


def test_cells_carry_their_status(site: tuple[Path, BuildResult]) -> None:
    rows = _matrix_rows(_page(site))
    cells = re.findall(r'<td class="cell s-([\w-]+)"', rows["falcon"])
    assert cells == ["passed", "failed", "fails-on-cpu-too", "passed"] + ["not-run"] * 9
    assert re.findall(r'<td class="cell s-([\w-]+)"', rows["qwen3"])[4] == "known-failure"
    verdicts = {name: re.search(r'<td class="v v-([\w-]+)"', row).group(1) for name, row in rows.items()}
    assert verdicts["xglm"] == "fails-on-cpu-too" and verdicts["llama"] == "fully-passes"
    assert 'class="compile fullgraph">1 graph<' in rows["llama"] and ">2 breaks<" in rows["mistral"]
    assert '<span class="flag">1</span>' in rows["llama"]  # one fallback operator


def test_the_headline_and_table_come_first_and_the_diff_is_summarised(site: tuple[Path, BuildResult]) -> None:
    html = _page(site)
    assert html.index('id="headline-title"') < html.index('id="matrix"') < html.index('id="diff-title"')
    assert _by_id(html, "regressions-count") == "2"
    assert _by_id(html, "new-passes-count") == "6"
    assert _by_id(html, "regressions") == "mistral generate pass → error gpt2 compile pass → crash"
    assert _by_id(html, "new-passes") == (
        "mistral compile — → pass bert train error → pass falcon load — → pass falcon train — → pass "
        "phi3 load error → pass xglm load — → pass")
    assert _by_id(html, "other-changes-count") == "6"
    assert _by_id(html, "hf-neuron-change") == (
        "hf-neuron: 0.1.0 then, 0.1.0 (abc123def456) now; profile none then, trainium now. Changes may come from "
        "hf-neuron's own code, not only from the libraries.")


def test_a_long_change_list_shows_its_top_entries_then_all(tmp_path: Path) -> None:
    previous = tmp_path / "previous"
    previous.mkdir()
    records = [json.loads(line) for line in (RECORDS / "run-2" / "shard-0.jsonl").read_text().splitlines()]
    earlier = [{**r, "run_id": "earlier", "outcome": "error", "failure": {
        "type": "E", "message": "m", "frame": "f", "fingerprint": "E|m|f", "traceback": "", "failure_class": "other"},
        "started_at": "2026-11-20T00:00:00+00:00", "finished_at": "2026-11-20T00:00:01+00:00"}
        for r in records if r["outcome"] == "passed"]
    (previous / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in earlier))
    build_site([previous], tmp_path / "site-1", baseline=BASELINE, history_dir=tmp_path / "history")
    build_site([RECORDS / "run-2"], tmp_path / "site", baseline=BASELINE, history_dir=tmp_path / "history")
    html = (tmp_path / "site" / "index.html").read_text()
    count = int(_by_id(html, "new-passes-count"))
    assert count > 10
    assert _by_id(html, "new-passes").count("→ pass") == 10
    assert f"New passes ({count}) " in _text(html) and f"Show all {count}" in _text(html)


def test_an_architecture_in_another_group_than_before_shows_as_moved(tmp_path: Path) -> None:
    records = [json.loads(line) for line in (RECORDS / "run-2" / "shard-0.jsonl").read_text().splitlines()]
    moved = records[0]["model_type"]
    earlier = [{**r, "run_id": "earlier", "started_at": "2026-11-20T00:00:00+00:00",
                "finished_at": "2026-11-20T00:00:01+00:00",
                **({"group": "encoder-decoder", "outcome": "error", "failure": {
                    "type": "E", "message": "m", "frame": "f", "fingerprint": "E|m|f", "traceback": "",
                    "failure_class": "other"}} if r["model_type"] == moved and r["outcome"] == "passed" else {})}
               for r in records]
    (tmp_path / "previous").mkdir()
    (tmp_path / "previous" / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in earlier))
    build_site([tmp_path / "previous"], tmp_path / "site-1", baseline=BASELINE, history_dir=tmp_path / "history")
    build_site([RECORDS / "run-2"], tmp_path / "site", baseline=BASELINE, history_dir=tmp_path / "history")
    html = (tmp_path / "site" / "index.html").read_text()
    assert int(_by_id(html, "moved-count")) > 0
    assert f"(encoder-decoder → {records[0]['group']})" in _by_id(html, "moved") and moved in _by_id(html, "moved")
    for kind in ("new-passes", "regressions"):
        assert f'id="{kind}"' not in html or f">{moved}<" not in _by_id(html, kind), kind


def test_backend_and_versions_are_shown(site: tuple[Path, BuildResult]) -> None:
    html = _page(site)
    assert "Reference device: neuron emulated on the CPU, not Trainium hardware" in html
    env = dict(re.findall(r"<dt>([^<]*)</dt><dd>([^<]*)</dd>", html[html.index('id="env"') :]))
    assert {k: env[k] for k in ("backend", "torch", "transformers", "host")} == {
        "backend": "reference", "torch": "2.13.0", "transformers": "5.24.0", "host": "ci-runner-1"
    }
    assert "2026-11-28 02:39 UTC" in html


def test_text_from_records_is_escaped(site: tuple[Path, BuildResult]) -> None:
    for page in site[0].rglob("*.html"):
        html = page.read_text()
        assert html.count("<script") == 1, page  # only the report's own script
        assert "<script>alert" not in html
    mistral = _page(site, "arch/mistral.html")
    assert "bad token &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; in prompt &amp; more" in mistral


def test_architecture_page(site: tuple[Path, BuildResult]) -> None:
    html = _page(site, "arch/mistral.html")
    generate = re.search(r'<tr id="case-generate">(.*?)</tr>', html, re.S).group(1)
    assert "error" in generate and "1.5 s" in generate and "117.7 MiB" in generate
    assert "other" in generate, "a class of before the closed set reads as today's rules classify it"
    assert "pass" in generate and "changed" in generate  # previous run: passed
    detail = html[html.index('id="detail-generate"') :]
    assert "transformers/generation/utils.py:2001" in detail  # top frame
    assert "ValueError|bad token &lt;script&gt;" in detail  # fingerprint
    assert "82 earlier lines left out" in detail  # the traceback is trimmed to its last 40 lines
    assert "hf-neuron matrix run --arch mistral --scenario generate" in detail
    assert _by_id(html, "reproduce").count("hf-neuron matrix run --arch mistral --scenario") == 13
    assert _by_id(html, "arch-verdict") == "fails on neuron on the reference device — CPU kernels, not Trainium"
    assert _by_id(html, "compile-summary") == "2 breaks · full graph: no"
    assert "data-dependent branching" in _by_id(html, "facts-compile")


def test_architecture_page_failure_details(site: tuple[Path, BuildResult]) -> None:
    falcon = _page(site, "arch/falcon.html")
    assert "fails the same way on the CPU: not counted against neuron" in falcon  # generate
    assert "the CPU fails differently: counted against neuron" in falcon  # forward
    assert "max_abs_diff 0.5" in falcon and "tolerance 0.0001" in falcon
    assert _by_id(falcon, "cpu-failure-generate") == "the same failure"
    assert _by_id(falcon, "cpu-failure-forward") == (
        "a different failure: RuntimeError: probability tensor contains <script>nan</script> "
        "(torch/nn/functional.py:99, fingerprint RuntimeError|probability tensor contains|torch/nn/functional.py:99)")
    assert "<script>nan" not in falcon  # escaped
    assert 'id="cpu-failure-' not in _page(site, "arch/qwen3.html")  # records without the field: nothing shown
    qwen3 = _page(site, "arch/qwen3.html")
    known = qwen3[qwen3.index('id="detail-lora"') :]
    assert "hf-neuron#12" in known and "tied embeddings break LoRA on neuron" in known
    assert _by_id(qwen3, "baseline-support") == "inference: yes · training: yes"


def test_architecture_page_facts(site: tuple[Path, BuildResult]) -> None:
    llama = _page(site, "arch/llama.html")
    assert _by_id(llama, "fallback-ops").startswith("aten::nonzero (2 calls) — expected to run on the CPU on Trainium")
    assert "the records do not say which list of operators" in _by_id(llama, "fallback-ops")
    assert _by_id(llama, "ranks-ddp") == "rank device peak memory bytes 0 neuron:0 1.0 MiB 1 neuron:1 1.0 MiB"
    assert _by_id(_page(site, "arch/phi3.html"), "fallback-ops") == "not measured (the run had no op log)"
    gpt2 = _page(site, "arch/gpt2.html")
    assert "harness gap: lora-targets" in _by_id(gpt2, "case-lora")
    assert _by_id(gpt2, "compile-generate") == "3 graphs, 0 breaks, 2 recompiles (neuron)"


def test_an_architecture_page_shows_legs_compared_values_and_fallbacks_per_step(tmp_path: Path) -> None:
    facts = {"kind": "core", "trains": False, "decodes": True}
    parity = {"metric": "max_abs_diff_over_bound", "value": 1e-6, "tolerance": 1e-4, "compared": 1000,
              "positions": 1024}
    legs = [{"name": "default cache", "outcome": "passed", "reason": None, "parity": parity, "details": None},
            {"name": "static cache", "outcome": "skipped", "reason": "it has no static-cache decoding",
             "parity": None, "details": None}]
    records = [_record("m::generate", schema=SCHEMA_VERSION, checkpoint=None, legs=legs, scenario_facts=facts,
                       parity=parity, fallback_ops={"aten::argmax": 12}, details={"device_steps": 8}),
               _record("m::forward", schema=SCHEMA_VERSION, checkpoint=None, legs=None,
                       fallback_ops={"aten::argmax": 1},
                       scenario_facts={"kind": "core", "trains": False, "decodes": False})]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    build_site([tmp_path / "results"], tmp_path / "site", baseline=BASELINE)
    page = (tmp_path / "site" / "arch" / "m.html").read_text()
    legs_list = page[page.index('id="legs-generate"'):page.index("</ul>", page.index('id="legs-generate"'))]
    assert [re.sub(r"<[^>]+>|\s+", " ", item).split() for item in re.findall(r"<li>(.*?)</li>", legs_list)] == [
        ["default", "cache:", "pass"], ["static", "cache:", "n/a", "it", "has", "no", "static-cache", "decoding"]]
    assert "1,000 of 1,024 values compared" in _by_id(page, "case-generate")
    start = page.index('id="fallbacks-by-scenario"')
    table = page[start:page.index("</table>", start)]
    assert [re.sub(r"<[^>]+>", " ", row).split() for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)][1:] == [
        ["forward", "aten::argmax", "1", "—", "—"], ["generate", "aten::argmax", "12", "8", "1.5"]]


def test_catalog_entry(site: tuple[Path, BuildResult]) -> None:
    html = _page(site, "arch/llama.html")
    assert "Model classLlamaForCausalLM Config classLlamaConfig" in _by_id(html, "catalog-entry")
    assert 'id="catalog-entry"' not in _page(site, "arch/mistral.html")  # not in the catalog
    assert "no record" in _page(site, "arch/gemma3.html")


def test_an_image_text_page_shows_its_tiny_model_from_the_catalog(tmp_path: Path) -> None:
    import dataclasses

    tiny = "text llama: layers 2, width 64; vision clip_vision_model: image 32, patch 4; 0.30M parameters"
    llava = CatalogEntry("llava", "image-text", "LlavaForConditionalGeneration", "LlavaConfig", True, True, None,
                         tiny=tiny)
    catalog = dataclasses.replace(CATALOG, entries=(*CATALOG.entries, llava))
    build_site([RECORDS / "run-2"], tmp_path, baseline=BASELINE, catalog=catalog)
    assert _by_id((tmp_path / "arch" / "llava.html").read_text(), "tiny-model") == tiny
    assert 'id="tiny-model"' not in (tmp_path / "arch" / "llama.html").read_text()  # the text groups record none


def test_downloads(site: tuple[Path, BuildResult]) -> None:
    root = site[0]
    lines = (root / "downloads" / "records.jsonl").read_text().splitlines()
    assert len(lines) == 46 and json.loads(lines[0])["case_id"] == "bert::forward"
    csv = pd.read_csv(root / "downloads" / "matrix.csv", index_col="model_type")
    columns = ["forward", "verdict", "runs_unmodified", "baseline_inference"]
    assert csv.loc["falcon", columns].tolist() == ["failed", "fails-on-neuron", False, False]
    assert csv["runs_unmodified"].dtype == bool
    parquet = pd.read_parquet(root / "downloads" / "matrix.parquet")
    assert parquet.index.tolist() == csv.index.tolist()
    assert parquet["generate"].tolist() == csv["generate"].tolist()
    html = _page(site)
    for href in ("downloads/records.jsonl", "downloads/matrix.csv", "downloads/matrix.parquet"):
        assert f'href="{href}"' in html


def test_history_keeps_one_summary_per_run(site: tuple[Path, BuildResult]) -> None:
    history = site[0].parent / "history"
    assert sorted(p.name for p in history.iterdir()) == ["nightly-2026-11-27.json", "nightly-2026-11-28.json"]
    assert 'id="trend"' in _page(site) and _page(site).count("<circle") == 2 * 5


def test_skipped_lines_are_counted_on_the_page(tmp_path: Path) -> None:
    result = build_site([RECORDS / "malformed"], tmp_path, baseline=BASELINE)
    assert len(result.problems) == 6
    html = (tmp_path / "index.html").read_text()
    assert "6 record lines skipped" in html
    assert "results.jsonl:4: not a matrix record: &#39;outcome&#39; must be one of" in html


def test_stale_architecture_pages_are_removed(tmp_path: Path) -> None:
    (tmp_path / "arch").mkdir()
    (tmp_path / "arch" / "gone.html").write_text("old")
    build_site([RECORDS / "run-2"], tmp_path, baseline=BASELINE)
    assert not (tmp_path / "arch" / "gone.html").exists()
    assert len(list((tmp_path / "arch").glob("*.html"))) == 8


def test_records_of_several_runs_are_refused(tmp_path: Path) -> None:
    runs = r"the reference records hold 2 runs \(nightly-2026-11-27, nightly-2026-11-28\)"
    with pytest.raises(InputError, match=runs):
        build_site([RECORDS / "run-1", RECORDS / "run-2"], tmp_path, baseline=BASELINE)


def test_no_valid_record_is_refused(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no valid record in"):
        build_site([tmp_path / "results"], tmp_path / "site", baseline=BASELINE)


def test_a_catalog_name_unsafe_for_a_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"catalog model types must be names.*\['../x'\]"):
        build_site([RECORDS / "run-2"], tmp_path, baseline=BASELINE, catalog=a_catalog(**{"../x": "decoder"}))


def test_the_site_is_self_contained(site: tuple[Path, BuildResult]) -> None:
    for page in site[0].rglob("*.html"):
        html = page.read_text()
        assert not re.search(r'(src|href)="(https?:)?//', html), page
    assert {p.name for p in (site[0] / "assets").iterdir()} == {"report.css", "report.js"}


def test_the_real_backend_gets_its_own_column_beside_the_reference_device(tmp_path: Path) -> None:
    result = build_site([RECORDS / "run-2", RECORDS / "trainium"], tmp_path, baseline=BASELINE)
    assert (result.run_id, result.records) == ("nightly-2026-11-28", 46 + 12)
    html = (tmp_path / "index.html").read_text()
    assert _by_id(html, "trainium-lane").startswith(
        "On Trainium (run trainium-2026-11-29, 2026-11-29 02:21 UTC): 2 of 3 architectures run unmodified.")
    assert "No Trainium run yet" not in html
    rows = _matrix_rows(html)
    lanes = {name: re.findall(r'<td class="v v-([\w-]+)"', row) for name, row in rows.items()}
    assert lanes["llama"] == ["fully-passes", "fully-passes"]  # the reference device's verdict, then Trainium's
    assert lanes["qwen3"] == ["fails-on-neuron", "fails-on-neuron"]  # train fails on Trainium alone
    assert lanes["mistral"] == ["fails-on-neuron", "fully-passes"]
    assert lanes["bert"] == ["fully-passes", "not-run"]
    assert _by_id(html, "headline-count") == "4 of 8"  # the table's figures stay the reference device's
    assert _by_id((tmp_path / "arch" / "qwen3.html").read_text(), "trainium-verdict") == "fails on neuron"
    csv = pd.read_csv(tmp_path / "downloads" / "matrix.csv", index_col="model_type")
    assert csv.loc[["llama", "bert"], "trainium"].tolist() == ["fully-passes", "not-run"]


def test_records_of_the_real_backend_alone_make_a_trainium_report(tmp_path: Path) -> None:
    build_site([RECORDS / "trainium"], tmp_path, baseline=BASELINE)
    html = (tmp_path / "index.html").read_text()
    assert _by_id(html, "headline-backend") == "on Trainium (TorchNeuron)"
    assert "No Trainium run yet" not in html and "Real Trainium (TorchNeuron)" in html


def test_an_unknown_backend_beside_the_reference_device_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    records = [json.loads(line) for line in (RECORDS / "trainium" / "results.jsonl").read_text().splitlines()]
    (other / "r.jsonl").write_text("".join(json.dumps({**r, "env": {**r["env"], "backend": "gpu"}}) + "\n"
                                           for r in records))
    with pytest.raises(InputError, match=r"records from backends reference, gpu: .* not gpu; build those apart"):
        build_site([RECORDS / "run-2", other], tmp_path / "site", baseline=BASELINE)


def _conflicting_copy(tmp_path: Path) -> Path:
    """run-2's llama::forward again, failing and finishing later (a record that disagrees with run-2's), and its
    llama::load again as it was (the same result seen twice)."""
    records = {json.loads(line)["case_id"]: json.loads(line)
               for line in (RECORDS / "run-2" / "shard-0.jsonl").read_text().splitlines()}
    record = records["llama::forward"]
    failure = {"type": "E", "message": "m", "frame": "f", "fingerprint": "E|m|f", "traceback": "",
               "failure_class": "other"}
    rerun = {**record, "outcome": "error", "failure": failure, "parity": None, "cpu_verdict": "not-rerun",
             "finished_at": "2026-11-29T00:00:00+00:00"}
    (tmp_path / "rerun").mkdir()
    (tmp_path / "rerun" / "r.jsonl").write_text(json.dumps(rerun) + "\n" + json.dumps(records["llama::load"]) + "\n")
    return tmp_path / "rerun"


def test_records_that_disagree_are_refused_unless_told_to_keep_the_latest(tmp_path: Path) -> None:
    rerun = _conflicting_copy(tmp_path)
    refused = r"(?s)1 case\(s\) have records that disagree:\n  llama::forward: passed .*then error .*on-conflict latest"
    with pytest.raises(InputError, match=refused):
        build_site([RECORDS / "run-2", rerun], tmp_path / "site", baseline=BASELINE)
    result = build_site([RECORDS / "run-2", rerun], tmp_path / "site", baseline=BASELINE, on_conflict="latest")
    assert len(result.replaced) == 1
    html = (tmp_path / "site" / "index.html").read_text()
    assert _by_id(html, "record-checks") == (
        "46 records kept, one per case; 0 lines skipped, 1 repeated result merged, 1 conflicting record replaced by a "
        "later one.")
    assert "llama::forward: passed" in _by_id(html, "replaced")
    assert re.findall(r'<td class="cell s-([\w-]+)"', _matrix_rows(html)["llama"])[1] == "error"


def _record(case_id: str, group: str = "decoder", **fields: object) -> dict[str, object]:
    model_type, _, scenario = case_id.partition("::")
    return {
        "schema": 2, "run_id": "three", "case_id": case_id, "model_type": model_type, "group": group,
        "scenario": scenario, "outcome": "passed", "reason": None, "gap": None, "duration_s": 1.0,
        "peak_memory_bytes": None, "parity": None, "cpu_outcome": None, "cpu_verdict": None, "cpu_failure": None,
        "failure": None, "known_failure": None, "compile": None, "fallback_ops": {}, "details": None,
        "env": {"backend": "reference", "profile": "trainium", "patches": [], "reference_gap_patches": []},
        "started_at": "2026-11-30T00:00:00+00:00", "finished_at": "2026-11-30T00:00:01+00:00", **fields,
    }


def _failure(fingerprint: str) -> dict[str, str]:
    kind, message, frame = fingerprint.split("|")
    return {"type": kind, "message": message, "frame": frame, "fingerprint": fingerprint, "traceback": "",
            "failure_class": "other"}


def test_runs_unmodified_means_the_model_ran_and_nothing_failed_differently(tmp_path: Path) -> None:
    # one architecture passes every core scenario; one passes load only, the rest failing identically on both
    # devices; one fails forward on neuron differently from the CPU
    core = ("load", "forward", "generate", "train")
    same = _failure("ValueError|cannot build inputs|m.py:1")
    records = [_record(f"good::{s}") for s in core]
    records += [_record("load_only::load")] + [
        _record(f"load_only::{s}", outcome="error", failure=same, cpu_outcome="error", cpu_failure=same,
                cpu_verdict="same-failure") for s in core[1:]]
    records += [_record(f"differs::{s}") for s in core if s != "forward"] + [
        _record("differs::forward", outcome="error", failure=_failure("RuntimeError|bad kernel|k.py:2"),
                cpu_outcome="error", cpu_failure=_failure("IndexError|other|i.py:3"), cpu_verdict="different-failure")]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    build_site([tmp_path / "results"], tmp_path / "site", baseline=BASELINE)
    csv = pd.read_csv(tmp_path / "site" / "downloads" / "matrix.csv", index_col="model_type")
    assert csv["runs_unmodified"].to_dict() == {"differs": False, "good": True, "load_only": False}
    assert csv["verdict"].to_dict() == {"differs": "fails-on-neuron", "good": "fully-passes",
                                        "load_only": "fails-on-cpu-too"}
    html = (tmp_path / "site" / "index.html").read_text()
    assert _by_id(html, "headline-title") == (
        "1 of 3 architectures run unmodified on the reference device — CPU kernels, not Trainium, with 0 hf-neuron "
        "patches.")


def test_the_pages_name_the_fallback_list_the_records_say_predicted_them(tmp_path: Path) -> None:
    provenance = {"source": "parmoham-aws/test-repo-parmoham", "commit": "98154b86", "kind": "source"}
    lines = [json.loads(line) for path in sorted((RECORDS / "run-2").glob("*.jsonl"))
             for line in path.read_text().splitlines() if line.strip()]
    with (tmp_path / "records.jsonl").open("w") as out:
        for record in lines:
            out.write(json.dumps({**record, "env": {**record["env"], "fallback_list": provenance}}) + "\n")
    build_site([tmp_path / "records.jsonl"], tmp_path / "site", baseline=BASELINE)
    signals = _by_id((tmp_path / "site" / "index.html").read_text(), "fallback-list")
    assert signals == "source parmoham-aws/test-repo-parmoham, commit 98154b86, kind source"
    assert "predicted from TorchNeuron&#39;s source" in (tmp_path / "site" / "index.html").read_text()


def test_the_index_says_which_release_the_verdicts_predict(tmp_path: Path) -> None:
    label = "torch-neuronx 2.13.3.1 / 2.14.3.1 (Neuron 2.34.0, 2026-11-30)"
    lines = [json.loads(line) for path in sorted((RECORDS / "run-2").glob("*.jsonl"))
             for line in path.read_text().splitlines() if line.strip()]
    for name, env in (("named", {"predicts": label}), ("older", {})):
        with (tmp_path / f"{name}.jsonl").open("w") as out:
            for record in lines:
                out.write(json.dumps({**record, "env": {**record["env"], **env}}) + "\n")
        build_site([tmp_path / f"{name}.jsonl"], tmp_path / name, baseline=BASELINE)
    html = (tmp_path / "named" / "index.html").read_text()
    assert _by_id(html, "predicts").startswith(f"The reference device's verdicts predict {label}: the rules of its")
    assert 'id="predicts"' not in (tmp_path / "older" / "index.html").read_text(), "records that do not say"


def test_the_trend_shows_what_each_scenario_cost_run_by_run(tmp_path: Path) -> None:
    records = [json.loads(line) for line in (RECORDS / "run-2" / "shard-0.jsonl").read_text().splitlines()]
    forward = [r for r in records if r["scenario"] == "forward"]
    assert forward, "the fixture has forward cases"
    earlier = [{**r, "run_id": "earlier", "started_at": "2026-11-20T00:00:00+00:00",
                "finished_at": "2026-11-20T00:00:01+00:00",
                "duration_s": 600.0 if r["scenario"] == "forward" else r["duration_s"]} for r in records]
    (tmp_path / "previous").mkdir()
    (tmp_path / "previous" / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in earlier))
    build_site([tmp_path / "previous"], tmp_path / "site-1", baseline=BASELINE, history_dir=tmp_path / "history")
    build_site([RECORDS / "run-2"], tmp_path / "site", baseline=BASELINE, history_dir=tmp_path / "history")
    costs = _by_id((tmp_path / "site" / "index.html").read_text(), "costs")
    now = sum(json.loads(line)["duration_s"] for shard in (RECORDS / "run-2").glob("*.jsonl")
              for line in shard.read_text().splitlines() if json.loads(line)["scenario"] == "forward") / 60
    assert f"forward {600.0 * len(forward) / 60:.1f} {now:.1f}" in costs, costs  # the earlier run cost more
    assert costs.startswith("Scenario earlier ") and "wall time" in costs


def test_the_cost_trend_names_each_runs_machine_and_warns_when_they_differ(tmp_path: Path) -> None:
    records = [json.loads(line) for line in (RECORDS / "run-2" / "shard-0.jsonl").read_text().splitlines()]
    here = {"cpu_model": "AMD EPYC", "cpus": 2, "cpu_isa": "avx2"}

    def run(run_id: str, day: int, processor: dict[str, object]) -> Path:
        directory = tmp_path / run_id
        directory.mkdir()
        (directory / "r.jsonl").write_text("".join(json.dumps(
            {**r, "run_id": run_id, "env": {**r["env"], **processor}, "started_at": f"2026-11-{day}T00:00:00+00:00",
             "finished_at": f"2026-11-{day}T00:00:01+00:00"}) + "\n" for r in records))
        return directory

    def built(*runs: Path) -> str:
        history = tmp_path / f"history-{len(list(tmp_path.iterdir()))}"
        for i, directory in enumerate(runs):
            build_site([directory], tmp_path / f"site-{i}", baseline=BASELINE, history_dir=history)
        return (tmp_path / f"site-{len(runs) - 1}" / "index.html").read_text()

    same = built(run("a", 20, here), run("b", 21, here))
    assert "machine AMD EPYC, 2 CPUs, avx2 AMD EPYC, 2 CPUs, avx2" in _by_id(same, "costs")
    assert 'id="cost-machines-differ"' not in same
    other = built(run("c", 22, here), run("d", 23, {**here, "cpu_isa": "avx2 avx512f avx512_bf16"}))
    assert "machine AMD EPYC, 2 CPUs, avx2 AMD EPYC, 2 CPUs, avx2 avx512f avx512_bf16" in _by_id(other, "costs")
    assert _by_id(other, "cost-machines-differ").startswith("These runs did not all run on one known machine")
    unknown = built(run("e", 24, {}), run("f", 25, here))
    assert "machine not recorded AMD EPYC, 2 CPUs, avx2" in _by_id(unknown, "costs")
    assert 'id="cost-machines-differ"' in unknown


def test_a_neuron_limitation_is_shown_with_its_fix_and_not_held_against_the_model(tmp_path: Path) -> None:
    """A backbone whose forward hard-wires flex attention (AnyFlowFARTransformer3DModel): its verdict is the device's
    limitation, and its page says what a user does instead."""
    flex = failure("ValueError", "FlexAttention is only supported on CUDA, CPU, HPU, or MPS devices. Found input "
                   "tensors on neuron device.", "flex_attention.py:_validate_device", outcome="error")
    records = [_record("anyflow::load", group="diffusion"),
               _record("anyflow::forward", group="diffusion", outcome="known-failure", failure=flex,
                       cpu_verdict="not-rerun", reason="it hard-wires flex attention",
                       known_failure={"reason": "it hard-wires flex attention"})]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    build_site([tmp_path / "results"], tmp_path / "site", baseline=BASELINE)
    page = (tmp_path / "site" / "arch" / "anyflow.html").read_text()
    assert _by_id(page, "arch-verdict").startswith("neuron limitation")
    assert ("(a limitation of the neuron device, not counted against the model: load the model with "
            "attn_implementation='sdpa'") in _text(page)
