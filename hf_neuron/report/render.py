"""HTML from the report's tables: Jinja2 templates, autoescaped, and the static assets. Pure: tables in, files out.

Every text that comes from a record reaches the page through an autoescaped template, so an exception message
holding markup shows as text.
"""

from __future__ import annotations

import math
import shlex
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from hf_neuron.compat.catalog import Catalog, CatalogEntry
from hf_neuron.report.chart import TrendChart
from hf_neuron.report.checkpoints import COST_FAMILIES, TABLE_FAMILY, CheckpointView
from hf_neuron.report.downloads import Download
from hf_neuron.report.history import CostTrend, RunSummary, hf_neuron_label
from hf_neuron.report.load import LoadedRecords
from hf_neuron.report.tables import (
    Change,
    Headline,
    LibraryBug,
    RunInfo,
    ScenarioFallback,
    frame_rows,
    graphs_per_generation,
    scenario_columns,
)
from hf_neuron.report.upstream import UpstreamView
from hf_neuron.upstream.summary import ArchSummary
from hf_neuron.vocabulary.failures import LIMITATIONS
from hf_neuron.vocabulary.gaps import GAP_MEANINGS
from hf_neuron.vocabulary.outcomes import ARCH_VERDICTS, LABELS, STATUSES
from hf_neuron.vocabulary.records import parse_time

__all__ = ["ArchPage", "IndexPage", "render_site", "reproduce_command", "trim_traceback"]

#: Lines of a traceback shown on an architecture page (the last ones, nearest the error).
TRACEBACK_LINES = 40
#: Changes of each kind listed before "show all".
CHANGES_SHOWN = 10

_BACKENDS: Mapping[str, str] = {  # by BackendKind
    "reference": "Reference device: neuron emulated on the CPU, not Trainium hardware",
    "real": "Real Trainium (TorchNeuron)",
}
#: How the headline names the backend whose records it counts.
_ON_BACKEND: Mapping[str, str] = {  # by BackendKind
    "reference": "on the reference device — CPU kernels, not Trainium",
    "real": "on Trainium (TorchNeuron)",
}
_ASSETS = ("report.css", "report.js")
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


@dataclass(frozen=True)
class IndexPage:
    """Everything the index shows."""

    run: RunInfo
    headline: Headline
    rates: pd.DataFrame
    table: pd.DataFrame
    changes: Sequence[Change]
    previous: RunSummary | None
    chart: TrendChart
    costs: CostTrend
    downloads: Sequence[Download]
    loaded: LoadedRecords
    ranking_source: str | None
    catalog: Catalog | None = None
    upstream: UpstreamView | None = None
    #: the run's checkpoints (None: it has no checkpoint case)
    checkpoints: CheckpointView | None = None


@dataclass(frozen=True)
class ArchPage:
    """Everything an architecture's page shows: its row of the matrix table and its cases by scenario (rows as
    :func:`~hf_neuron.report.tables.frame_rows` gives them), its statuses in the previous run (None when there
    is no previous run), its catalog entry when known, and the libraries' bugs that fail its cases."""

    model_type: str
    row: Mapping[str, Any]
    cases: Mapping[str, Mapping[str, Any]]
    previous: Mapping[str, str] | None = None
    catalog_entry: CatalogEntry | None = None
    #: operators expected to fall back to the CPU on Trainium that its cases ran, with counts (None: not measured)
    fallback_ops: Mapping[str, int] | None = None
    #: the same operators per scenario, with calls per step where the cases say how many steps they ran
    scenario_fallbacks: Sequence[ScenarioFallback] = ()
    #: the libraries' own tests that ran on it: (library, its summary) each
    upstream: tuple[tuple[str, ArchSummary], ...] = ()
    #: the bugs of the libraries that fail its cases on every device (``compat/library_bugs.toml``)
    library_bugs: Sequence[LibraryBug] = ()
    #: its checkpoints' rows of the checkpoints' table (:func:`~hf_neuron.report.tables.frame_rows`)
    checkpoints: Sequence[Mapping[str, Any]] = ()


def reproduce_command(model_type: str, scenario: str) -> str:
    """The shell command that runs one case locally."""
    return f"hf-neuron matrix run --arch {shlex.quote(model_type)} --scenario {shlex.quote(scenario)}"


def trim_traceback(text: str, lines: int = TRACEBACK_LINES) -> tuple[str, int]:
    """The last ``lines`` lines of a traceback, and how many earlier lines were left out."""
    all_lines = text.rstrip("\n").splitlines()
    return "\n".join(all_lines[-lines:]), max(0, len(all_lines) - lines)


def _size(value: int | None) -> str:
    if value is None:
        return "—"
    exponent = min((value.bit_length() - 1) // 10, len(_UNITS) - 1) if value else 0
    return f"{value / 1024**exponent:.1f} {_UNITS[exponent]}" if exponent else f"{value} B"


def _count(number: int | None) -> str:
    """A parameter count as the Hub writes it: ``596.05 M``, ``1.60 B``."""
    if number is None:
        return "—"
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if number >= scale:
            return f"{number / scale:.2f} {unit}"
    return str(number)


def _utc(timestamp: str) -> str:
    return parse_time(timestamp).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _backend(backend: str) -> tuple[str, str]:
    """The CSS kind and the label of a run's backend: ``reference``, ``real``, or anything else, flagged."""
    if backend in _BACKENDS:
        return backend, _BACKENDS[backend]
    if "," in backend:
        return "other", f"Several backends in one run: {backend}"
    return "other", f"“{backend}”: neither the reference device nor real Trainium"


def _on_backend(backend: str) -> str:
    return _ON_BACKEND.get(backend, f"on the “{backend}” backend")


def _percent(rate: float | None) -> str:
    return "—" if rate is None or math.isnan(rate) else f"{rate:.0%}"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("hf_neuron.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        size=_size, percent=_percent, utc=_utc, trim_traceback=trim_traceback, count=_count,
        graphs_per_generation=graphs_per_generation,
    )
    env.globals.update(
        LABELS=LABELS,
        LIMITATIONS=LIMITATIONS,
        STATUS_RANK={status: index for index, status in enumerate(STATUSES)},
        STATUSES=STATUSES,
        ARCH_VERDICTS=ARCH_VERDICTS,
        GAP_LABELS=GAP_MEANINGS,
        CHANGES_SHOWN=CHANGES_SHOWN,
        CHECKPOINT_FAMILY=TABLE_FAMILY,
        COST_FAMILIES=COST_FAMILIES,
        backend=_backend,
        on_backend=_on_backend,
        hf_neuron_label=hf_neuron_label,
        reproduce_command=reproduce_command,
    )
    return env


def render_site(index: IndexPage, archs: Iterable[ArchPage], out: Path) -> None:
    """Write ``index.html``, one ``arch/<model_type>.html`` per architecture, and ``assets/`` under ``out``."""
    env = _environment()
    scenarios = scenario_columns(index.table)
    (out / "arch").mkdir(parents=True, exist_ok=True)
    (out / "assets").mkdir(exist_ok=True)
    for asset in _ASSETS:
        with resources.as_file(resources.files("hf_neuron.report") / "static" / asset) as source:
            shutil.copyfile(source, out / "assets" / asset)
    rows = frame_rows(index.table)
    pages = {r["model_type"] for r in rows}
    view = index.checkpoints
    checkpoint_cases = view.by_checkpoint() if view else {}
    (out / "index.html").write_text(
        env.get_template("index.html.j2").render(
            page=index,
            run=index.run,
            scenarios=scenarios,
            rows=rows,
            rates=frame_rows(index.rates),
            pages=pages,
            checkpoint_rows=frame_rows(view.table) if view else [],
            checkpoint_cases=checkpoint_cases,
            groups=sorted({r["group"] for r in rows if r["group"]}),
            CORE_SCENARIOS=index.headline.all_core,
            VARIANT_SCENARIOS=index.headline.variants,
            root="",
        ),
        encoding="utf-8",
    )
    template = env.get_template("arch.html.j2")
    for arch in archs:
        (out / "arch" / f"{arch.model_type}.html").write_text(
            template.render(
                page=arch,
                run=index.run,
                baseline_name=index.headline.baseline_name,
                scenarios=scenarios,
                row=arch.row,
                cases=arch.cases,
                CORE_SCENARIOS=index.headline.all_core,
                VARIANT_SCENARIOS=index.headline.variants,
                checkpoint_scenarios=view.scenarios if view else (),
                checkpoint_cases=checkpoint_cases,
                pages=pages,
                root="../",
            ),
            encoding="utf-8",
        )
