"""Rewrite ``hf_neuron/device/trainium_fallback_ops.txt`` from a Trainium run: the operators TorchNeuron ran on the CPU.

On the real backend every matrix record's ``fallback_ops`` is measured (``torch.neuron.get_fallback_ops()``); this
collects them over a run and prints the data file with its provenance (the run, its dates, TorchNeuron's version),
or writes it with ``--write``. Records of the reference device are refused: their fallback operators are the
inferred list itself. Usage::

    python scripts/fallback_ops_from_run.py trainium/20261201/merged [--write]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from hf_neuron.device.fallback_ops import TRAINIUM_FALLBACK_OPS_FILE
from hf_neuron.errors import InputError
from hf_neuron.report.load import load_records
from hf_neuron.report.tables import run_info


def fallback_ops_file(results: list[Path]) -> str:
    """The text of the data file from the records in ``results`` (one run of the real backend)."""
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
        calls.update(record.get("fallback_ops") or {})
    version = run.env.get("backend_version") or "unknown"
    header = [
        "# Operators the real TorchNeuron backend runs on the CPU (\"Operator 'aten::NAME' fell back to CPU\").",
        "# Used by HF_NEURON_EMULATOR_WARN_FALLBACK=1 and torch.neuron.get_fallback_ops() on the reference device.",
        "#",
        f"# Provenance: MEASURED by torch.neuron.get_fallback_ops() in matrix run {run.run_id}",
        f"# ({run.started_at} to {run.finished_at}, torch-neuronx {version}, {len(records)} cases);",
        "# regenerate with scripts/fallback_ops_from_run.py. Calls in that run after each name.",
        "",
    ]
    return "\n".join(header + [f"{name}  # {count} calls" for name, count in sorted(calls.items())]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="the run's records (directories or files)")
    parser.add_argument("--write", action="store_true", help=f"replace {TRAINIUM_FALLBACK_OPS_FILE.name}")
    args = parser.parse_args(argv)
    try:
        text = fallback_ops_file(args.results)
    except InputError as exc:
        print(f"fallback_ops_from_run: {exc}", file=sys.stderr)
        return 1
    if args.write:
        TRAINIUM_FALLBACK_OPS_FILE.write_text(text)
        print(f"wrote {TRAINIUM_FALLBACK_OPS_FILE}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
