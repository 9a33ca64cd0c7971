"""Time ``hf-neuron report build`` on synthetic records of a full run.

Writes ``--runs`` nightly runs of ``--archs`` architectures x 9 scenarios (with a catalog and a ranking), builds
each run's site in turn against a shared history, and prints the build time of each. The last site is kept under
``--out`` (default: a temporary directory) for a look.

    python scripts/bench_report.py --archs 200 --runs 3 --out /tmp/bench-site
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.compat.catalog import GROUPS, Catalog, CatalogEntry
from hf_neuron.compat.ranking import Ranking
from hf_neuron.matrix.records import SCENARIO_NAMES as SCENARIOS
from hf_neuron.report.site import build_site

BASELINE = Path(__file__).resolve().parent.parent / "compat" / "baselines" / "optimum-neuron-0.4.5.json"
OUTCOMES = (["passed"] * 40 + ["failed"] * 2 + ["error"] * 3 + ["timeout", "crashed"] + ["skipped"] * 2
            + ["known-failure"] * 2)

KNOWN = ["llama", "qwen3", "granite", "mistral", "gemma3", "phi3", "qwen2", "mixtral", "gpt2", "bert"]


def _record(rng: random.Random, run_id: str, day: int, model_type: str, group: str, scenario: str) -> dict[str, Any]:
    outcome = rng.choice(OUTCOMES)
    failing = outcome in ("failed", "error", "timeout", "crashed", "known-failure")
    message = f"aten::op_{rng.randrange(40)} is not implemented for 'neuron'"
    return {
        "schema": 1,
        "run_id": run_id,
        "case_id": f"{model_type}::{scenario}",
        "model_type": model_type,
        "group": group,
        "scenario": scenario,
        "outcome": outcome,
        "reason": "not applicable" if outcome in ("skipped", "known-failure") else None,
        "duration_s": round(rng.uniform(0.2, 90.0), 2),
        "peak_memory_bytes": rng.randrange(10**7, 10**10),
        "parity": {"metric": "max_abs_diff", "value": rng.uniform(0, 1e-3), "tolerance": 1e-4},
        "cpu_outcome": rng.choice(["passed", "passed", "passed", "error"]) if failing else "passed",
        "failure": {
            "type": "NotImplementedError",
            "message": message,
            "frame": "torch/_ops.py:1243",
            "fingerprint": f"NotImplementedError|{message}|torch/_ops.py",
            "traceback": "Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 80 + message,
            "failure_class": "missing-op",
        }
        if failing
        else None,
        "known_failure": {"id": f"{model_type}-{scenario}", "reason": "tracked upstream"}
        if outcome == "known-failure"
        else None,
        "env": {"backend": "reference", "backend_version": "0.1.0", "python": "3.11.7", "torch": "2.13.0",
                "transformers": "5.24.0", "accelerate": "1.15.0", "peft": "0.21.2", "diffusers": "0.42.1",
                "hf_neuron": "0.1.0", "device_count": 2, "host": "bench"},
        "started_at": f"2026-11-{day:02d}T02:00:00+00:00",
        "finished_at": f"2026-11-{day:02d}T03:00:00+00:00",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, help="site directory to keep (default: a temporary directory)")
    args = parser.parse_args()
    archs = (KNOWN + [f"arch_{i:03d}" for i in range(args.archs)])[: args.archs]
    groups = {m: GROUPS[i % len(GROUPS)] for i, m in enumerate(archs)}
    catalog = Catalog("bench", "bench", "bench", tuple(CatalogEntry(m, g, m, m, True, True) for m, g in groups.items()))
    ranking = Ranking({m: i + 1 for i, m in enumerate(archs)}, "hub downloads (synthetic)")
    baseline = load_baseline(BASELINE)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for run in range(1, args.runs + 1):
            rng = random.Random(run)
            run_id = f"bench-{run:02d}"
            results = work / run_id
            results.mkdir()
            lines = [
                json.dumps(_record(rng, run_id, run, m, groups[m], s)) for m in archs for s in SCENARIOS
            ]
            (results / "records.jsonl").write_text("\n".join(lines) + "\n")
            out = args.out if args.out and run == args.runs else work / f"site-{run}"
            started = time.perf_counter()
            result = build_site([results], out, baseline=baseline, catalog=catalog, ranking=ranking,
                                history_dir=work / "history", top_n=100)
            print(f"run {run_id}: {result.records} records, {result.architectures} architectures: "
                  f"built in {time.perf_counter() - started:.2f} s")
        if args.out:
            print(f"site of the last run: {args.out / 'index.html'}")


if __name__ == "__main__":
    main()
