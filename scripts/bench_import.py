"""What hf-neuron adds to ``import torch``: not installed, installed with the device inactive, and the device on.

Each measurement is a fresh interpreter timing its own ``import torch``, twice over: the whole import, and its
autoload phase — from torch's scan of the ``torch.backends`` entry points to the end of the import (every backend's
load and call, and what torch imports after them, which pays for any import hook a backend installed). The modes
differ only from that scan on: everything before it is the same code, and it is where nearly all of the whole
import's noise comes from (loading libtorch moves by ~100 ms from one process to the next on a shared machine), so
the phase's difference is the measurement of hf-neuron's cost and the whole import's is printed beside it.

"Not installed" hides hf-neuron's entry point from torch's backend autoload, so the baseline still pays torch's own
entry-point scan, as it would without hf-neuron. Every mode runs the same prelude (which imports
``importlib.metadata`` before the timer starts, in every mode alike), and each child says whether hf-neuron was
loaded, which is checked against its mode. Each round runs every mode once, in rotating order (the first round warms
the file cache and is not counted); a mode's cost is the median of its paired rounds' differences from the first
mode, with a 95% interval (``paired.py``). Target for the inactive case: at most 30 ms more than not installed,
judged only when the interval is clear of it.

    python scripts/bench_import.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from paired import MIN_ROUNDS, median_interval  # beside this script

# Run before the timed import in every mode: times the autoload phase, and hides hf-neuron's entry point from torch's
# autoload when HIDE is true (`import torch` as if hf-neuron were not installed).
_PRELUDE = """
import importlib.metadata as metadata, json, sys, time
_entry_points, _autoload = metadata.entry_points, []
def entry_points(**selection):
    if selection.get("group") != "torch.backends":
        return _entry_points(**selection)
    _autoload.append(time.perf_counter())
    found = _entry_points(**selection)
    return metadata.EntryPoints(ep for ep in found if ep.name != "hf_neuron") if HIDE else found
metadata.entry_points = entry_points
start = time.perf_counter()
import torch
end = time.perf_counter()
print(json.dumps({"import": end - start, "autoload": end - _autoload[0] if _autoload else None,
                  "loaded": "hf_neuron" in sys.modules}))
"""

#: mode -> (whether hf-neuron's entry point is hidden, environment overrides)
MODES: dict[str, tuple[bool, dict[str, str]]] = {
    "hf-neuron not installed (its entry point hidden)": (True, {}),
    "hf-neuron installed, device inactive": (False, {}),
    "hf-neuron reference device on (HF_NEURON_EMULATOR=1, built)": (False, {"HF_NEURON_EMULATOR": "1"}),
}
INACTIVE = "hf-neuron installed, device inactive"
TARGET_MS = 30.0
#: What each child times, in milliseconds.
PHASES = ("import", "autoload")


def measure_once(mode: str) -> dict[str, float]:
    """One fresh interpreter's ``import torch`` in ``mode``: the milliseconds of each of :data:`PHASES`."""
    hide, overrides = MODES[mode]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_NEURON_", "TORCH_DEVICE_BACKEND"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode cached
    result = subprocess.run([sys.executable, "-c", f"HIDE = {hide}\n{_PRELUDE}"], env={**env, **overrides},
                            capture_output=True, text=True, check=True)
    child = json.loads(result.stdout.strip().splitlines()[-1])
    if child["autoload"] is None:
        raise RuntimeError(f"{mode}: torch did not autoload its device backends (is TORCH_DEVICE_BACKEND_AUTOLOAD=0 "
                           "set?): there is no autoload phase to time")
    if child["loaded"] == hide:
        raise RuntimeError(f"{mode}: hf-neuron was {'' if hide else 'not '}loaded by `import torch`: this mode "
                           "does not measure what it says (is hf-neuron installed in this interpreter?)")
    return {phase: child[phase] * 1e3 for phase in PHASES}


def measure(runs: int) -> dict[str, list[dict[str, float]]]:
    """Each mode's measurements over ``runs`` rounds after a warm-up round; each round runs every mode once, in an
    order that rotates from round to round, so the i-th sample of each mode is one paired round."""
    samples: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    modes = list(MODES)
    for round_ in range(runs + 1):
        shift = round_ % len(modes)
        for mode in modes[shift:] + modes[:shift]:
            measured = measure_once(mode)
            if round_:
                samples[mode].append(measured)
    return samples


def report(samples: dict[str, list[dict[str, float]]], runs: int) -> None:
    """Print, for the whole import and for its autoload phase, each mode's median and its cost over the
    not-installed baseline (the median of the paired rounds' differences, with a 95% interval); then the verdict on
    the inactive target, from the autoload phase, only when its interval is clear of the target."""
    baseline_mode = next(iter(samples))
    print(f"import torch, {runs} paired rounds of fresh interpreters (median; cost over the first mode with its 95% "
          "interval):")
    costs: dict[tuple[str, str], list[float]] = {}
    for phase in PHASES:
        print(f" {'the whole import' if phase == 'import' else 'its autoload phase (where the modes differ)'}")
        baseline = [sample[phase] for sample in samples[baseline_mode]]
        for mode, measured in samples.items():
            values = [sample[phase] for sample in measured]
            line = f"  {mode:<62} {statistics.median(values):8.1f} ms"
            if mode != baseline_mode:
                costs[phase, mode] = [value - base for value, base in zip(values, baseline, strict=True)]
                low, high = median_interval(costs[phase, mode])
                line += f"   {statistics.median(costs[phase, mode]):+7.1f} ms [{low:+.1f}, {high:+.1f}]"
            print(line)
    cost = costs["autoload", INACTIVE]
    low, high = median_interval(cost)
    verdict = (f"cannot tell from {runs} rounds (at least {MIN_ROUNDS})" if runs < MIN_ROUNDS
               else "within" if high <= TARGET_MS else "OVER" if low > TARGET_MS
               else f"cannot tell (interval {low:+.1f} to {high:+.1f} ms): run more rounds")
    print(f"inactive overhead (autoload phase) {statistics.median(cost):+.1f} ms, target {TARGET_MS:.0f} ms: {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters per mode (default 15)")
    runs = parser.parse_args().runs
    report(measure(runs), runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
