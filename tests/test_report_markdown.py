"""The Markdown summary of a run (GitHub's job summary): counts, the architectures x scenarios table, what fails;
text from records stays text; `hf-neuron report summary` prints it and says what it skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_neuron.cli import main
from hf_neuron.report.load import load_records
from hf_neuron.report.markdown import markdown_summary

RECORDS = Path(__file__).parent / "fixtures" / "records"


def _table(text: str) -> list[list[str]]:
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_the_summary_has_the_counts_a_row_per_architecture_and_the_failing_cases() -> None:
    text = markdown_summary(load_records([RECORDS / "run-2"]).records, title="CI slice")
    assert text.startswith("### CI slice\n\nRun nightly-2026-11-28 on the reference backend (CPU kernels, not "
                           "Trainium), profile trainium: 46 cases, 32 pass, 1 n/a, 1 untested, 4 fails on the CPU too, "
                           "1 known, 2 fail, 3 error, 1 timeout, 1 crash.\n")
    table = _table(text)
    assert table[0] == ["architecture", "group", "load", "forward", "generate", "train", "lora", "bf16", "compile",
                        "save", "ddp"]
    assert [row[0] for row in table[2:]] == ["bert", "falcon", "gpt2", "llama", "mistral", "phi3", "qwen3", "xglm"]
    # the CPU fails differently
    assert table[3][:5] == ["falcon", "decoder", "✅ pass", "❌ fail", "⚪ fails on the CPU too"]
    assert table[4][8] == "❌ crash" and table[4][6] == "⚪ untested" and table[2][6] == "—"
    assert "#### Failing on neuron (8)" in text
    assert "- **falcon::forward**: AssertionError: parity 0.5 &gt; 1e-4" in text
    assert "- **qwen3::lora** (known failure): RuntimeError: tied weights not supported" in text
    assert "- **qwen3::compile**: TimeoutError: case exceeded 600 s" in text


def test_text_from_records_cannot_break_the_table_or_add_markup() -> None:
    (record, *_) = load_records([RECORDS / "run-2"]).records
    hostile = {
        **record, "model_type": "evil", "case_id": "evil::forward", "scenario": "forward", "outcome": "error",
        "cpu_outcome": "passed",
        "failure": {"type": "ValueError", "message": "a | b\n[x](javascript:alert(1)) <img src=x> `code` " + "y" * 400,
                    "frame": "f.py:f", "fingerprint": "0" * 16, "traceback": "", "failure_class": "device-only"},
    }
    text = markdown_summary([hostile])
    (line,) = [line for line in text.splitlines() if line.startswith("- **evil")]
    assert line.startswith(r"- **evil::forward**: ValueError: a \| b \[x\]\(javascript:alert\(1\)\) &lt;img src=x&gt; "
                           r"\`code\` yyy")
    assert line.endswith("y…") and len(line) < 300
    assert _table(text)[2] == ["evil", "decoder", "❌ error"]


def test_an_empty_run_and_skipped_lines_are_said() -> None:
    assert markdown_summary([]) == "### Compatibility matrix\n\nNo record.\n"
    loaded = load_records([RECORDS / "malformed"])
    text = markdown_summary(loaded.records, skipped_lines=len(loaded.problems))
    assert "**6 malformed record lines were skipped** (the job's log names them)." in text


def test_the_command_prints_markdown_and_fails_without_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    assert main(["report", "summary", "--results", str(RECORDS / "run-2"), "--title", "slice 1/2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### slice 1/2\n") and "| llama | decoder | ✅ pass |" in out
    empty = tmp_path / "results"
    empty.mkdir()
    (empty / "bad.jsonl").write_text(json.dumps({"schema": 1}) + "\n")
    assert main(["report", "summary", "--results", str(empty)]) == 2
    err = capsys.readouterr().err
    assert f"warning: skipped {empty / 'bad.jsonl'}:1: " in err
    assert f"hf-neuron report: error: no valid record in {empty}" in err
