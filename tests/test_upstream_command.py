"""``hf-neuron upstream transformers``: a library's own model tests on neuron and on the CPU, one record per test and
device, judged against the CPU and the list of tests not applicable on neuron.

The runs use a small synthetic transformers-like tree (``_helpers_upstream``) with an architecture hf-neuron has
never seen; one slow test runs the real llama tests from ``../shared/upstream/transformers-tests`` (beside the
checkout).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import io
import re
from pathlib import Path

import pytest
from _helpers import SHARED
from _helpers_upstream import ZEBRA_TESTS, write_list, write_tree

from hf_neuron.cli import main
from hf_neuron.compat.ranking import load_ranking
from hf_neuron.upstream import runner
from hf_neuron.upstream.records import read_records, short_name
from hf_neuron.upstream.suites import SUITES
from hf_neuron.vocabulary.failures import fingerprint

SHARED_TESTS = SHARED / "upstream" / "transformers-tests"


def _upstream(*args: str | Path) -> list[str]:
    return ["upstream", "transformers", *map(str, args)]


@pytest.fixture(scope="module")
def zebra_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """One run of the zebra tree with its list of tests not applicable on neuron, two xdist workers."""
    root = tmp_path_factory.mktemp("zebra")
    tree, results = write_tree(root / "tree"), root / "results"
    listed = write_list(root / "not_applicable.toml")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(_upstream("--source", tree, "--arch", "zebra", "--results", results, "-n", "2",
                                "--timeout", "10", "--not-applicable", listed))
    return status, out.getvalue(), results


def test_every_test_gets_one_record_per_device_with_its_outcome(zebra_run: tuple[int, str, Path]) -> None:
    _, _, results = zebra_run
    records, problems = read_records([results])
    assert problems == []
    outcomes = {(short_name(r["test"]), r["device"]): r["outcome"] for r in records}
    assert len(records) == len(outcomes) == 2 * len(ZEBRA_TESTS)
    expected = {(test, device): outcome for test, pair in ZEBRA_TESTS.items()
                for device, outcome in zip(("cpu", "neuron"), pair, strict=True)}
    assert outcomes == expected
    assert {r["env"]["backend"] for r in records} == {"reference"} and len({r["run_id"] for r in records}) == 1


def test_a_failure_carries_the_matrix_fingerprint_of_its_exception(zebra_run: tuple[int, str, Path]) -> None:
    records, _ = read_records([zebra_run[2]])
    (missing,) = [r for r in records if r["device"] == "neuron" and short_name(r["test"]) == "test_neuron_op_missing"]
    failure = missing["failure"]
    assert failure is not None and failure["type"] == "NotImplementedError"
    assert failure["frame"] == "test_modeling_zebra.py:test_neuron_op_missing"
    assert failure["fingerprint"] == fingerprint(failure["type"], failure["message"], failure["frame"])
    assert missing["reason"] == "zebra stripes have no neuron kernel"
    crashes = {r["failure"]["fingerprint"] for r in records if r["outcome"] == "crashed" and r["failure"]}
    assert len(crashes) == 1  # a dead worker is one failure, whichever worker and test


def test_listed_failures_are_excused_and_a_listed_pass_is_removable(zebra_run: tuple[int, str, Path]) -> None:
    _, out, _ = zebra_run
    assert "  cpu            6       4        1               -" in out
    assert "  neuron         5       4        0               2" in out
    assert "not applicable on neuron (1): zebra stripes have no neuron kernel" in out
    assert "listed as not applicable but passes on neuron (take it off the list): test_listed_but_passes" in out


def test_a_timeout_or_a_crash_is_never_excused_by_the_cpu(zebra_run: tuple[int, str, Path]) -> None:
    """The two failures the CPU has too are excused (same fingerprint); the timeout and the crash it has too are not."""
    status, out, _ = zebra_run
    assert status == 1, out
    assert "failing on the CPU the same way: 2" in out
    assert "neuron-only failures: 2" in out
    assert "Failed: Timeout (>10.0s) from pytest-timeout." in out and "\n      test_hangs\n" in out
    assert "WorkerCrashed: the worker process running the test died" in out and "\n      test_crashes\n" in out
    row = "  zebra            6      4       1             5      4       0    2     2     2         0  neuron-only"
    assert row in out


def test_the_tolerance_row_makes_a_neuron_only_sdpa_failure_pass(zebra_run: tuple[int, str, Path]) -> None:
    """Without the backend's tolerance row the neuron run gets atol 1e-7 (see test_testing_plugins)."""
    records, _ = read_records([zebra_run[2]])
    sdpa = {r["device"]: r["outcome"] for r in records if "sdpa" in r["test"]}
    assert sdpa == {"cpu": "passed", "neuron": "passed"}


def test_an_unlisted_neuron_only_failure_and_a_file_that_runs_nothing_fail_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = write_tree(tmp_path / "tree", broken=True)
    empty = write_list(tmp_path / "empty.toml", "")
    status = main(_upstream("--source", tree, "--arch", "zebra", "broken", "--results", tmp_path / "results",
                            "--not-applicable", empty, "-k", "not hangs"))
    out = capsys.readouterr().out
    assert status == 1
    assert "neuron-only failures: 2" in out  # the missing op and the Inductor test, one fingerprint each
    assert "NotImplementedError: Could not run 'aten::zebra_stripes'" in out
    assert "RuntimeError: torch._inductor.exc.InductorError" in out
    assert "no test passed on the CPU (nor on neuron where the CPU skipped every test): nothing here says" in out
    assert "neuron-only failures (or tests the CPU passed that neuron did not run) in zebra, broken" in out
    broken = [r for r in read_records([tmp_path / "results"])[0] if r["model_type"] == "broken"]
    assert {(r["device"], r["outcome"]) for r in broken} == {("cpu", "error"), ("neuron", "error")}
    assert all("BrokenModelThatDoesNotExist" in (r["failure"] or {}).get("traceback", "") for r in broken)


def test_a_crash_that_cuts_the_neuron_run_short_is_recorded_and_what_it_left_unrun_never_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without xdist workers (-n 1 runs pytest -n 0) a native crash ends the neuron run: the old runner recorded
    nothing more and the old summary called okapi a pass (CPU 3 passed, neuron 1 passed and 2 missing)."""
    tree = write_tree(tmp_path / "tree", crashing=True)
    empty = write_list(tmp_path / "empty.toml", "")
    status = main(_upstream("--source", tree, "--arch", "okapi", "--results", tmp_path / "results", "-n", "1",
                            "--not-applicable", empty))
    captured = capsys.readouterr()
    assert status == 1, captured.out
    assert "okapi on neuron: 1 passed, 1 crashed" in captured.err and "pytest's exit status 3" in captured.err
    records = read_records([tmp_path / "results"])[0]
    (crash,) = [r for r in records if r["outcome"] == "crashed"]
    assert crash["device"] == "neuron"
    assert "pytest did not finish on neuron (exit status 3" in crash["failure"]["message"]
    assert "passed on the CPU, not run on neuron (no record, or skipped on neuron only): test_b_crashes_on_neuron, " \
           "test_c_after_the_crash" in " ".join(captured.out.split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arch", "quagga"], "--arch quagga: no tests/models/<arch>/test_modeling_<arch>.py in .* "
                               r"\(it has tests for: zebra\)"),
        (["--arch", "zebra", "--not-applicable", "{bad_list}"], r"bad\.toml:1: not valid TOML"),
        (["--arch", "zebra", "-n", "0"], "-n must be at least 1"),
    ],
)
def test_bad_input_exits_2_saying_what_and_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    tree = write_tree(tmp_path / "tree")
    bad_list = write_list(tmp_path / "bad.toml", "[[not_applicable]\n")
    args = [arg.format(bad_list=bad_list) for arg in args]
    assert main(_upstream("--source", tree, "--results", tmp_path / "results", *args)) == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-neuron upstream: error: ")
    assert re.search(message, err), err
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").rglob("*.jsonl"))


def test_a_missing_source_tree_or_one_without_model_tests_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_upstream("--source", tmp_path / "nowhere", "--arch", "llama")) == 2
    assert f"--source {tmp_path / 'nowhere'}: no such directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(_upstream("--source", tmp_path / "empty", "--arch", "llama")) == 2
    assert "no tests/models in it: is it a transformers checkout?" in capsys.readouterr().err


def test_results_holding_a_run_are_never_mixed_with_another(
    zebra_run: tuple[int, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = write_tree(tmp_path / "tree")
    before = sorted(p.read_bytes() for p in zebra_run[2].glob("*.jsonl"))
    assert main(_upstream("--source", tree, "--arch", "zebra", "--results", zebra_run[2])) == 2
    assert f"already holds {2 * len(ZEBRA_TESTS)} upstream records of run" in capsys.readouterr().err
    assert sorted(p.read_bytes() for p in zebra_run[2].glob("*.jsonl")) == before


def test_without_a_neuron_device_nothing_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_NEURON_EMULATOR", "0")
    tree = write_tree(tmp_path / "tree")
    assert main(_upstream("--source", tree, "--arch", "zebra", "--results", tmp_path / "r")) == 2
    assert "no neuron device: install torch-neuronx on Trainium" in capsys.readouterr().err


def _no_remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote = dataclasses.replace(SUITES["transformers"], git_url=(tmp_path / "no-such-remote").as_uri())
    monkeypatch.setitem(SUITES, "transformers", remote)  # type: ignore[index]


def test_fetch_without_network_says_to_pass_a_source_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _no_remote(tmp_path, monkeypatch)
    assert main(_upstream("--fetch", "--cache", tmp_path / "cache", "--arch", "zebra")) == 2
    err = capsys.readouterr().err
    assert "--fetch: could not clone transformers v" in err and "pass --source DIR" in err
    assert not list((tmp_path / "cache").glob("*transformers-*"))  # nothing half-cloned is kept as a tree


def test_fetch_reuses_the_tree_already_in_the_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _no_remote(tmp_path, monkeypatch)
    version = importlib.metadata.version("transformers")
    write_tree(tmp_path / "cache" / f"transformers-v{version}")
    assert main(_upstream("--fetch", "--cache", tmp_path / "cache", "--arch", "quagga")) == 2
    assert "(it has tests for: zebra)" in capsys.readouterr().err  # read from the cache, not cloned


def test_top_takes_the_best_ranked_architectures_that_have_tests(tmp_path: Path) -> None:
    ranked = [entry.model_type for entry in load_ranking()[:4]]
    for arch in (ranked[0], ranked[3]):
        folder = arch.replace("-", "_")
        write_list(tmp_path / "tests" / "models" / folder / f"test_modeling_{folder}.py", "")
    notes: list[str] = []
    assert runner._top(tmp_path, 4, notes.append) == (ranked[0], ranked[3])
    assert notes == [f"top 4 of the ranking: no model tests in {tmp_path} for {ranked[1]}, {ranked[2]} (left out)"]


def test_top_without_any_ranked_architecture_in_the_tree_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = write_tree(tmp_path / "tree")
    assert main(_upstream("--source", tree, "--top", "2", "--results", tmp_path / "r")) == 2
    assert "--top 2: none of " in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_TESTS / "tests" / "models" / "llama").is_dir(), reason="no upstream llama tests here")
def test_the_real_llama_tests_pass_on_neuron_where_they_pass_on_the_cpu(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The real file, on the tests the plug-ins and the list are for (the whole file takes minutes)."""
    selection = ("sdpa_inference_00 or sdpa_inference_05 or flex_attention or compile_model_forward "
                 "or test_model_is_small")
    status = main(_upstream("--source", SHARED_TESTS, "--arch", "llama", "--results", tmp_path / "r", "-k",
                            selection))
    out = capsys.readouterr().out
    assert status == 0, out
    records, _ = read_records([tmp_path / "r"])
    neuron = {short_name(r["test"]): r["outcome"] for r in records if r["device"] == "neuron"}
    assert neuron["test_eager_matches_sdpa_inference_00_fp16_pad_left_sdpa_kernels"] == "passed"
    assert neuron["test_flex_attention_with_grads"] == "passed"  # 2.33 and later run FlexAttention
    assert neuron["test_generate_compile_model_forward_fullgraph"] == "passed"  # the compile-config patches
