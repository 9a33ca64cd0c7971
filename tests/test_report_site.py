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
    assert (result.run_id, result.records, result.architectures) == ("nightly-2026-11-28", 40, 7)
    assert result.previous_run_id == "nightly-2026-11-27"
    assert result.problems == []


def test_headline_numbers(site: tuple[Path, BuildResult]) -> None:
    html = _page(site)
    assert _by_id(html, "headline-count") == "5 of 7"
    assert _by_id(html, "baseline-count") == "9"
    assert _by_id(html, "headline-title") == (
        "5 of 7 architectures run unmodified on neuron; Optimum Neuron 0.4.5 supports 9.")
    assert "71%" in html  # 5 of 7
    assert "(+1 since the previous run)" in html  # 4 of 6 before
    assert _by_id(html, "top-count") == "2 of 3"  # llama yes, mistral no, qwen3 yes
    assert "1 catalog architecture had no record in this run" in html
    assert "This run did not run" not in html


def test_a_core_scenario_left_out_of_the_run_is_said(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    lines = (RECORDS / "run-2" / "shard-0.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["scenario"] != "train"]
    (tmp_path / "results" / "slice.jsonl").write_text("\n".join(kept) + "\n")
    build_site([tmp_path / "results"], tmp_path / "site", baseline=BASELINE)
    note = _by_id((tmp_path / "site" / "index.html").read_text(), "core-note")
    assert "each core scenario (load, forward, generate) that its group runs passes" in note
    assert note.endswith("This run did not run train, so it is not counted.")


def test_pass_rates_and_baseline_per_scenario(site: tuple[Path, BuildResult]) -> None:
    html = _page(site)
    rows = {
        m.group(1): " ".join(re.sub(r"<[^>]+>", " ", m.group(2)).split())
        for m in re.finditer(r'<tr data-scenario="(\w+)">(.*?)</tr>', html, re.S)
    }
    assert rows["forward"] == "forward core 5 1 1 0 83% 3 of 7"
    assert rows["generate"] == "generate core 3 2 2 0 60% 3 of 7"
    assert rows["train"] == "train core 6 1 0 0 86% 2 of 7"
    assert rows["lora"] == "lora 1 1 0 5 50% 2 of 7"


def _matrix_rows(html: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r'<tr data-name="([\w.-]+)".*?</tr>', html, re.S)}


def test_table_rows_follow_the_ranking_with_baseline_columns(site: tuple[Path, BuildResult]) -> None:
    rows = _matrix_rows(_page(site))
    assert list(rows) == ["llama", "mistral", "qwen3", "gemma3", "bert", "falcon", "gpt2", "phi3"]
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
    assert cells == ["passed", "cpu-fails", "cpu-fails", "passed"] + ["not-run"] * 5
    assert re.findall(r'<td class="cell s-([\w-]+)"', rows["qwen3"])[4] == "known-failure"


def test_diff_at_the_top(site: tuple[Path, BuildResult]) -> None:
    html = _page(site)
    assert html.index('id="diff-title"') < html.index('id="headline-title"')
    assert _by_id(html, "regression-count") == "2 regressions"
    assert _by_id(html, "new-pass-count") == "4 new passes"
    assert _by_id(html, "regressions") == "mistral generate pass → error gpt2 compile pass → crash"
    assert _by_id(html, "new-passes") == (
        "bert train error → pass falcon load — → pass falcon train — → pass phi3 load error → pass")
    assert "2 other changes" in _text(html)


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
    assert "error" in generate and "1.5 s" in generate and "117.7 MiB" in generate and "value-error" in generate
    assert "pass" in generate and "changed" in generate  # previous run: passed
    detail = html[html.index('id="detail-generate"') :]
    assert "transformers/generation/utils.py:2001" in detail  # top frame
    assert "ValueError|bad token &lt;script&gt;" in detail  # fingerprint
    assert "82 earlier lines left out" in detail  # the traceback is trimmed to its last 40 lines
    assert "hf-neuron matrix run --arch mistral --scenario generate" in detail
    assert _by_id(html, "reproduce").count("hf-neuron matrix run --arch mistral --scenario") == 9


def test_architecture_page_failure_details(site: tuple[Path, BuildResult]) -> None:
    falcon = _page(site, "arch/falcon.html")
    assert "fails on the CPU too: not counted against neuron" in falcon
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


def test_catalog_entry(site: tuple[Path, BuildResult]) -> None:
    html = _page(site, "arch/llama.html")
    assert "Model classLlamaForCausalLM Config classLlamaConfig" in _by_id(html, "catalog-entry")
    assert 'id="catalog-entry"' not in _page(site, "arch/mistral.html")  # not in the catalog
    assert "no record" in _page(site, "arch/gemma3.html")


def test_an_image_text_page_shows_its_tiny_model_from_the_catalog(tmp_path: Path) -> None:
    import dataclasses

    tiny = "text llama: layers 2, width 64; vision clip_vision_model: image 32, patch 4; 0.30M parameters"
    llava = CatalogEntry("llava", "multimodal", "LlavaForConditionalGeneration", "LlavaConfig", True, True, None, tiny)
    catalog = dataclasses.replace(CATALOG, entries=(*CATALOG.entries, llava))
    build_site([RECORDS / "run-2"], tmp_path, baseline=BASELINE, catalog=catalog)
    assert _by_id((tmp_path / "arch" / "llava.html").read_text(), "tiny-model") == tiny
    assert 'id="tiny-model"' not in (tmp_path / "arch" / "llama.html").read_text()  # the text groups record none


def test_downloads(site: tuple[Path, BuildResult]) -> None:
    root = site[0]
    lines = (root / "downloads" / "records.jsonl").read_text().splitlines()
    assert len(lines) == 40 and json.loads(lines[0])["case_id"] == "bert::forward"
    csv = pd.read_csv(root / "downloads" / "matrix.csv", index_col="model_type")
    columns = ["forward", "runs_unmodified", "baseline_inference"]
    assert csv.loc["falcon", columns].tolist() == ["cpu-fails", True, False]
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
    assert "results.jsonl:4: &#39;outcome&#39; must be one of" in html


def test_stale_architecture_pages_are_removed(tmp_path: Path) -> None:
    (tmp_path / "arch").mkdir()
    (tmp_path / "arch" / "gone.html").write_text("old")
    build_site([RECORDS / "run-2"], tmp_path, baseline=BASELINE)
    assert not (tmp_path / "arch" / "gone.html").exists()
    assert len(list((tmp_path / "arch").glob("*.html"))) == 7


def test_records_of_several_runs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"the results hold 2 runs \(nightly-2026-11-27, nightly-2026-11-28\)"):
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
