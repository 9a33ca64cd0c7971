"""What a matrix case costs, by scenario and group: cases per minute and seconds per case, the device's compile time
apart, and the CPU reference apart.

Measure (the default): run a fixed selection twice, on the device under the ``trainium`` profile (what the nightly
runs) and with the CPU in the device's place (``--device cpu``: both sides of every comparison on the CPU, so a case
costs its CPU reference twice and nothing of the device), then print both side by side::

    python scripts/bench_cost.py                        # slice `cost` of compat/slices.toml, -n 1
    python scripts/bench_cost.py -- --group audio       # another selection (`hf-neuron matrix run` options)
    python scripts/bench_cost.py --checkout ../before -- --arch llama gemma2   # an earlier commit's checkout

Read (``--from``): the same table from records already written, e.g. the sample run or a nightly's results (no CPU
side then)::

    python scripts/bench_cost.py --from reports/sample/records.jsonl.gz

Checkpoint cases (``--models checkpoints``) are listed apart from the tiny models' (``all`` and each group), under
``checkpoints: all`` and ``checkpoints: <group>``: a real-width slice costs far more than a tiny model of its group.

Columns: ``cases``; ``s/case`` on the device (the case's own time, as its record says); ``compile`` the seconds a
case spends in the device's compilations (Dynamo and the backend), over the cases that measured them (records from
schema 5 on, ``-`` before); ``cpu s/case`` the same cases
with the CPU in the device's place; ``device`` the share of the device's case time that the CPU-only run does not
spend (what the device and its compilations add over the CPU reference). The last lines give each run's wall time
and cases per minute. Times are one run's on a shared machine: compare two commits on the same quiet machine.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd
from matrix_runs import timed_run  # beside this script

from hf_neuron.report.load import load_records, split_sources
from hf_neuron.report.tables import case_frame, scenario_costs

DEFAULT_SELECTION = ["--slice", "cost"]
#: The group of a scenario's row over every group (of the tiny models, or of the checkpoints).
_ALL = "all"


def _costs(results: list[Path]) -> pd.DataFrame:
    parts = []
    for prefix, records in zip(("", "checkpoints: "), split_sources(load_records(results).records), strict=True):
        if records:
            cases = case_frame(records).assign(group=lambda c, prefix=prefix: prefix + c["group"])
            parts += [scenario_costs(cases).assign(group=prefix + _ALL).set_index("group", append=True),
                      scenario_costs(cases, by=("scenario", "group"))]
    return pd.concat(parts).sort_index(level=0, sort_remaining=False)


def _cell(value: float, width: int, digits: int = 2) -> str:
    return f"{'-':>{width}}" if pd.isna(value) else f"{value:>{width}.{digits}f}"


def _print(device: pd.DataFrame, cpu: pd.DataFrame | None) -> None:
    header = f"{'scenario':<18} {'group':<24} {'cases':>5} {'s/case':>7} {'compile':>7}"
    print(header + (f" {'cpu s/case':>10} {'device':>6}" if cpu is not None else ""))
    for (scenario, group), row in device.iterrows():
        per_case = row.case_seconds / row.cases
        compile_per_case = row.compile_seconds / row.compile_measured if row.compile_measured else float("nan")
        line = f"{scenario:<18} {group:<24} {int(row.cases):>5} {_cell(per_case, 7)} {_cell(compile_per_case, 7)}"
        if cpu is not None:
            other = cpu.loc[(scenario, group)] if (scenario, group) in cpu.index else None
            cpu_per_case = float("nan") if other is None else other.case_seconds / other.cases
            share = 1 - cpu_per_case / per_case if per_case and not pd.isna(cpu_per_case) else float("nan")
            line += f" {_cell(cpu_per_case, 10)} " + (f"{'-':>6}" if pd.isna(share) else f"{share:>6.0%}")
        print(line)


def _totals(label: str, costs: pd.DataFrame, wall: float | None) -> None:
    overall = costs[costs.index.get_level_values("group").str.endswith(_ALL)]
    cases, case_seconds = int(overall.cases.sum()), float(overall.case_seconds.sum())
    compile_seconds = float(overall.compile_seconds.sum(min_count=1)) if overall.compile_measured.sum() else None
    line = f"{label}: {cases} cases, {case_seconds / 60:.1f} case-minutes"
    if compile_seconds is not None:
        line += f" ({compile_seconds / 60:.1f} compiling)"
    if wall is not None:
        line += f", wall {wall / 60:.1f} min, {cases / wall * 60:.1f} cases/min"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="recorded", nargs="+", type=Path, metavar="RESULTS",
                        help="read these results (directories or record files) instead of running a selection")
    parser.add_argument("-n", "--workers", type=int, default=1, help="matrix workers of each run (default 1)")
    parser.add_argument("--no-cpu", action="store_true", help="measure the device's run only")
    parser.add_argument("--checkout", type=Path, help="run the matrix of another checkout of hf-neuron (its code and "
                        "data, in this environment): the same table for an earlier commit, to compare with")
    parser.add_argument("selection", nargs="*", help="`hf-neuron matrix run` selection options (default: --slice cost)")
    args = parser.parse_args()
    if args.workers < 1:
        parser.error("--workers takes 1 or more")
    if args.recorded:
        costs = _costs(args.recorded)
        _print(costs, None)
        _totals("recorded", costs, None)
        return
    selection = args.selection or DEFAULT_SELECTION
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp:
        wall = timed_run(selection, args.workers, Path(tmp) / "neuron", device="neuron", checkout=args.checkout,
                         who="bench_cost")
        device = _costs([Path(tmp) / "neuron"])
        cpu_wall = None if args.no_cpu else timed_run(selection, args.workers, Path(tmp) / "cpu", device="cpu",
                                                      checkout=args.checkout, who="bench_cost")
        cpu = None if args.no_cpu else _costs([Path(tmp) / "cpu"])
    _print(device, cpu)
    _totals("neuron (trainium profile)", device, wall)
    if cpu is not None:
        _totals("cpu in the device's place", cpu, cpu_wall)


if __name__ == "__main__":
    main()
