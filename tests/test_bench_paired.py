"""scripts/paired.py: the benchmarks' interleaved A/B statistics give a verdict only when the spread allows one."""

from __future__ import annotations

import random
import sys

import pytest
from _helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from paired import compare, interleaved, median_interval


def test_the_median_interval_is_the_binomial_order_statistics() -> None:
    assert median_interval([float(i) for i in range(1, 21)]) == (6.0, 15.0)  # n = 20: x(6), x(15)
    assert median_interval([3.0, 1.0, 2.0]) == (1.0, 3.0), "too few samples: no narrower than their range"
    with pytest.raises(ValueError, match="no samples"):
        median_interval([])


def _rounds(ratio: float, noise: float, n: int = 40) -> tuple[list[float], list[float]]:
    rng = random.Random(0)
    a = [1.0 + rng.uniform(-0.2, 0.2) for _ in range(n)]  # load varies from round to round, on both alike
    return a, [x * ratio * (1 + rng.uniform(-noise, noise)) for x in a]


@pytest.mark.parametrize(("ratio", "noise", "verdict"), [
    (1.01, 0.005, "within"),   # clearly below 1.05
    (1.10, 0.005, "over"),     # clearly above
    (1.05, 0.05, "cannot"),    # the interval spans the target: no verdict
])
def test_a_verdict_only_when_the_interval_is_clear_of_the_target(ratio: float, noise: float, verdict: str) -> None:
    comparison = compare("case", *_rounds(ratio, noise))
    assert comparison.low <= comparison.ratio <= comparison.high
    assert comparison.verdict(1.05).startswith(verdict)


def test_too_few_rounds_give_no_verdict() -> None:
    a, b = _rounds(1.01, 0.005, n=5)
    assert compare("case", a, b).verdict(1.05).startswith("cannot tell from 5 rounds")


def test_pairs_are_required() -> None:
    with pytest.raises(ValueError, match="one pair per round"):
        compare("case", [1.0, 2.0], [1.0])


def test_interleaved_times_both_sides_every_round_in_alternating_order() -> None:
    calls: list[str] = []
    comparison = interleaved("case", lambda: calls.append("a"), lambda: calls.append("b"), rounds=4, warmup=1)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b"]
    assert comparison.rounds == 4
