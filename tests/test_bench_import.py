"""scripts/bench_import.py: each mode measures what it says (hf-neuron loaded or hidden), and the verdict on the
inactive target is read from the autoload phase, where the modes differ, not from the whole import's noise."""

from __future__ import annotations

import sys

import pytest
from _helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import bench_import
from bench_import import INACTIVE, MODES


def test_each_mode_loads_hf_neuron_or_hides_it_as_it_says() -> None:
    baseline, inactive = list(MODES)[:2]
    for mode in (baseline, inactive):
        measured = bench_import.measure_once(mode)
        assert 0 < measured["autoload"] < measured["import"], measured


def test_a_mode_that_does_not_measure_what_it_says_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_import, "_PRELUDE", "import hf_neuron\n" + bench_import._PRELUDE)
    with pytest.raises(RuntimeError, match="hf-neuron was loaded"):  # loaded although its entry point is hidden
        bench_import.measure_once(next(iter(MODES)))
    monkeypatch.undo()
    monkeypatch.setitem(MODES, INACTIVE, (False, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}))
    with pytest.raises(RuntimeError, match="did not autoload"):
        bench_import.measure_once(INACTIVE)


def _samples(inactive_import: float, inactive_autoload: float, rounds: int = 20) -> dict[str, list[dict[str, float]]]:
    """Rounds whose whole import varies by ±100 ms on all modes alike, the inactive mode's costs added to it."""
    noise = [100.0 * ((i * 7) % 11 - 5) / 5 for i in range(rounds)]
    base = [{"import": 700 + n, "autoload": 9.0 + (i % 3) * 0.1} for i, n in enumerate(noise)]
    return {mode: [{"import": s["import"] + (inactive_import if mode == INACTIVE else 30),
                    "autoload": s["autoload"] + (inactive_autoload if mode == INACTIVE else 30)} for s in base]
            if index else base for index, mode in enumerate(MODES)}


@pytest.mark.parametrize(("autoload_cost", "verdict"), [(3.0, "within"), (45.0, "OVER")])
def test_the_verdict_follows_the_autoload_phase(autoload_cost: float, verdict: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bench_import.report(_samples(inactive_import=60.0 - autoload_cost, inactive_autoload=autoload_cost), 20)
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"inactive overhead (autoload phase) {autoload_cost:+.1f} ms") and last.endswith(verdict)
