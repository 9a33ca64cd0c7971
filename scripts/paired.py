"""Interleaved A/B timing for the benchmarks: a verdict only when the spread allows one.

Each round times A and B back to back, in alternating order (AB, BA, AB, ...), so that a change of load on the
machine hits both alike; the ratio B/A of each round is one sample. The summary is the median ratio with a
distribution-free 95% confidence interval of that median (the order statistics a binomial count gives). A target
``B/A <= t`` is met when the whole interval lies at or below ``t``, missed when it lies above, and otherwise the
benchmark says it cannot tell and how many more rounds might: noise never reads as a regression or as a win.

Used by ``bench_device.py`` and ``bench_import.py`` (beside it).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["MIN_ROUNDS", "Comparison", "compare", "interleaved", "median_interval"]

#: The fewest paired rounds whose median has a 95% interval inside their range (1/2**5 < 0.05).
MIN_ROUNDS = 6


def median_interval(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free ``confidence`` interval of the median of ``samples``: the k-th smallest and k-th largest,
    k the largest such that a Binomial(n, 1/2) count falls below k with probability at most (1 - confidence) / 2.
    Fewer than 6 samples give no interval narrower than their range."""
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        raise ValueError("no samples")
    tail = (1 - confidence) / 2
    k, cumulative = 0, 0.0
    while k < n // 2:
        cumulative += math.comb(n, k) / 2**n
        if cumulative > tail:
            break
        k += 1
    k = max(k, 1)
    return ordered[k - 1], ordered[n - k]


@dataclasses.dataclass(frozen=True)
class Comparison:
    """B against A over paired rounds: the median of each, the median ratio B/A and its confidence interval."""

    name: str
    a_median: float
    b_median: float
    ratio: float
    low: float
    high: float
    rounds: int

    def verdict(self, target: float) -> str:
        """``within`` (the interval at or below ``target``), ``over`` (above it), or why it cannot tell."""
        if self.rounds < MIN_ROUNDS:
            return f"cannot tell from {self.rounds} rounds (at least {MIN_ROUNDS} give a 95% interval)"
        if self.high <= target:
            return "within"
        if self.low > target:
            return "over"
        return f"cannot tell (interval {self.low:.3f}-{self.high:.3f} spans {target:.2f}): run more rounds"

    def line(self, target: float | None = None) -> str:
        """One printed row: both medians (ms), the ratio with its interval, and the verdict on ``target``."""
        row = (f"{self.name:52} {self.a_median * 1e3:9.2f} {self.b_median * 1e3:9.2f} {self.ratio:7.3f} "
               f"[{self.low:.3f}, {self.high:.3f}]")
        return row if target is None else f"{row}  <= {target:.2f}: {self.verdict(target)}"


def compare(name: str, a: Sequence[float], b: Sequence[float]) -> Comparison:
    """The comparison of paired samples ``a[i]``, ``b[i]`` (seconds, one pair per round)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"{name}: {len(a)} and {len(b)} samples: one pair per round is needed")
    ratios = [y / x for x, y in zip(a, b, strict=True)]
    low, high = median_interval(ratios)
    return Comparison(name, statistics.median(a), statistics.median(b), statistics.median(ratios), low, high, len(a))


def interleaved(name: str, a: Callable[[], object], b: Callable[[], object], rounds: int,
                warmup: int = 3) -> Comparison:
    """Time ``a`` and ``b`` over ``rounds`` rounds in alternating order, after ``warmup`` untimed rounds."""
    times: dict[int, list[float]] = {0: [], 1: []}
    for index in range(warmup + rounds):
        for which in ((0, 1) if index % 2 == 0 else (1, 0)):
            start = time.perf_counter()
            (a, b)[which]()
            elapsed = time.perf_counter() - start
            if index >= warmup:
                times[which].append(elapsed)
    return compare(name, times[0], times[1])
