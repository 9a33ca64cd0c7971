"""What hf-neuron adds to ``import torch``: not installed, installed with the device inactive, and the device on.

Each measurement is a fresh interpreter timing its own ``import torch``. "Not installed" hides hf-neuron's entry
point from torch's backend autoload, so the baseline still pays torch's own entry-point scan, as it would without
hf-neuron. Each round runs every mode once, in rotating order (the first round warms the file cache and is not
counted); a mode's cost is the median of its paired rounds' differences from the first mode, with a 95% interval
(``paired.py``). Target for the inactive case: at most 30 ms more than not installed, judged only when the interval
is clear of it.

    python scripts/bench_import.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

from paired import MIN_ROUNDS, median_interval  # beside this script

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


def measure(runs: int) -> dict[str, list[float]]:
    """Milliseconds of ``import torch`` per mode, over ``runs`` rounds after a warm-up round; each round runs every
    mode once, in an order that rotates from round to round, so the i-th sample of each mode is one paired round."""
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    modes = list(MODES)
    for round_ in range(runs + 1):
        shift = round_ % len(modes)
        for mode in modes[shift:] + modes[:shift]:
            prelude, overrides = MODES[mode]
            milliseconds = _milliseconds(prelude, overrides)
            if round_:
                samples[mode].append(milliseconds)
    return samples


def report(samples: dict[str, list[float]], runs: int) -> None:
    """Print each mode's median, and its cost over the not-installed baseline as the median of the paired rounds'
    differences with a 95% interval; the verdict on the inactive target only when the interval is clear of it."""
    baseline_mode = next(iter(samples))
    baseline = samples[baseline_mode]
    print(f"import torch, {runs} paired rounds of fresh interpreters (median; cost over the first mode with its 95% "
          "interval):")
    for mode, values in samples.items():
        line = f"  {mode:<62} {statistics.median(values):8.1f} ms"
        if mode != baseline_mode:
            differences = [value - base for value, base in zip(values, baseline, strict=True)]
            low, high = median_interval(differences)
            line += f"   {statistics.median(differences):+7.1f} ms [{low:+.1f}, {high:+.1f}]"
        print(line)
    differences = [value - base for value, base in
                   zip(samples["hf-neuron installed, device inactive"], baseline, strict=True)]
    low, high = median_interval(differences)
    verdict = (f"cannot tell from {runs} rounds (at least {MIN_ROUNDS})" if runs < MIN_ROUNDS
               else "within" if high <= TARGET_MS else "OVER" if low > TARGET_MS
               else f"cannot tell (interval {low:+.1f} to {high:+.1f} ms): run more rounds")
    print(f"inactive overhead {statistics.median(differences):+.1f} ms, target {TARGET_MS:.0f} ms: {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters per mode (default 15)")
    runs = parser.parse_args().runs
    report(measure(runs), runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
