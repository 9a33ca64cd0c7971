"""Upstream test records: their schema and reader, and the comparison of the two devices per architecture."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hf_neuron.upstream.plugin import PluginConfig, make_record, text_failure
from hf_neuron.upstream.records import Device, UpstreamRecord, read_records, validate_record
from hf_neuron.upstream.summary import neuron_only, summarize
from hf_neuron.vocabulary.outcomes import Outcome

_FILE = "tests/models/zebra/test_modeling_zebra.py::ZebraModelTest::"


def _record(test: str, device: Device, outcome: Outcome, *, failure: str | None = None, arch: str = "zebra",
            finished: float = 1.0, listed: bool = False) -> UpstreamRecord:
    config = PluginConfig("run-1", "transformers", arch, device, "results", {"backend": "reference"}, "list.toml")
    return make_record(config, _FILE + test, outcome, reason="why" if outcome in ("skipped", "known-failure") else None,
                       failure=None if failure is None else text_failure(failure, outcome=outcome),
                       entry={"reason": "listed"} if listed else None, started=0.0, finished=finished)


def test_a_record_is_valid_and_plain_json() -> None:
    record = _record("test_a", "neuron", "failed", failure="ValueError: x")
    assert validate_record(json.loads(json.dumps(record))) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"device": "cuda"}, "'device' must be one of cpu, neuron"),
        ({"outcome": "flaky"}, "'outcome' must be one of passed"),
        ({"outcome": "skipped", "reason": None}, "outcome 'skipped' needs a 'reason'"),
        ({"duration_s": -1}, "'duration_s' must be a number >= 0"),
        ({"failure": {"type": "X"}}, "'failure' must be null or an object with string fields type, message"),
        ({"model_type": "../x"}, "'model_type' must be a name"),
        ({"finished_at": "yesterday"}, "'finished_at' must be an ISO-8601 timestamp"),
        ({"schema": 3}, "'schema' must be one of 1, 2"),
    ],
)
def test_a_wrong_field_is_named(change: dict[str, Any], problem: str) -> None:
    record = {**_record("test_a", "cpu", "passed"), **change}
    assert any(p.startswith(problem) for p in validate_record(record)), validate_record(record)


def test_the_reader_skips_bad_lines_and_names_them(tmp_path: Path) -> None:
    good = json.dumps(_record("test_a", "cpu", "passed"))
    (tmp_path / "a.jsonl").write_text(f"{good}\nnot json\n{json.dumps({'schema': 1})}\n\n{good[:40]}")
    records, problems = read_records([tmp_path])
    assert len(records) == 1
    assert [str(p).split(": ", 1)[0] for p in problems] == [f"{tmp_path / 'a.jsonl'}:{n}" for n in (2, 3, 5)]
    assert "missing field(s) run_id" in str(problems[1])


def test_a_neuron_failure_counts_against_neuron_unless_the_cpu_fails_too() -> None:
    records = [
        _record("test_both", "cpu", "failed", failure="AssertionError: 1 != 2"),
        _record("test_both", "neuron", "failed", failure="AssertionError: 1 != 2"),
        _record("test_accel", "cpu", "skipped"),
        _record("test_accel", "neuron", "error", failure="RuntimeError: no kernel for op 7"),
        _record("test_op", "cpu", "passed"),
        _record("test_op", "neuron", "failed", failure="RuntimeError: no kernel for op 9"),
        _record("test_crash", "cpu", "passed"),
        _record("test_crash", "neuron", "crashed", failure="worker died"),
        _record("test_na", "cpu", "passed"),
        _record("test_na", "neuron", "known-failure", failure="InductorError"),
        _record("test_listed", "cpu", "passed"),
        _record("test_listed", "neuron", "passed", listed=True),
    ]
    summary = summarize(records)["zebra"]
    assert (summary.counts["cpu"].passed, summary.counts["cpu"].failed, summary.counts["cpu"].skipped) == (4, 1, 1)
    assert summary.counts["neuron"].failed == 4 and summary.counts["neuron"].not_applicable == 1
    groups = {group.tests: group.message for group in summary.neuron_only}
    assert groups == {("test_accel", "test_op"): "RuntimeError: no kernel for op 7", ("test_crash",): "worker died"}
    assert summary.not_applicable == (("test_na", "why"),)
    assert summary.removable == ("test_listed",)
    assert not summary.ok and summary.ran


def test_a_cpu_timeout_or_another_failure_on_the_cpu_does_not_excuse_neuron() -> None:
    """The matrix's one rule: only the same failure on the CPU excuses neuron's; a timeout never does."""
    records = [
        _record("test_slow", "cpu", "timeout", failure="Timeout (pytest-timeout) after 600 s"),
        _record("test_slow", "neuron", "failed", failure="AssertionError: tensors differ"),
        _record("test_other", "cpu", "failed", failure="KeyError: 'rope_theta'"),
        _record("test_other", "neuron", "failed", failure="AssertionError: tensors differ"),
        _record("test_same", "cpu", "failed", failure="AssertionError: tensors differ"),
        _record("test_same", "neuron", "failed", failure="AssertionError: tensors differ"),
    ]
    summary = summarize(records)["zebra"]
    assert [group.tests for group in summary.neuron_only] == [("test_other", "test_slow")]


def test_a_schema_1_record_reads_with_its_failure_classified(tmp_path: Path) -> None:
    record = _record("test_a", "neuron", "failed",
                     failure="RuntimeError: Could not run 'aten::x' with arguments from the 'neuron' backend")
    old = {**record, "schema": 1, "failure": {k: v for k, v in record["failure"].items() if k != "failure_class"}}
    (tmp_path / "a.jsonl").write_text(json.dumps(old) + "\n")
    records, problems = read_records([tmp_path])
    assert problems == [] and records[0]["failure"]["failure_class"] == "op-missing"


def test_an_architecture_that_ran_nothing_on_the_cpu_does_not_pass() -> None:
    records = [_record("test_a", "cpu", "error", failure="ImportError: x"), _record("test_a", "neuron", "error",
                                                                                    failure="ImportError: x")]
    summary = summarize(records)["zebra"]
    assert summary.neuron_only == () and not summary.ran and not summary.ok


@pytest.mark.parametrize("neuron", [
    ["skipped", "skipped", "skipped"],  # neuron ran nothing: CPU 3 passed, neuron 3 skipped
    ["passed", None, None],  # neuron ran one: CPU 3 passed, neuron 1 passed and 2 missing (a crash cut it short)
])
def test_a_test_the_cpu_passed_and_neuron_did_not_run_is_a_neuron_side_gap(neuron: list[Outcome | None]) -> None:
    """The old summary called both ok: ``ran`` needed CPU passes only, and neuron's failures were all it looked at."""
    tests = ("test_a", "test_b", "test_c")
    records = [_record(test, "cpu", "passed") for test in tests]
    records += [_record(test, "neuron", outcome) for test, outcome in zip(tests, neuron, strict=True) if outcome]
    summary = summarize(records)["zebra"]
    assert summary.ran and summary.neuron_only == () and not summary.ok
    assert summary.neuron_gaps == tuple(test for test, outcome in zip(tests, neuron, strict=True)
                                        if outcome in ("skipped", None))
    # skipped on both sides, or skipped on neuron where the CPU did not pass, is no gap
    same = [_record("test_a", "cpu", "passed"), _record("test_a", "neuron", "passed"),
            _record("test_s", "cpu", "skipped"), _record("test_s", "neuron", "skipped"),
            _record("test_f", "cpu", "failed", failure="X: y"), _record("test_f", "neuron", "skipped")]
    assert summarize(same)["zebra"].ok


@pytest.mark.parametrize(("suite", "reason", "gap"), [
    ("accelerate", "test requires only a CPU", False),  # accelerate's require_cpu: skipped on any accelerator
    ("accelerate", "test requires a GPU", True),  # another skip of neuron's own
    ("peft", "test requires only a CPU", True),  # a suite that declares no CPU-only skip
])
def test_a_cpu_only_tests_skip_on_neuron_is_its_own_applicability(suite: str, reason: str, gap: bool) -> None:
    records = [{**_record("test_a", "cpu", "passed"), "suite": suite},
               {**_record("test_a", "neuron", "skipped"), "suite": suite, "reason": reason}]
    summary = summarize(records)["zebra"]  # type: ignore[arg-type]
    assert summary.neuron_gaps == (("test_a",) if gap else ())
    assert summary.ok is not gap


def test_a_test_recorded_twice_counts_once_by_its_last_record() -> None:
    records = [_record("test_a", "cpu", "passed"), _record("test_a", "neuron", "failed", failure="X", finished=1.0),
               _record("test_a", "neuron", "passed", finished=2.0)]
    summary = summarize(records)["zebra"]
    assert summary.ok and summary.counts["neuron"].total == 1


@pytest.mark.parametrize(
    ("cpu", "neuron", "same"),
    [
        (("failed", "AssertionError: 1 != 2"), ("failed", "AssertionError: 1 != 3"), True),  # numbers normalised
        (("error", "OSError: no hub"), ("failed", "OSError: no hub"), True),
        (("failed", "AssertionError: x"), ("failed", "RuntimeError: no kernel for aten::x"), False),
        (("passed", None), ("failed", "AssertionError: x"), False),
        (("skipped", None), ("failed", "AssertionError: x"), False),
        (("timeout", "Timeout"), ("timeout", "Timeout"), False),  # a timeout never excuses, nor is it excused
        (("failed", "AssertionError: x"), ("crashed", "AssertionError: x"), False),
        (("crashed", "worker died"), ("crashed", "worker died"), False),
    ],
)
def test_only_the_same_failure_on_the_cpu_excuses_a_neuron_failure(
    cpu: tuple[Outcome, str | None], neuron: tuple[Outcome, str | None], same: bool
) -> None:
    cpu_record = _record("test_a", "cpu", cpu[0], failure=cpu[1])
    neuron_record = _record("test_a", "neuron", neuron[0], failure=neuron[1])
    assert neuron_only(neuron_record, cpu_record) is not same
    summary = summarize([cpu_record, neuron_record])["zebra"]
    assert (summary.same_failure, summary.neuron_only_tests) == ((1, 0) if same else (0, 1))


def test_a_unit_whose_tests_need_an_accelerator_ran_when_neuron_passed_them() -> None:
    """accelerate's multi-device tests are all skipped on the CPU: their neuron passes are the evidence."""
    records = [_record("test_multi", "cpu", "skipped"), _record("test_multi", "neuron", "passed")]
    assert summarize(records)["zebra"].ok
    records = [_record("test_multi", "cpu", "skipped"), _record("test_multi", "neuron", "skipped")]
    assert not summarize(records)["zebra"].ran


def test_stand_ins_are_optional_in_a_record_but_a_list_of_ids_when_present() -> None:
    record: dict[str, Any] = dict(_record("test_a", "cpu", "passed"))
    assert record["stand_ins"] == [] and validate_record(record) == []
    del record["stand_ins"]
    assert validate_record(record) == []  # records written before stand-ins existed
    record["stand_ins"] = "peft-internal-testing/x"
    assert validate_record(record) == ["'stand_ins' must be a list of Hub ids"]


def test_an_architecture_is_optional_in_a_record_but_a_name_when_present() -> None:
    record: dict[str, Any] = dict(_record("test_a", "cpu", "passed"))
    assert "architecture" not in record and validate_record(record) == []
    record["architecture"] = "FluxTransformer2DModel"
    assert validate_record(record) == []
    record["architecture"] = "Flux Transformer"
    assert validate_record(record) == ["'architecture' must be a name of letters, digits, '_', '.' and '-'"]


def _reports(message: str, traceback: str) -> list[pytest.TestReport]:
    failure = {"type": "RuntimeError", "message": message, "frame": "t.py:t", "fingerprint": "f",
               "traceback": traceback}
    common = {"nodeid": "tests/test_multidevice.py::T::test_loop", "location": ("t.py", 1, "t"), "keywords": {},
              "longrepr": None, "start": 0.0, "stop": 1.0}
    return [pytest.TestReport(outcome="failed", when="call", user_properties=[("hf_neuron_failure", failure)],
                              **common),
            pytest.TestReport(outcome="passed", when="teardown", **common)]


@pytest.mark.parametrize(("message", "listed"), [
    ("x" * 2000, True),  # a launcher's message, cut at its limit: the reason is in the traceback
    ("'accelerate launch' failed with returncode 1", False),  # a whole message that does not say it: not excused
])
def test_a_listed_failure_is_matched_in_the_traceback_only_past_a_cut_message(message: str, listed: bool) -> None:
    from hf_neuron.compat.expected_failures import EVERY, ExpectedFailure
    from hf_neuron.compat.upstream_not_applicable import NotApplicableList
    from hf_neuron.upstream.plugin import record_of

    config = PluginConfig("run-1", "accelerate", None, "neuron", "results", {"backend": "reference"}, "l.toml",
                          unit_pattern=r"test_(?P<unit>[a-z]+)\.py")
    names = {"suite": ("accelerate",), "test": ("test_loop",), "model_type": (EVERY,)}
    entries = NotApplicableList((ExpectedFailure(names, "needs torchdata", re.compile("StatefulDataLoader is not "
                                                 "available"), patterns=frozenset({"test"})),))
    record = record_of(_reports(message, "ImportError: StatefulDataLoader is not available"), config, entries)
    assert record["outcome"] == ("known-failure" if listed else "failed")
