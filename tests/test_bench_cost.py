"""scripts/bench_cost.py: the cost of a case by scenario and group, read from records (``--from``), each scenario's
seconds per case and compile seconds from the records it read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _helpers import ROOT

from hf_neuron.vocabulary.records import SCHEMA_VERSION, upgrade

RECORDS = Path(__file__).parent / "fixtures" / "records" / "run-2"


def _table(*results: Path) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_cost.py"), "--from", *map(str, results)],
                          capture_output=True, text=True, check=True)
    return done.stdout


def test_the_cost_of_each_scenario_is_read_from_its_records(tmp_path: Path) -> None:
    records = [json.loads(line) for shard in sorted(RECORDS.glob("*.jsonl")) for line in shard.read_text().splitlines()]
    forward = [r for r in records if r["scenario"] == "forward"]
    changed = [{**r, "duration_s": 12.0} if r["scenario"] == "forward" else r for r in records]
    at = next(i for i, r in enumerate(changed) if r["scenario"] == "compile" and r["compile"] is not None)
    measured = dict(upgrade(changed[at]))  # in today's shape, as a case that measured its compile time writes it
    changed[at] = {**measured, "schema": SCHEMA_VERSION, "compile": {**measured["compile"], "seconds": 3.5},
                   "scenario_facts": {**measured["scenario_facts"], "decodes": False}}
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in changed))
    table = _table(tmp_path / "r.jsonl")
    rows = {tuple(line.split()[:2]): line.split() for line in table.splitlines()[1:] if line and ":" not in line}
    assert rows[("forward", "all")][2:4] == [str(len(forward)), "12.00"], table  # s/case follows the records
    assert rows[("forward", "all")][4] == "-", "no forward case measured its compile time"
    compile_row = rows[("compile", "all")]
    assert compile_row[4] == "3.50", "the one case that measured it"
    assert f"recorded: {len(records)} cases" in table


def test_checkpoint_cases_are_costed_apart_from_the_tiny_models() -> None:
    def rows(table: str) -> dict[tuple[str, str], list[str]]:
        found = {}
        for line in table.splitlines()[1:]:
            if line and not line.startswith(("recorded", " ")):
                scenario, rest = line[:18].strip(), line[19:]
                found[(scenario, rest[:24].strip())] = rest[24:].split()
        return found

    alone = rows(_table(RECORDS))
    both = rows(_table(RECORDS, RECORDS.parent / "checkpoints"))
    assert {key: value for key, value in both.items() if not key[1].startswith("checkpoints:")} == alone
    assert both[("forward", "checkpoints: all")][0] == "7"  # the seven checkpoints' forward cases
    assert both[("forward", "checkpoints: audio")][0] == "1"
