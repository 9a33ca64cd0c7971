"""Resume: a run killed mid-way continues with --resume, losing and duplicating no record; the record files
tolerate a truncated last line; a results directory is never silently mixed with another run."""

from __future__ import annotations

import json
import signal
import tempfile
import time
from pathlib import Path

import pytest
from _helpers_matrix import FAKE, SLOW, a_record, case_counts, cli, cli_process, raw_records

from hf_neuron.errors import InputError
from hf_neuron.matrix.results.store import RecordWriter, open_run, read_records


def _record(case_id: str) -> dict[str, object]:
    return a_record(case_id)


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    results = tmp_path / "results"
    runner = cli_process("run", *SLOW, "--results", str(results), "-n", "1")
    deadline = time.monotonic() + 60
    while len(raw_records(results)) < 4:
        assert time.monotonic() < deadline and runner.poll() is None, "the run should be under way"
        time.sleep(0.05)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    before = raw_records(results)
    time.sleep(1.0)  # a worker outliving its controller would write more records now
    assert raw_records(results) == before
    assert 4 <= len(before) < 16

    # A process killed mid-write leaves a truncated last line: readers skip it, the case runs again.
    unrecorded = next(f"slow{i}::{s}" for i in range(8, 0, -1) for s in ("forward", "load")
                      if f"slow{i}::{s}" not in {r["case_id"] for r in before})
    with open(sorted(results.glob("*.jsonl"))[0], "a") as file:
        file.write(json.dumps(_record(unrecorded))[:25])

    done = cli("run", *SLOW, "--results", str(results), "-n", "1", "--resume")
    assert done.returncode == 0, done.stdout + done.stderr
    counts = case_counts(results)
    assert len(counts) == 16 and set(counts.values()) == {1}
    after = raw_records(results)
    assert all(record in after for record in before)  # the first session's records are kept as they were
    assert len({r["run_id"] for r in after}) == 1
    assert f"[{len(before) + 1:>2}/16]" in done.stderr  # progress counts on from what was recorded
    assert not list(Path(tempfile.gettempdir()).glob(f"hf-neuron-matrix-{runner.pid}-*"))  # its scratch is swept


def test_record_files_are_per_process_and_exclusive(tmp_path: Path) -> None:
    first, second = RecordWriter(tmp_path, "gw0"), RecordWriter(tmp_path, "gw0")
    first.write(_record("a::load"))  # type: ignore[arg-type]
    second.write(_record("b::load"))  # type: ignore[arg-type]
    first.close()
    second.close()
    assert len(list(tmp_path.glob("*.jsonl"))) == 2
    assert {r["case_id"] for r in read_records(tmp_path)} == {"a::load", "b::load"}


def test_a_truncated_last_line_is_skipped_but_a_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "host-gw0-1.jsonl"
    whole = json.dumps(_record("a::load")) + "\n"
    path.write_text(whole + whole[:10])
    assert [r["case_id"] for r in read_records(tmp_path)] == ["a::load"]
    path.write_text(whole[:10] + "\n" + whole)
    with pytest.raises(InputError, match=r"host-gw0-1.jsonl:1: not valid JSON.*was the file edited"):
        read_records(tmp_path)


def test_a_results_directory_holds_one_run(tmp_path: Path) -> None:
    selection = {"archs": ["llama"]}
    manifest, done = open_run(tmp_path, resume=False, run_id=None, selection=selection, device="neuron")
    assert done == set()
    writer = RecordWriter(tmp_path, "gw0")
    writer.write({**_record("llama::load"), "run_id": manifest.run_id})  # type: ignore[typeddict-item]
    writer.close()
    with pytest.raises(InputError, match="pass --resume to continue it, or choose an empty --results"):
        open_run(tmp_path, resume=False, run_id=None, selection=selection, device="neuron")
    with pytest.raises(InputError, match="was started with another selection"):
        open_run(tmp_path, resume=True, run_id=None, selection={"archs": ["gpt2"]}, device="neuron")
    with pytest.raises(InputError, match="was started with another device"):
        open_run(tmp_path, resume=True, run_id=None, selection=selection, device="cpu")
    again, done = open_run(tmp_path, resume=True, run_id=None, selection=selection, device="neuron")
    assert again == manifest and done == {"llama::load"}


@pytest.mark.slow
def test_resuming_a_finished_run_runs_nothing(tmp_path: Path) -> None:
    assert cli("run", *FAKE, "--arch", "alpha", "--results", str(tmp_path)).returncode == 0
    done = cli("run", *FAKE, "--arch", "alpha", "--results", str(tmp_path), "--resume")
    assert done.returncode == 0 and "nothing to run" in done.stderr
    again = cli("run", *FAKE, "--arch", "alpha", "--results", str(tmp_path))
    assert again.returncode == 2 and "pass --resume" in again.stdout + again.stderr
    assert sum(case_counts(tmp_path).values()) == 2
