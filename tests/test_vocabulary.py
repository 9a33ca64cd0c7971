"""The vocabulary every layer shares: the closed sets nest and are labelled, the group registry and its type agree,
older records read in today's shape, the one reader of record files and the one "latest record wins" rule."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, get_args

import pytest
from _helpers_matrix import a_record

from hf_neuron.errors import InputError
from hf_neuron.vocabulary import groups, outcomes
from hf_neuron.vocabulary.failures import failure
from hf_neuron.vocabulary.jsonl import read_jsonl
from hf_neuron.vocabulary.records import SCHEMA_VERSION, latest, one_each, upgrade, validate_record


def test_the_outcome_sets_nest() -> None:
    assert set(outcomes.RESULT_OUTCOMES) <= set(outcomes.ATTEMPT_OUTCOMES) <= set(outcomes.OUTCOMES)
    assert set(outcomes.DID_NOT_WORK) <= set(outcomes.ATTEMPT_OUTCOMES)
    assert set(outcomes.OUTCOMES) - set(outcomes.ATTEMPT_OUTCOMES) == {"known-failure"}
    assert set(outcomes.STATUSES) == {*outcomes.OUTCOMES, outcomes.FAILS_ON_CPU_TOO, outcomes.NEURON_LIMITATION,
                                      outcomes.MISSING, outcomes.NOT_RUN}
    limitation = outcomes.NEURON_LIMITATION  # one name: the case's verdict, the cell's status, the architecture's
    assert limitation in outcomes.VERDICTS and limitation in outcomes.ARCH_VERDICTS


def test_every_status_and_verdict_has_one_label_and_the_cpu_verdict_shares_the_name() -> None:
    for name in (*outcomes.STATUSES, *outcomes.VERDICTS, *outcomes.ARCH_VERDICTS):
        assert outcomes.label(name) != name or name in ("error", "timeout", "untested", "missing"), name
    same = outcomes.FAILS_ON_CPU_TOO
    assert same in outcomes.CPU_VERDICTS and same in outcomes.VERDICTS and same in outcomes.ARCH_VERDICTS
    assert outcomes.label("fails-on-cpu-too") == "fails on the CPU too"


def test_the_group_type_and_the_registry_name_the_same_groups_in_order() -> None:
    assert get_args(groups.Group) == groups.GROUPS
    assert groups.group_name("multimodal") == "image-text" and groups.group_name("image-text") == "image-text"
    assert groups.group_name("vision") is None
    with pytest.raises(InputError,
                       match="unknown group 'vision'; groups are audio, decoder, encoder-decoder, image-text"):
        groups.declaration("vision")
    assert groups.groups_of("diffusers") == ("diffusion",)


def _schema_2(**fields: Any) -> dict[str, Any]:
    record = {**a_record("llava::forward"), "schema": 2, "group": "multimodal", "gap": None, "cpu_failure": None,
              "cpu_verdict": None, "compile": None, "fallback_ops": None, "details": None}
    return {**record, **fields}


def test_a_schema_2_record_reads_in_todays_shape() -> None:
    old_failure = {"type": "ValueError", "message": "m", "frame": "f.py:g", "fingerprint": "abc",
                   "traceback": "", "failure_class": "value-error"}
    cpu = {key: old_failure[key] for key in ("type", "message", "frame", "fingerprint")} | {"failure_class": "x"}
    record = _schema_2(outcome="error", failure=old_failure, cpu_outcome="error", cpu_failure=cpu,
                       cpu_verdict="same-failure")
    assert validate_record(record) == []
    upgraded = upgrade(record)
    assert upgraded["group"] == "image-text", "the group's old name reads as its name now"
    assert upgraded["cpu_verdict"] == "fails-on-cpu-too", "one name for the same failure"
    assert upgraded["scenario_facts"] == {"kind": "core", "trains": False, "decodes": False}, "facts in full"
    assert upgrade(_schema_2(scenario="generate"))["scenario_facts"]["decodes"] is True
    assert upgraded["legs"] is None
    assert upgraded["failure"]["failure_class"] == "other", "a class of before the closed set is classified again"
    assert upgraded["cpu_failure"]["traceback"] == "", "the CPU's failure has the device's failure's shape"
    assert upgraded["schema"] == 2, "it still says what it was written in"


def test_a_schema_1_record_gets_its_cpu_verdict_by_todays_one_rule() -> None:
    oom = {"type": "torch.OutOfMemoryError", "message": "neuron out of memory", "frame": "a.py:b",
           "fingerprint": "1", "traceback": "", "failure_class": "out-of-memory"}
    cpu_oom = {"type": "MemoryError", "message": "cannot allocate", "frame": "c.py:d", "fingerprint": "2"}
    record = a_record("llama::train", outcome="error", failure=oom, cpu_outcome="error", cpu_failure=cpu_oom)
    assert upgrade(record)["cpu_verdict"] == "fails-on-cpu-too", "the same specific class is the same failure"
    timed_out = a_record("llama::train", outcome="timeout", failure={**oom, "failure_class": "timeout"},
                         cpu_outcome="timeout", cpu_failure=cpu_oom)
    assert upgrade(timed_out)["cpu_verdict"] == "different-failure", "a timeout never excuses"
    assert upgrade(a_record("llama::train"))["cpu_verdict"] is None


def test_a_current_record_is_checked_against_the_closed_sets() -> None:
    record = {**_schema_2(), "schema": SCHEMA_VERSION, "group": "image-text", "legs": None, "checkpoint": None,
              "scenario_facts": {"kind": "core", "trains": False, "decodes": True}}
    assert validate_record(record) == []
    assert validate_record({**record, "scenario_facts": {"kind": "core", "trains": False}}) == [
        "missing field 'scenario_facts.decodes'"]
    leg = {"name": "static cache", "outcome": "skipped", "reason": "no static cache", "parity": None, "details": None}
    assert validate_record({**record, "legs": [leg]}) == []
    problems = validate_record({**record, "legs": [{**leg, "outcome": "crashed"}]})
    assert len(problems) == 1 and problems[0].startswith(
        "'legs' must be a list of legs (name, outcome, reason, parity, details)"), "a leg is a scenario's result"
    assert validate_record({**record, "group": "multimodal"}) == [
        "'group' must be one of audio, decoder, encoder-decoder, image-text, diffusion (got \"multimodal\")"]
    assert validate_record({**record, "scenario_facts": {"kind": "main", "trains": False, "decodes": False}}) == [
        "'scenario_facts.kind' must be one of core, extra, variant (got \"main\")"]
    bad_class = {**failure("E", "m", outcome="error"), "failure_class": "oops"}
    assert "'failure.failure_class' must be one of timeout" in validate_record({**record, "failure": bad_class})[0]


def test_compile_facts_say_their_seconds_from_schema_5_and_older_ones_read_as_not_measured() -> None:
    facts = {"backends": ["neuron"], "graphs": 2, "graph_breaks": 0, "break_reasons": [], "recompiles": 1,
             "recompile_reasons": ["0/0: x == 1"]}
    record = {**_schema_2(), "schema": SCHEMA_VERSION, "group": "decoder", "legs": None, "checkpoint": None,
              "scenario_facts": {"kind": "extra", "trains": False, "decodes": False}, "compile": facts}
    assert validate_record(record) == ["missing field 'compile.seconds'"]
    assert validate_record({**record, "compile": {**facts, "seconds": 1.5}}) == []
    assert "compile.seconds" in validate_record({**record, "compile": {**facts, "seconds": -1.0}})[0]
    older = {**record, "schema": 4}
    assert validate_record(older) == [] and upgrade(older)["compile"] == {**facts, "seconds": None}
    assert upgrade({**older, "compile": None})["compile"] is None


def test_a_schema_3_record_reads_as_one_of_one_leg_whose_facts_say_if_it_decodes() -> None:
    record = {**_schema_2(), "schema": 3, "group": "image-text", "scenario": "generate",
              "case_id": "llava::generate", "scenario_facts": {"kind": "core", "trains": False}}
    assert validate_record(record) == []
    upgraded = upgrade(record)
    assert upgraded["legs"] is None and upgraded["scenario_facts"]["decodes"] is True


def _write(path: Path, lines: list[str]) -> Path:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as out:
        out.write("".join(lines))
    return path


def test_the_one_reader_reads_plain_and_compressed_files_strictly_or_leniently(tmp_path: Path) -> None:
    good = json.dumps(a_record("llama::load")) + "\n"
    _write(tmp_path / "a.jsonl", [good, "{not json\n", good.replace("llama", "gpt2")])
    _write(tmp_path / "b.jsonl.gz", [good.replace("llama", "t5")])
    lenient = read_jsonl([tmp_path], validate_record, strict=False)
    assert sorted(r["model_type"] for r in lenient.records) == ["gpt2", "llama", "t5"]
    assert [str(p) for p in lenient.problems] == [f"{tmp_path / 'a.jsonl'}:2: not valid JSON: Expecting property "
                                                  "name enclosed in double quotes (column 2)"]
    with pytest.raises(InputError, match=r"a\.jsonl:2: not valid JSON.*was the file edited"):
        read_jsonl([tmp_path], validate_record, strict=True)


def test_a_line_cut_short_by_a_killed_writer_is_skipped_even_strictly(tmp_path: Path) -> None:
    good = json.dumps(a_record("llama::load")) + "\n"
    _write(tmp_path / "a.jsonl", [good, good[:40]])  # the last line has no newline: its writer died mid-write
    assert len(read_jsonl([tmp_path], validate_record, strict=True).records) == 1
    _write(tmp_path / "a.jsonl", [good[:40] + "\n", good])  # in the middle it is damage, not a kill
    with pytest.raises(InputError):
        read_jsonl([tmp_path], validate_record, strict=True)


def test_the_latest_record_of_a_key_wins_and_disagreements_are_conflicts() -> None:
    first = a_record("llama::load", finished_at="2026-01-01T00:00:01+00:00")
    later = a_record("llama::load", outcome="error", finished_at="2026-01-01T00:00:09+00:00")
    same_time = a_record("llama::load", outcome="crashed", finished_at="2026-01-01T00:00:09+00:00")
    assert latest([later, first], key=lambda r: r["case_id"])["llama::load"]["outcome"] == "error"
    assert latest([first, later, same_time], key=lambda r: r["case_id"])["llama::load"]["outcome"] == "crashed", (
        "on a tie, the one read last")
    each = one_each([first, dict(first), later], key=lambda r: r["case_id"])
    assert each.duplicates == 0 and list(each.conflicts) == ["llama::load"]
    assert one_each([first, dict(first)], key=lambda r: r["case_id"]).duplicates == 1
