"""Benchmark the matrix runner: cases per minute with ``-n 1`` and ``-n 2`` (or any worker counts), and the scaling.

Fake cases (default) measure the runner itself: ``--archs`` architectures x 2 scenarios, each case spending
``--work`` seconds of CPU (``--work 0`` leaves only the runner's per-case cost). ``--real`` runs the project's
catalog and scenarios instead; pass a selection after ``--``::

    python scripts/bench_matrix.py                       # 40 fake cases of 0.25 s CPU each
    python scripts/bench_matrix.py --work 0 --archs 200  # the runner's own cost per case
    python scripts/bench_matrix.py --real -- --slice ci --scenario forward

Wall time includes starting the run (controller and workers), as a user sees it. On a shared machine, take the
best of a few runs (``--repeat 3``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import textwrap
from pathlib import Path

from matrix_runs import timed_run  # beside this script

SCENARIO_MODULE = textwrap.dedent(
    """
    import time
    from hf_neuron.matrix.scenarios.contract import ScenarioResult
    from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration

    WORK_S = {work!r}

    def _busy(ctx):
        end = time.process_time() + WORK_S
        while time.process_time() < end:
            pass
        return ScenarioResult.passed()

    SCENARIOS = [
        ScenarioDeclaration(name, "core", False, {{"transformers": _busy}}, f"it spends {{WORK_S}} s of CPU")
        for name in ("load", "forward")
    ]
    """
)


def _fake_suite(directory: Path, archs: int, work: float) -> list[str]:
    entry = {"group": "decoder", "model_class": "Fake", "config_class": "FakeConfig", "builds": True, "runs": True}
    catalog = {"schema": 1, "transformers": "bench", "diffusers": "bench", "generated": "bench",
               "architectures": [{"model_type": f"fake{i:04d}", **entry} for i in range(archs)]}
    (directory / "catalog.json").write_text(json.dumps(catalog))
    (directory / "bench_scenarios.py").write_text(SCENARIO_MODULE.format(work=work))
    return ["--catalog", str(directory / "catalog.json"), "--scenario-module", str(directory / "bench_scenarios.py")]


def _run(selection: list[str], workers: int, results: Path) -> tuple[float, int]:
    wall = timed_run(selection, workers, results, who="bench_matrix")
    cases = sum(1 for path in results.glob("*.jsonl") for line in path.read_text().splitlines() if line.strip())
    return wall, cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="distinct worker counts to compare")
    parser.add_argument("--repeat", type=int, default=1, help="runs per worker count; the fastest counts")
    parser.add_argument("--archs", type=int, default=20, help="fake architectures (2 cases each)")
    parser.add_argument("--work", type=float, default=0.25, help="CPU seconds per fake case")
    parser.add_argument("--real", action="store_true", help="run the project's catalog and scenarios")
    parser.add_argument("selection", nargs="*", help="with --real: `hf-neuron matrix run` selection options")
    args = parser.parse_args()
    if len(set(args.workers)) != len(args.workers) or min(args.workers) < 1 or args.repeat < 1:
        parser.error("--workers takes distinct counts of 1 or more, --repeat a count of 1 or more")
    with tempfile.TemporaryDirectory(prefix="bench-matrix-") as tmp:
        directory = Path(tmp)
        selection = args.selection if args.real else _fake_suite(directory, args.archs, args.work)
        rates = {}
        print(f"{'workers':>7}  {'cases':>5}  {'wall s':>7}  {'cases/min':>9}  {'s/case':>6}")
        for workers in args.workers:
            runs = [_run(selection, workers, directory / f"results-n{workers}-{i}") for i in range(args.repeat)]
            wall, cases = min(runs)
            rates[workers] = cases / wall * 60
            print(f"{workers:>7}  {cases:>5}  {wall:>7.1f}  {rates[workers]:>9.1f}  {wall / cases:>6.3f}")
    base = args.workers[0]
    for workers in args.workers[1:]:
        print(f"scaling -n {workers} / -n {base}: {rates[workers] / rates[base]:.2f}x")


if __name__ == "__main__":
    main()
