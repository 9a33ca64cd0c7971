"""Make ``hf_neuron/device/trainium_ops.toml`` say what a Trainium run measured: the operators run on the CPU.

On the real backend every matrix record's ``fallback_ops`` is measured (the backend's ``get_fallback_ops()``); this
collects them over one run and prints the data file with a ``[measured]`` table (the run, its dates, TorchNeuron's
version, the cases, each operator with its calls) and ``kind = "measured"``, or writes it with ``--write``. From then on
the reference device predicts exactly those fallbacks; the file's native list, read from TorchNeuron's source, still
says which operators the device takes the real backend's routes for. Records of the reference device are refused:
their fallback operators are the prediction itself. Usage::

    python scripts/fallback_ops_from_run.py trainium/20261201/merged [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from pathlib import Path

from hf_neuron.device import trainium_ops
from hf_neuron.errors import InputError
from hf_neuron.report.load import load_records
from hf_neuron.report.tables import run_info


def measured(results: list[Path], current: trainium_ops.TrainiumOps) -> trainium_ops.TrainiumOps:
    """``current`` with the fallbacks measured by the records in ``results`` (one run of the real backend)."""
    records = load_records(results).records
    if not records:
        raise InputError(f"no valid record in {', '.join(map(str, results))}")
    backends = sorted({str(r["env"].get("backend")) for r in records})
    if backends != ["real"]:
        raise InputError(f"the records come from the {', '.join(backends)} backend: only a run on real Trainium "
                         "(env.backend 'real') measures which operators fall back")
    if len(runs := sorted({r["run_id"] for r in records})) > 1:
        raise InputError(f"the records hold {len(runs)} runs ({', '.join(runs)}): give one run's records")
    run = run_info(records)
    calls: Counter[str] = Counter()
    for record in records:
        for name, count in (record.get("fallback_ops") or {}).items():
            calls[name] += count  # a backend that reports names without calls counts 0
    run_table: dict[str, str | int] = {
        "run_id": run.run_id, "started_at": str(run.started_at), "finished_at": str(run.finished_at),
        "torch_neuronx": str(run.env.get("backend_version") or "unknown"), "cases": len(records),
    }
    return dataclasses.replace(current, provenance={**current.provenance, "kind": "measured"}, measured=run_table,
                               measured_fallback=dict(sorted(calls.items())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="the run's records (directories or files)")
    parser.add_argument("--write", action="store_true", help=f"replace {trainium_ops.TRAINIUM_OPS_FILE.name}")
    args = parser.parse_args(argv)
    try:
        ops = measured(args.results, trainium_ops.load())
    except InputError as exc:
        print(f"fallback_ops_from_run: {exc}", file=sys.stderr)
        return 1
    text = trainium_ops.render(ops)
    trainium_ops.parse(trainium_ops.TRAINIUM_OPS_FILE, text)  # the file it writes keeps the file's rules
    if args.write:
        trainium_ops.TRAINIUM_OPS_FILE.write_text(text, encoding="utf-8")
        print(f"wrote {trainium_ops.TRAINIUM_OPS_FILE}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
