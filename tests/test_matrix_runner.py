"""The runner end to end: one architecture aborts, one hangs, one is stuck in native code, one raises; each is
recorded for what it did and the others pass; known failures apply; the exit status comes from the records."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest
from _helpers_matrix import FAKE, FIXTURES, case_counts, cli, raw_records

from hf_neuron.vocabulary.outcomes import OUTCOMES
from hf_neuron.vocabulary.records import SCHEMA_VERSION, Record, validate_record

pytestmark = pytest.mark.slow

KNOWN = """
[[known_failure]]
model_type = "raises"
scenario = "forward"
reason = "no kernel for the fake op"
upstream = "https://github.com/example/fake/issues/1"
message = "Could not run 'aten::_fake_op'"
sources = ["pre-release-tree"]
releases = ["pre-release", "2.33", "2.34"]
unconfirmed = "a fake operator"

[[known_failure]]
model_type = "alpha"
scenario = "*"
reason = "used to fail"
upstream = "https://github.com/example/fake/pull/2"
sources = ["evrf060"]
releases = ["2.34"]
"""


@dataclasses.dataclass(frozen=True)
class Run:
    done: subprocess.CompletedProcess[str]
    results: Path
    records: dict[str, Record]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One run of the fake matrix with two workers and a 1 s case timeout."""
    tmp = tmp_path_factory.mktemp("run")
    known = tmp / "known.toml"
    known.write_text(KNOWN)
    results = tmp / "results"
    done = cli("run", *FAKE, "--results", str(results), "--timeout", "1", "-n", "2", "--known-failures", str(known))
    return Run(done, results, {r["case_id"]: r for r in raw_records(results)})


def test_every_case_has_exactly_one_record(run: Run) -> None:
    listed = cli("list", *FAKE).stdout.split()
    assert sorted(run.records) == sorted(listed) and len(listed) == 24
    assert set(case_counts(run.results).values()) == {1}


def test_the_well_behaved_pass(run: Run) -> None:
    records = run.records
    for case_id in ("beta::load", "beta::forward", "delta::forward", "segfault::load", "stuck::load"):
        assert records[case_id]["outcome"] == "passed", records[case_id]
        assert records[case_id]["failure"] is None and records[case_id]["cpu_outcome"] is None


def test_an_abort_is_recorded_as_crashed_with_its_frame(run: Run) -> None:
    record = run.records["segfault::forward"]
    assert record["outcome"] == "crashed"
    failure = record["failure"]
    assert failure["type"] == "WorkerCrash" and "SIGABRT" in failure["message"]
    assert failure["frame"] == "fake_scenarios.py:forward" and failure["failure_class"] == "crash"
    assert "Fatal Python error: Aborted" in failure["traceback"]


def test_a_hang_is_interrupted_and_recorded_as_timeout(run: Run) -> None:
    record = run.records["hang::forward"]
    assert record["outcome"] == "timeout" and record["cpu_outcome"] == "passed"
    assert record["failure"]["frame"] == "fake_scenarios.py:forward"
    assert record["failure"]["failure_class"] == "timeout" and "time.sleep(3600)" in record["failure"]["traceback"]
    assert 1.0 <= record["duration_s"] < 10


def test_failures_name_files_without_this_machines_paths(run: Run) -> None:
    failures = [r["failure"] for r in run.records.values() if r["failure"]]
    assert {f["type"] for f in failures} >= {"WorkerCrash", "CaseTimeout"}
    for failure in failures:
        for path in (str(FIXTURES.parent.parent.parent), str(run.results)):
            assert path not in failure["traceback"] and path not in failure["message"], failure
    assert any('File "tests/fixtures/matrix/fake_scenarios.py"' in f["traceback"] for f in failures)


def test_a_case_stuck_in_native_code_ends_its_worker_and_is_a_timeout(run: Run) -> None:
    record = run.records["stuck::forward"]
    assert record["outcome"] == "timeout"
    assert "its worker was ended" in record["failure"]["message"]
    assert record["failure"]["frame"] == "fake_scenarios.py:forward"


def test_an_exception_is_an_error_with_a_fingerprint_or_a_known_failure(run: Run) -> None:
    record = run.records["raises::forward"]
    assert record["outcome"] == "known-failure" and record["reason"] == "no kernel for the fake op"
    assert record["known_failure"]["upstream"] == "https://github.com/example/fake/issues/1"
    failure = record["failure"]
    assert failure["type"] == "RuntimeError" and failure["frame"] == "fake_scenarios.py:forward"
    assert failure["failure_class"] == "op-missing" and len(failure["fingerprint"]) == 16
    assert record["cpu_outcome"] == "passed"


def test_a_known_failure_that_passes_keeps_passed_and_is_reported(run: Run) -> None:
    done, records = run.done, run.records
    assert records["alpha::forward"]["outcome"] == "passed"
    assert records["alpha::forward"]["known_failure"]["reason"] == "used to fail"
    assert "known failure now passes, take it off compat/known_failures.toml: alpha::forward" in done.stdout


def test_parity_and_cpu_outcomes_are_classified(run: Run) -> None:
    records = run.records
    mismatch = records["mismatch::forward"]
    assert mismatch["outcome"] == "failed" and mismatch["parity"]["value"] == 0.5
    assert mismatch["failure"]["failure_class"] == "numerics-mismatch"
    broken = records["cpubroken::forward"]
    assert broken["outcome"] == "error" and broken["cpu_outcome"] == "error"
    fields = ("type", "message", "frame", "fingerprint", "failure_class")
    assert {key: broken["cpu_failure"][key] for key in fields} == {key: broken["failure"][key] for key in fields}
    assert "hidden_size 7" in broken["cpu_failure"]["traceback"], "the CPU's failure has the device's shape"
    assert broken["cpu_verdict"] == "fails-on-cpu-too" and broken["failure"]["failure_class"] == "other"
    raises = records["raises::forward"]
    assert raises["cpu_failure"] is None and raises["cpu_verdict"] == "passes"  # the CPU passed
    differs = records["cpudiffers::forward"]
    assert differs["outcome"] == "error" and differs["cpu_verdict"] == "different-failure"
    assert differs["cpu_failure"]["type"] == "ValueError" and differs["failure"]["type"] == "KeyError"
    gap = records["gapper::forward"]
    assert (gap["outcome"], gap["gap"], gap["cpu_outcome"]) == ("untested", "inputs", None)
    assert gap["reason"] == "GapperModel.forward needs 'audio_features', which the harness cannot build"
    skipped = records["skipper::forward"]
    assert skipped["outcome"] == "skipped" and skipped["reason"] == "no language-model head"


def test_records_follow_the_schema(run: Run) -> None:
    records = run.records
    assert {r["run_id"] for r in records.values()} == {next(iter(records.values()))["run_id"]}
    for record in records.values():
        assert set(record) == set(Record.__annotations__)
        assert record["outcome"] in OUTCOMES and record["schema"] == SCHEMA_VERSION and validate_record(record) == []
        assert record["env"]["torch"] and record["env"]["backend"] == "reference"
        assert record["env"]["profile"] == "trainium"  # the default profile
        assert "torch.integer-histc-on-neuron" in record["env"]["patches"]  # the run measures the patched stack
        assert record["env"]["reference_gap_patches"] == ["torch.integer-histc-on-neuron"]
        assert record["group"] == ("encoder-decoder" if record["model_type"] == "delta" else "decoder")


def test_exit_status_and_summary_come_from_the_records(run: Run) -> None:
    done = run.done
    assert done.returncode == 1, done.stderr  # hang, stuck, segfault, mismatch and cpudiffers fail on the device
    assert ("24 cases: 15 passed, 1 failed, 2 error, 2 timeout, 1 crashed, 1 skipped, 1 untested, 1 known-failure"
            in done.stdout)
    assert "failing the same way on the CPU (not held against the device): 1" in done.stdout
    assert "untested (harness gaps to close): 1, by gap: inputs 1" in done.stdout


def test_progress_is_one_line_per_case_without_a_terminal(run: Run) -> None:
    done = run.done
    lines = [line for line in done.stderr.splitlines() if line.startswith("[")]
    total = len(run.records)
    assert len([line for line in lines if f"/{total}] " in line]) == total
    assert any(line.startswith(f"[{total}/{total}] ") and "eta 0:00:00" in line for line in lines)


def test_only_passing_cases_exit_zero(tmp_path: Path) -> None:
    done = cli("run", *FAKE, "--arch", "alpha", "beta", "--results", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 cases: 4 passed" in done.stdout


def test_an_empty_selection_exits_nonzero_with_a_message(tmp_path: Path) -> None:
    done = cli("run", *FAKE, "--arch", "delta", "--group", "decoder", "--results", str(tmp_path / "r"))
    assert done.returncode == 2
    assert "the selection is empty" in done.stderr
    assert not (tmp_path / "r").exists()


def test_without_workers_is_refused(tmp_path: Path) -> None:
    done = cli("run", *FAKE, "-n", "0", "--results", str(tmp_path))
    assert done.returncode == 2 and "use -n 1 or more" in done.stderr


def test_a_neuron_run_without_a_neuron_backend_is_refused(tmp_path: Path) -> None:
    done = cli("run", *FAKE, "--arch", "alpha", "--results", str(tmp_path / "r"), env={"HF_NEURON_EMULATOR": None})
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("hf-neuron matrix: error: no neuron device: install torch-neuronx on Trainium, or set "
            "HF_NEURON_EMULATOR=1 for the reference device") in done.stderr
    assert not (tmp_path / "r").exists()
    baseline = cli("run", *FAKE, "--arch", "alpha", "--device", "cpu", "--results", str(tmp_path / "cpu"),
                   env={"HF_NEURON_EMULATOR": None})
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    assert {r["env"]["backend"] for r in raw_records(tmp_path / "cpu")} == {"none"}


def test_an_architecture_that_does_not_build_is_recorded_as_untested(tmp_path: Path) -> None:
    catalog = json.loads((FIXTURES / "catalog.json").read_text())
    catalog["architectures"][0].update(builds=False, runs=False, reason="build: TypeError: bad tiny config")
    (tmp_path / "catalog.json").write_text(json.dumps(catalog))
    fake = [FAKE[0], str(tmp_path / "catalog.json"), *FAKE[2:]]
    done = cli("run", *fake, "--arch", "alpha", "beta", "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stdout + done.stderr
    records = {r["case_id"]: r for r in raw_records(tmp_path / "r")}
    assert sorted(records) == ["alpha::forward", "alpha::load", "beta::forward", "beta::load"]
    for case_id in ("alpha::load", "alpha::forward"):
        assert records[case_id]["outcome"] == "untested" and records[case_id]["gap"] == "tiny-build"
        assert records[case_id]["reason"] == (
            "the tiny model does not build on the CPU: build: TypeError: bad tiny config")
        assert records[case_id]["cpu_outcome"] is None and records[case_id]["failure"] is None
    assert "4 cases: 2 passed, 2 untested" in done.stdout


def test_an_untested_case_is_no_pass_in_pytests_own_output(tmp_path: Path) -> None:
    """gapper's forward is untested (an input the harness cannot build): pytest's line counted it as passed."""
    done = cli("run", *FAKE, "--arch", "gapper", "--scenario", "forward", "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 cases: 1 untested" in done.stdout
    assert "1 skipped in " in done.stdout and " passed in " not in done.stdout, done.stdout  # pytest's last line
