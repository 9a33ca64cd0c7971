"""What hf-neuron adds to ``import torch``: not installed, installed with the device inactive, and the device on.

Each measurement is a fresh interpreter timing its own ``import torch``. "Not installed" hides hf-neuron's entry
point from torch's backend autoload, so the baseline still pays torch's own entry-point scan, as it would without
hf-neuron. The modes are interleaved and the median is reported (the first round warms the file cache and is not
counted). Target for the inactive case: under 30 ms more than not installed.

    python scripts/bench_import.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

# Hides hf-neuron's entry point from torch's autoload: `import torch` as if hf-neuron were not installed.
_WITHOUT_HF_NEURON = """
import importlib.metadata as metadata
_entry_points = metadata.entry_points
def entry_points(**selection):
    found = _entry_points(**selection)
    if selection.get("group") == "torch.backends":
        return metadata.EntryPoints(ep for ep in found if ep.name != "hf_neuron")
    return found
metadata.entry_points = entry_points
"""
_TIMED = "import time; start = time.perf_counter(); import torch; print(time.perf_counter() - start)"

#: mode -> (code run before the timed import, environment overrides)
MODES: dict[str, tuple[str, dict[str, str]]] = {
    "hf-neuron not installed (its entry point hidden)": (_WITHOUT_HF_NEURON, {}),
    "hf-neuron installed, device inactive": ("", {}),
    "hf-neuron reference device on (HF_NEURON_EMULATOR=1, built)": ("", {"HF_NEURON_EMULATOR": "1"}),
}
TARGET_MS = 30.0


def _milliseconds(prelude: str, overrides: dict[str, str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_NEURON_", "TORCH_DEVICE_BACKEND"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode cached
    result = subprocess.run([sys.executable, "-c", prelude + _TIMED], env={**env, **overrides},
                            capture_output=True, text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1]) * 1e3


def measure(runs: int) -> dict[str, float]:
    """Median milliseconds of ``import torch`` per mode, over ``runs`` interleaved rounds after a warm-up."""
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    for round_ in range(runs + 1):
        for mode, (prelude, overrides) in MODES.items():
            milliseconds = _milliseconds(prelude, overrides)
            if round_:
                samples[mode].append(milliseconds)
    return {mode: statistics.median(values) for mode, values in samples.items()}


def report(medians: dict[str, float], runs: int) -> None:
    """Print the medians, each against the not-installed baseline, and the verdict on the target."""
    baseline = next(iter(medians.values()))
    print(f"import torch, median of {runs} fresh interpreters per mode:")
    for index, (mode, median) in enumerate(medians.items()):
        line = f"  {mode:<62} {median:8.1f} ms"
        if index:
            line += f"   {median - baseline:+7.1f} ms  (x{median / baseline:.3f})"
        print(line)
    inactive = medians["hf-neuron installed, device inactive"] - baseline
    print(f"inactive overhead {inactive:+.1f} ms: {'within' if inactive < TARGET_MS else 'OVER'} the "
          f"{TARGET_MS:.0f} ms target")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters per mode (default 15)")
    runs = parser.parse_args().runs
    report(measure(runs), runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
