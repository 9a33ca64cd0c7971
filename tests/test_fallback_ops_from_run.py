"""scripts/fallback_ops_from_run.py: the fallback list from a Trainium run's records, never the reference device's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
SCRIPT = ROOT / "scripts" / "fallback_ops_from_run.py"
RECORDS = Path(__file__).parent / "fixtures" / "records"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def test_the_operators_a_trainium_run_measured_make_the_file() -> None:
    result = _run(str(RECORDS / "trainium"))
    assert result.returncode == 0, result.stderr
    operators = [line.split("#")[0].strip() for line in result.stdout.splitlines() if line.split("#")[0].strip()]
    assert operators == ["aten::_unique2", "aten::nonzero"]
    assert "MEASURED by torch.neuron.get_fallback_ops() in matrix run trainium-2026-11-29" in result.stdout
    assert "torch-neuronx 2.13.0.1.0" in result.stdout
    assert "aten::nonzero  # 4 calls" in result.stdout


def test_records_of_the_reference_device_are_refused() -> None:
    result = _run(str(RECORDS / "run-2"))
    assert result.returncode == 1
    assert "come from the reference backend: only a run on real Trainium" in result.stderr
    assert result.stdout == ""
