"""The trend chart's geometry."""

from __future__ import annotations

import itertools

import pytest

from hf_neuron.report.chart import trend_chart
from hf_neuron.report.history import RunSummary

#: The core scenarios the chart draws a line for, beside the share running unmodified.
CORE = ("load", "forward", "generate", "train")


def _run(day: int, unmodified: int, load_passed: int) -> RunSummary:
    return RunSummary(
        run_id=f"r{day}",
        started_at=f"2026-11-{day:02d}T02:00:00+00:00",
        finished_at=f"2026-11-{day:02d}T03:00:00+00:00",
        backend="reference",
        architectures=4,
        runs_unmodified=unmodified,
        scenarios={"load": {"passed": load_passed, "failing": 4 - load_passed}, "train": {"passed": 0, "failing": 0}},
        statuses={},
    )


def test_one_series_for_unmodified_and_one_per_core_scenario() -> None:
    chart = trend_chart([_run(1, 2, 4), _run(2, 4, 2)], CORE)
    assert [s.label for s in chart.series] == ["runs unmodified", "load", "forward", "generate", "train"]
    unmodified, load = chart.series[0], chart.series[1]
    assert unmodified.emphasis and not load.emphasis
    bottom, top = chart.bottom, chart.top
    assert [p.y for p in unmodified.points] == pytest.approx([bottom - 0.5 * (bottom - top), top])
    assert [p.y for p in load.points] == pytest.approx([top, bottom - 0.5 * (bottom - top)])
    assert unmodified.points[0].x == chart.left and unmodified.points[1].x == chart.right
    assert load.points[1].title == "load: 50% in run r2 (2026-11-02)"
    assert load.polyline == " ".join(f"{p.x:.1f},{p.y:.1f}" for p in load.points)


def test_runs_where_a_scenario_counted_nothing_leave_no_point() -> None:
    chart = trend_chart([_run(1, 2, 4), _run(2, 4, 2)], CORE)
    assert chart.series[4].points == ()  # train: nothing passed or failed
    assert chart.series[2].points == ()  # forward: not in these summaries


def test_a_single_run_is_centred_and_labelled() -> None:
    chart = trend_chart([_run(1, 2, 4)], CORE)
    assert chart.runs == 1
    assert chart.series[0].points[0].x == (chart.left + chart.right) / 2
    assert chart.x_labels == ((chart.series[0].points[0].x, "2026-11-01", "middle"),)


def test_only_the_last_runs_are_drawn_and_labels_do_not_crowd() -> None:
    chart = trend_chart([_run(day, 2, 2) for day in range(1, 28)], CORE, max_runs=20)
    assert chart.runs == 20
    assert chart.series[0].points[0].title.endswith("(2026-11-08)")
    xs = [x for x, _, _ in chart.x_labels]
    assert len(xs) <= 6
    step = (chart.right - chart.left) / 19
    assert min(b - a for a, b in itertools.pairwise(xs)) >= 2 * step
    assert [anchor for _, _, anchor in chart.x_labels][:: len(xs) - 1] == ["start", "end"]
    assert [t for _, t in chart.y_ticks] == ["0%", "25%", "50%", "75%", "100%"]
