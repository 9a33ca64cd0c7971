"""The trend chart's geometry: pass rates over past runs, laid out for an inline SVG (no JavaScript library)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hf_neuron.report.history import RunSummary

__all__ = ["Point", "Series", "TrendChart", "trend_chart"]

#: Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
_COLORS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
_WIDTH, _HEIGHT = 520, 280
_LEFT, _RIGHT, _TOP, _BOTTOM = 40, 8, 14, 30
_MAX_X_LABELS = 5


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Series:
    label: str
    color: str
    points: tuple[Point, ...]
    emphasis: bool = False

    @property
    def polyline(self) -> str:
        """The ``points`` attribute of an SVG polyline."""
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


@dataclass(frozen=True)
class TrendChart:
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    series: tuple[Series, ...]
    #: (x, text, text-anchor): the first label starts at its point and the last ends at it, so none is clipped
    x_labels: tuple[tuple[float, str, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    runs: int


def _anchor(index: int, last: int) -> str:
    if last == 0:
        return "middle"
    return "start" if index == 0 else "end" if index == last else "middle"


def trend_chart(history: Sequence[RunSummary], scenarios: Sequence[str], max_runs: int = 30) -> TrendChart:
    """The share of architectures running unmodified and the pass rate of each of ``scenarios`` (the core ones) over
    the last ``max_runs`` runs of ``history`` (oldest first)."""
    runs = list(history)[-max_runs:]
    right, bottom = _WIDTH - _RIGHT, _HEIGHT - _BOTTOM
    step = (right - _LEFT) / max(len(runs) - 1, 1)

    def x(index: int) -> float:
        return _LEFT + index * step if len(runs) > 1 else (_LEFT + right) / 2

    def y(rate: float) -> float:
        return bottom - rate * (bottom - _TOP)

    def series(label: str, color: str, rate: Callable[[RunSummary], float | None], emphasis: bool = False) -> Series:
        points = tuple(
            Point(x(i), y(value), f"{label}: {value:.0%} in run {run.run_id} ({run.finished_at[:10]})")
            for i, run in enumerate(runs)
            if (value := rate(run)) is not None
        )
        return Series(label, color, points, emphasis)

    lines = [series("runs unmodified", _COLORS[0], lambda run: run.unmodified_rate, emphasis=True)]
    for index, scenario in enumerate(scenarios, start=1):
        rate = functools.partial(RunSummary.rate, scenario=scenario)
        lines.append(series(scenario, _COLORS[index % len(_COLORS)], rate))
    every = max(1, -(-len(runs) // _MAX_X_LABELS))
    last = len(runs) - 1
    labelled = [i for i in range(0, last, every) if last - i >= every / 2] + [last]
    return TrendChart(
        width=_WIDTH,
        height=_HEIGHT,
        left=_LEFT,
        right=right,
        top=_TOP,
        bottom=bottom,
        series=tuple(lines),
        x_labels=tuple((x(i), runs[i].finished_at[:10], _anchor(i, last)) for i in labelled),
        y_ticks=tuple((y(t / 4), f"{t * 25}%") for t in range(5)),
        runs=len(runs),
    )
