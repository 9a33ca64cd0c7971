"""The sample report the repository keeps: the records of one full run and the history, from which
`hf-neuron report build` regenerates the whole site, and one screenshot; the records name no machine's paths."""

from __future__ import annotations

import gzip
import json
import shutil
import struct
from pathlib import Path

import pytest

from hf_neuron.cli import main
from hf_neuron.matrix.case.capture import relative_paths
from hf_neuron.report.history import RunSummary, read_history
from hf_neuron.report.screenshot import CHROMIUM

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "reports"
RECORDS = REPORTS / "sample" / "records.jsonl.gz"
SCREENSHOT = REPORTS / "sample" / "screenshot.png"
HISTORY = REPORTS / "history"


def _records() -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(RECORDS.read_bytes()).decode().splitlines()]


def _kept(run_id: str) -> RunSummary:
    """The kept history's summary of ``run_id``, as builds read it."""
    (summary,) = [summary for summary in read_history(HISTORY) if summary.run_id == run_id]
    return summary


def _rebuild(records: Path, tmp_path: Path) -> RunSummary:
    """Build the site of ``records`` with a copy of the kept history; the summary the build wrote for its run (as
    builds read it: a summary written before a verdict existed counts none of it)."""
    history = tmp_path / "history"
    shutil.copytree(HISTORY, history)
    assert main(["report", "build", "--results", str(records), "--out", str(tmp_path / "site"),
                 "--history", str(history)]) == 0
    (run_id,) = {record["run_id"] for record in _records()}
    (summary,) = [summary for summary in read_history(history) if summary.run_id == run_id]
    return summary


def test_the_repository_keeps_the_records_the_history_and_one_screenshot() -> None:
    kept = sorted(str(path.relative_to(REPORTS)) for path in REPORTS.rglob("*") if path.is_file())
    (run_id,) = {record["run_id"] for record in _records()}
    assert [name for name in kept if not name.startswith("history/")] == [
        "sample/records.jsonl.gz", "sample/screenshot.png"]
    summaries = [name for name in kept if name.startswith("history/")]
    assert f"history/{run_id}.json" in summaries and len(summaries) >= 2  # the sample's run and what came before
    assert all(name.endswith(".json") for name in summaries)
    assert "](reports/sample/screenshot.png)" in (ROOT / "README.md").read_text()


@pytest.mark.slow
def test_the_site_is_regenerated_from_the_kept_records_and_agrees_with_the_kept_history(tmp_path: Path) -> None:
    records = _records()
    (run_id,) = {record["run_id"] for record in records}
    rebuilt = _rebuild(RECORDS, tmp_path)
    assert rebuilt == _kept(run_id)
    assert rebuilt.architectures == len({record["model_type"] for record in records})
    index = (tmp_path / "site" / "index.html").read_text()
    assert run_id in index and f"{len(records)} records kept, one per case" in index  # every kept record counted


@pytest.mark.slow
def test_a_changed_record_is_caught_by_the_history_check(tmp_path: Path) -> None:
    records = _records()
    passed = next(r for r in records if r["outcome"] == "passed" and r["scenario"] == "forward")
    passed.update(outcome="error", failure={"type": "RuntimeError", "message": "injected", "frame": "x.py:f",
                                            "fingerprint": "0" * 16, "traceback": "", "failure_class": "device-only"})
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in records))
    (run_id,) = {record["run_id"] for record in records}
    assert _rebuild(changed, tmp_path) != _kept(run_id)


def _machine_paths(text: str | None) -> bool:
    """True when ``text`` holds an absolute path (which :func:`relative_paths` would rewrite)."""
    return bool(text) and relative_paths(text, ()) != text


def test_the_kept_records_name_no_machine_paths() -> None:
    assert _machine_paths('File "/home/ci/main/hf_neuron/matrix/execute.py", line 61')  # what it catches
    assert not _machine_paths('File "transformers/modeling_utils.py", line 9, in <path>/x.py')
    for record in _records():
        for failure in (record["failure"], record.get("cpu_failure")):
            for field in ("message", "traceback"):
                assert not _machine_paths((failure or {}).get(field)), (record["case_id"], field)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_kept_screenshot_is_a_png_of_the_top_of_the_index() -> None:
    assert _png_size(SCREENSHOT) == (1280, 1000)
    assert SCREENSHOT.stat().st_size < 300_000


@pytest.mark.browser
def test_the_screenshot_command_takes_one_of_a_built_site(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)")
    site = tmp_path / "site"
    assert main(["report", "build", "--results", str(ROOT / "tests" / "fixtures" / "records" / "run-2"),
                 "--out", str(site)]) == 0
    assert main(["report", "screenshot", "--site", str(site), "--out", str(tmp_path / "shot.png")]) == 0
    assert _png_size(tmp_path / "shot.png") == (1280, 1000)
    assert main(["report", "screenshot", "--site", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x.png")]) == 2
    assert "no report here; build one with `hf-neuron report build`" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
