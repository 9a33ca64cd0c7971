"""Reading records: shards merge, bad lines are skipped with file:line and what is wrong, duplicates resolve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_neuron.errors import InputError
from hf_neuron.report.load import load_records, validate_record
from hf_neuron.vocabulary.records import SCHEMA_VERSION

RECORDS = Path(__file__).parent / "fixtures" / "records"


def _valid() -> dict:
    return json.loads((RECORDS / "run-1" / "results.jsonl").read_text().splitlines()[0])


def test_shards_of_one_run_merge() -> None:
    loaded = load_records([RECORDS / "run-2"])
    assert loaded.problems == []
    assert len(loaded.records) == 46
    assert len({r["case_id"] for r in loaded.records}) == 46


def test_files_can_be_given_instead_of_directories() -> None:
    loaded = load_records([RECORDS / "run-2" / "shard-0.jsonl", RECORDS / "run-2" / "shard-1.jsonl"])
    assert len(loaded.records) == 46


def test_bad_lines_are_skipped_and_named_while_the_rest_loads() -> None:
    path = RECORDS / "malformed" / "results.jsonl"
    loaded = load_records([path])
    assert sorted(r["case_id"] for r in loaded.records) == ["gpt2::load", "llama::load"]
    problems = {p.line: p.message.removeprefix("not a matrix record: ") for p in loaded.problems}
    assert sorted(problems) == [2, 3, 4, 5, 6, 7]  # line 8 is blank: ignored
    assert problems[2].startswith("not valid JSON: ")
    assert problems[3] == "expected a JSON object, got list"
    outcomes = "passed, failed, error, timeout, crashed, skipped, untested, known-failure"
    assert problems[4].startswith(f"'outcome' must be one of {outcomes}")
    assert '(got "pass")' in problems[4]
    assert problems[5] == "missing field 'duration_s'"
    assert problems[6] == "'case_id' is 'llama::forward', expected 'llama::train'"
    assert problems[7] == "outcome 'skipped' needs a 'reason'"
    assert str(loaded.problems[0]) == f"{path}:2: {problems[2]}"
    assert all(p.message.startswith("not a matrix record: ") for p in loaded.problems[1:]), "each says what it is not"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": SCHEMA_VERSION + 1}, f"'schema' must be one of {', '.join(map(str, range(1, SCHEMA_VERSION + 1)))} "
                                         f"(got {SCHEMA_VERSION + 1})"),
        ({"duration_s": -1}, "'duration_s' must be >= 0 (got -1)"),
        ({"duration_s": float("nan")}, "'duration_s' must be a finite number (got NaN)"),
        ({"peak_memory_bytes": 1.5}, "'peak_memory_bytes' must be a whole number >= 0 (got 1.5)"),
        ({"model_type": "../etc"}, "'model_type' must be a name of letters, digits"),
        ({"env": {"backend": ""}}, "'env.backend' must be a non-empty string (got \"\")"),
        ({"parity": {"metric": "max_abs_diff", "value": "small"}}, "'parity.value' must be a finite number"),
        ({"parity": [1]}, "'parity' must be an object (got [1])"),
        ({"failure": {"type": "E"}}, "missing field 'failure.message'"),
        ({"cpu_outcome": "ok"}, "'cpu_outcome' must be one of passed"),
        ({"cpu_failure": "boom"}, "'cpu_failure' must be an object (got \"boom\")"),
        ({"cpu_failure": {"type": "E", "message": "m", "frame": "f"}}, "missing field 'cpu_failure.fingerprint'"),
        ({"finished_at": "yesterday"}, "'finished_at' must be an ISO-8601 timestamp"),
    ],
)
def test_validation_says_what_is_wrong(change: dict, message: str) -> None:
    record = {**_valid(), **change}
    problems = validate_record(record)
    assert any(message in p for p in problems), problems


def test_unknown_fields_are_allowed() -> None:
    assert validate_record({**_valid(), "config": {"num_hidden_layers": 2}}) == []


def test_the_same_result_seen_twice_is_one_record(tmp_path: Path) -> None:
    first, again = _valid(), {**_valid(), "duration_s": 9.0, "finished_at": "2026-11-27T05:00:00+00:00"}
    (tmp_path / "results.jsonl").write_text(json.dumps(again) + "\n" + json.dumps(first) + "\n")
    loaded = load_records([tmp_path])
    assert [r["duration_s"] for r in loaded.records] == [9.0]  # the one that finished last
    assert (loaded.duplicates, loaded.replaced, loaded.problems) == (1, [], [])


def test_records_of_one_case_that_disagree_are_refused_or_the_latest_kept(tmp_path: Path) -> None:
    first, later = _valid(), {**_valid(), "outcome": "error", "finished_at": "2026-11-27T05:00:00+00:00",
                              "failure": {"type": "E", "message": "m", "frame": "f", "fingerprint": "E|m|f",
                                          "traceback": "", "failure_class": "other"}}
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(later) + "\n" + json.dumps(first) + "\n")
    with pytest.raises(InputError, match=rf"1 case\(s\) have records that disagree:\n  llama::load: passed "
                                         rf"\({path}:2\), then error \({path}:1\)"):
        load_records([tmp_path])
    loaded = load_records([tmp_path], on_conflict="latest")
    assert loaded.problems == []
    assert [r["outcome"] for r in loaded.records] == ["error"]
    assert loaded.replaced == [f"llama::load: passed ({path}:2), then error ({path}:1)"]


def test_a_missing_results_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no-such: no such results directory or file"):
        load_records([tmp_path / "no-such"])


def test_compressed_record_files_load_like_plain_ones(tmp_path: Path) -> None:
    import gzip

    plain = (RECORDS / "run-2" / "shard-0.jsonl").read_bytes()
    (tmp_path / "shard-0.jsonl.gz").write_bytes(gzip.compress(plain))
    (tmp_path / "shard-1.jsonl").write_bytes((RECORDS / "run-2" / "shard-1.jsonl").read_bytes())
    from_dir = load_records([tmp_path])
    assert from_dir.problems == [] and len(from_dir.records) == 46
    from_file = load_records([tmp_path / "shard-0.jsonl.gz"])
    assert from_file.records == load_records([RECORDS / "run-2" / "shard-0.jsonl"]).records


def test_a_damaged_compressed_file_keeps_the_lines_before_the_damage_and_says_where(tmp_path: Path) -> None:
    import gzip

    lines = (RECORDS / "run-2" / "shard-0.jsonl").read_bytes()
    whole = gzip.compress(lines * 40)  # large enough that a cut falls after some complete lines
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    loaded = load_records([cut])
    assert loaded.records, "the lines before the cut are kept"
    (problem,) = [p for p in loaded.problems if "cannot read on" in p.message]
    assert problem.path == cut and problem.line > 1 and "end-of-stream" in problem.message
    garbage = tmp_path / "garbage.jsonl.gz"
    garbage.write_bytes(b"not gzip at all\n")
    (problem,) = load_records([garbage]).problems
    assert (problem.line, problem.message) == (1, "cannot read on from here: Not a gzipped file (b'no')")
