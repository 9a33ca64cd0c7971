"""`hf-neuron report build`: arguments, messages and exit codes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _helpers_report import a_catalog

from hf_neuron.cli import main
from hf_neuron.compat.catalog import write_catalog

RECORDS = Path(__file__).parent / "fixtures" / "records"
BASELINE = Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json"


def _build(tmp_path: Path, *extra: str, results: str = "run-2") -> int:
    return main(
        ["report", "build", "--results", str(RECORDS / results), "--out", str(tmp_path / "site"),
         "--baseline", str(BASELINE), *extra]
    )


def test_build_writes_the_site_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _build(tmp_path, "--history", str(tmp_path / "history")) == 0
    out = capsys.readouterr().out
    index = tmp_path / "site" / "index.html"
    assert out.startswith(f"built {index} from 46 records (8 architectures) of run nightly-2026-11-28")
    assert (tmp_path / "site" / "arch" / "falcon.html").is_file()
    assert (tmp_path / "history" / "nightly-2026-11-28.json").is_file()


def test_several_result_paths_are_one_run(tmp_path: Path) -> None:
    shards = [str(RECORDS / "run-2" / name) for name in ("shard-0.jsonl", "shard-1.jsonl")]
    assert main(["report", "build", "--results", *shards, "--out", str(tmp_path), "--baseline", str(BASELINE)]) == 0


def test_skipped_lines_are_warned_with_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _build(tmp_path, results="malformed") == 0
    err = capsys.readouterr().err
    path = RECORDS / "malformed" / "results.jsonl"
    assert f"warning: skipped {path}:3: not a matrix record: expected a JSON object, got list" in err
    assert err.count("warning: skipped") == 6


def test_catalog_and_ranking_files(tmp_path: Path) -> None:
    catalog, ranking = tmp_path / "catalog.json", tmp_path / "ranking.csv"
    write_catalog(a_catalog(llama="decoder"), catalog)
    ranking.write_text("model_type,rank,source\nphi3,1,hub downloads\n")
    assert _build(tmp_path, "--catalog", str(catalog), "--ranking", str(ranking), "--top", "1") == 0
    index = (tmp_path / "site" / "index.html").read_text()
    text = " ".join(re.sub("<[^>]+>", "", index).split())
    assert "0 of the top 1 architectures by the ranking (hub downloads)" in text
    assert "LlamaForCausalLM" in (tmp_path / "site" / "arch" / "llama.html").read_text()


def test_default_compat_files_are_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no compat/catalog.json, no compat/ranking.csv here
    assert _build(tmp_path) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--top", "0"], "--top 0: give at least 1"),
        (["--ranking", "missing.csv"], "missing.csv: no such file"),
        (["--baseline", "missing.json"], "missing.json: no such file"),
    ],
)
def test_bad_inputs_exit_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert _build(tmp_path, *args) == 2
    assert message in capsys.readouterr().err


def test_missing_results_exit_2_in_every_report_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--results", str(tmp_path / "none"), "--out", str(tmp_path), "--baseline", str(BASELINE)]
    assert main(["report", "build", *args]) == 2
    assert "hf-neuron report: error: " in (err := capsys.readouterr().err)
    assert "none: no such results directory or file" in err
    assert main(["report", "summary", "--results", str(tmp_path / "none")]) == 2
    assert "none: no such results directory or file" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", "summary", "--results", str(empty)]) == 2
    assert "no valid record in" in capsys.readouterr().err
    assert main(["report", "screenshot", "--site", str(tmp_path / "nosite"), "--out", str(tmp_path / "a.png")]) == 2
    assert "nosite" in capsys.readouterr().err
