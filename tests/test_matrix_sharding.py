"""Sharding and merging: shards 1/N..N/N partition the selection deterministically, and merging their results
gives the unsharded run's cases; merging refuses other runs and disagreeing records, and reports missing shards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers_matrix import FAKE, a_record, cli, raw_records

from hf_neuron.errors import InputError
from hf_neuron.matrix.results.merge import merge, missing_shards, write_merged
from hf_neuron.matrix.results.store import Manifest, RecordWriter, write_manifest
from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration, ScenarioSet
from hf_neuron.matrix.selection import Architecture, Selection, Shard, select

CATALOG = [Architecture(f"arch{i}", "decoder") for i in range(7)]
SCENARIOS = ScenarioSet({name: ScenarioDeclaration(name, "core", False, {"transformers": print}, "it does")
                         for name in ("load", "forward", "generate")})
SLICES = Path("/nonexistent/slices.toml")


@pytest.mark.parametrize("count", [1, 2, 3, 5, 21])
def test_shards_partition_the_selection_in_order(count: int) -> None:
    everything = select(CATALOG, SCENARIOS, Selection(), SLICES)
    shards = [select(CATALOG, SCENARIOS, Selection(shard=Shard(i, count)), SLICES) for i in range(1, count + 1)]
    merged = [case for shard in shards for case in shard]
    assert sorted(merged, key=everything.index) == everything and len(merged) == len(everything)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


@pytest.mark.parametrize(
    ("text", "message"),
    [("4/3", "i must be between 1 and N"), ("0/3", "i must be between 1 and N"), ("1/0", "i must be between"),
     ("2", "is not i/N"), ("a/b", "is not i/N"), ("1/3/4", "is not i/N")],
)
def test_a_bad_shard_says_what_to_write(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        Shard.parse(text)


def test_an_empty_shard_is_an_error() -> None:
    with pytest.raises(InputError, match="the selection is empty"):
        select(CATALOG[:1], ScenarioSet({"load": SCENARIOS["load"]}), Selection(shard=Shard(2, 2)), SLICES)


@pytest.mark.slow
def test_three_shards_merged_equal_the_unsharded_run(tmp_path: Path) -> None:
    selection = ["--arch", "alpha", "beta", "delta", "mismatch", "skipper"]
    whole = cli("run", *FAKE, *selection, "--results", str(tmp_path / "whole"))
    assert whole.returncode == 1, whole.stderr  # mismatch::forward fails
    shards = [tmp_path / f"shard{i}" for i in (1, 2, 3)]
    for i, results in enumerate(shards, start=1):
        done = cli("run", *FAKE, *selection, "--shard", f"{i}/3", "--run-id", "nightly-1", "--results", str(results))
        assert done.returncode in (0, 1), done.stdout + done.stderr
    merged = cli("merge", *map(str, shards), "--out", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr
    assert "merged 10 records of run nightly-1 from 3 directories" in merged.stderr

    def cases(results: Path) -> list[tuple[str, str]]:
        return sorted((r["case_id"], r["outcome"]) for r in raw_records(results))

    assert cases(tmp_path / "merged") == cases(tmp_path / "whole")
    manifest = json.loads((tmp_path / "merged" / "run.json").read_text())
    assert manifest["selection"]["shard"] is None and manifest["run_id"] == "nightly-1"
    assert len(manifest["merged_from"]) == 3


def _results(directory: Path, run_id: str, shard: str | None, records: list[tuple[str, str, str]]) -> Path:
    write_manifest(directory, Manifest(run_id, "2025-01-01T00:00:00", {"archs": [], "shard": shard}, "neuron"))
    writer = RecordWriter(directory, "gw0")
    for case_id, outcome, finished_at in records:
        writer.write(a_record(case_id, outcome=outcome, run_id=run_id, finished_at=finished_at))  # type: ignore[arg-type]
    writer.close()
    return directory


def test_merge_drops_duplicates_and_refuses_conflicts(tmp_path: Path) -> None:
    t1, t2 = "2025-01-01T00:00:01+00:00", "2025-01-01T00:00:02+00:00"
    one = _results(tmp_path / "1", "r", "1/2", [("a::load", "passed", t1), ("b::load", "passed", t1)])
    two = _results(tmp_path / "2", "r", "2/2", [("a::load", "passed", t2), ("c::load", "failed", t1)])
    merged = merge([one, two])
    assert [r["case_id"] for r in merged.records] == ["a::load", "b::load", "c::load"]
    assert merged.duplicates == 1 and merged.missing_shards == ()
    assert next(r for r in merged.records if r["case_id"] == "a::load")["finished_at"] == "2025-01-01T00:00:02+00:00"

    three = _results(tmp_path / "3", "r", "2/2", [("b::load", "failed", "2025-01-01T00:00:03+00:00")])
    disagree = r"1 case\(s\) have records that disagree:\n  b::load: passed at 2025-01-01T00:00:01\+00:00"
    with pytest.raises(InputError, match=disagree):
        merge([one, three])
    latest = merge([one, three], on_conflict="latest")
    assert next(r for r in latest.records if r["case_id"] == "b::load")["outcome"] == "failed"
    assert latest.conflicts == ("b::load: passed at 2025-01-01T00:00:01+00:00, failed at 2025-01-01T00:00:03+00:00",)


def test_merge_refuses_other_runs_and_reports_missing_shards(tmp_path: Path) -> None:
    one = _results(tmp_path / "1", "r", "1/3", [("a::load", "passed", "2025-01-01T00:00:01+00:00")])
    other = _results(tmp_path / "2", "s", "2/3", [("b::load", "passed", "2025-01-01T00:00:01+00:00")])
    with pytest.raises(InputError, match=r"different runs \(r, s\): merge the shards of one run"):
        merge([one, other])
    assert merge([one]).missing_shards == ("2/3", "3/3")
    with pytest.raises(InputError, match="is not a results directory"):
        merge([tmp_path / "nothing"])


def test_merge_writes_a_results_directory_once(tmp_path: Path) -> None:
    merged = merge([_results(tmp_path / "1", "r", None, [("a::load", "passed", "2025-01-01T00:00:01+00:00")])])
    write_merged(merged, tmp_path / "out")
    assert [r["case_id"] for r in raw_records(tmp_path / "out")] == ["a::load"]
    with pytest.raises(InputError, match="already holds a run"):
        write_merged(merged, tmp_path / "out")


def test_a_merge_without_a_shard_exits_3_unless_asked_to_publish_a_partial_run(tmp_path: Path) -> None:
    """The old merge only warned and wrote the run, so a nightly without a shard published an inflated headline."""
    one = _results(tmp_path / "1", "r", "1/3", [("a::load", "passed", "2025-01-01T00:00:01+00:00")])
    refused = cli("merge", str(one), "--out", str(tmp_path / "merged"))
    assert refused.returncode == 3, refused.stderr
    assert "run r is incomplete: shards 2/3, 3/3 are missing" in refused.stderr and "--partial" in refused.stderr
    assert not (tmp_path / "merged").exists()
    partial = cli("merge", str(one), "--out", str(tmp_path / "merged"), "--partial")
    assert partial.returncode == 0, partial.stderr
    assert json.loads((tmp_path / "merged" / "run.json").read_text())["missing_shards"] == ["2/3", "3/3"]
    assert missing_shards([tmp_path / "merged"]) == ("2/3", "3/3")  # what the report's banner names
    two = _results(tmp_path / "2", "r", "2/3", [("b::load", "passed", "2025-01-01T00:00:01+00:00")])
    assert missing_shards([one, two, tmp_path / "nothing"]) == ("3/3",)
    three = _results(tmp_path / "3", "r", "3/3", [("c::load", "passed", "2025-01-01T00:00:01+00:00")])
    assert missing_shards([one, two, three]) == ()
    assert cli("merge", str(one), str(two), str(three), "--out", str(tmp_path / "whole")).returncode == 0
