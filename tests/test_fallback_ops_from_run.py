"""scripts/fallback_ops_from_run.py: a Trainium run's measured fallbacks replace the prediction in trainium_ops.toml,
never the reference device's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hf_neuron.device import trainium_ops

ROOT = Path(__file__).parents[1]
SCRIPT = ROOT / "scripts" / "fallback_ops_from_run.py"
RECORDS = Path(__file__).parent / "fixtures" / "records"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def test_the_operators_a_trainium_run_measured_make_the_file() -> None:
    result = _run(str(RECORDS / "trainium"))
    assert result.returncode == 0, result.stderr
    ops = trainium_ops.parse(Path("printed.toml"), result.stdout)
    assert ops.kind == "measured"
    assert ops.measured_fallback == {"aten::_unique2": 2, "aten::nonzero": 4}
    assert ops.measured is not None and ops.measured["run_id"] == "trainium-2026-11-29"
    assert ops.measured["torch_neuronx"] == "2.13.0.1.0"
    assert ops.falls_back("aten::nonzero") and not ops.falls_back("aten::argmax.out"), "measured, not predicted"
    source = trainium_ops.load()
    assert ops.native == source.native and ops.provenance["commit"] == source.provenance["commit"], \
        "the native list (the device's routes) stays the source's"
    assert source.kind == "source", "without --write the package's file is unchanged"


def test_records_of_the_reference_device_are_refused() -> None:
    result = _run(str(RECORDS / "run-2"))
    assert result.returncode == 1
    assert "come from the reference backend: only a run on real Trainium" in result.stderr
    assert result.stdout == ""
