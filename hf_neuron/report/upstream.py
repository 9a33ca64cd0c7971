"""The report's view of runs of upstream tests (``hf-neuron upstream``): loaded beside the matrix's records.

``hf-neuron report build --upstream DIR ...`` reads the upstream records in ``DIR`` through their schema
(:mod:`hf_neuron.upstream.records`) and compares the devices with :func:`hf_neuron.upstream.summary.summarize`, the
same comparison the command prints, for each library the records are of (:class:`LibraryView`). The index gets one
column per library and a section per library (its per-unit table, neuron-only failures, tests not applicable); an
architecture's page a section per library that ran tests on it. Which architecture a test ran on: for transformers
the unit (its model tests are by architecture); for the others the architecture its record names (diffusers' test
module of a backbone class) and the Hub stand-ins the test read (``compat/upstream_stand_ins.toml`` says which model
type stands in for each id), so PEFT's decoder tests on the Llama stand-in count for llama. Bad lines are skipped and
listed, as for the matrix's records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from hf_neuron.compat.upstream_not_applicable import SUITES
from hf_neuron.compat.upstream_stand_ins import STAND_INS_PATH, load_stand_ins
from hf_neuron.errors import InputError
from hf_neuron.upstream.records import UpstreamRecord, read_records
from hf_neuron.upstream.summary import ArchSummary, summarize

__all__ = ["LibraryView", "UpstreamView", "load_upstream"]


@dataclasses.dataclass(frozen=True)
class LibraryView:
    """One library's upstream tests: summaries by unit, and by the architecture they ran on."""

    suite: str
    units: Mapping[str, ArchSummary]
    by_arch: Mapping[str, ArchSummary]
    source: str

    @property
    def ok(self) -> bool:
        return all(summary.ok for summary in self.units.values())

    @property
    def neuron_only_tests(self) -> int:
        return sum(summary.neuron_only_tests for summary in self.units.values())

    @property
    def neuron_gaps(self) -> int:
        """Tests that passed on the CPU and that neuron did not run, over the units."""
        return sum(len(summary.neuron_gaps) for summary in self.units.values())

    def total(self, device: str, field: str) -> int:
        return sum(getattr(summary.counts[device], field) for summary in self.units.values())  # type: ignore[index]

    def cell(self, model_type: str) -> tuple[str, int] | None:
        """The index cell of an architecture: its text and a sort key (0 passes, 1 fails, 2 ran nothing), or None
        when the library ran no test on it."""
        summary = self.by_arch.get(model_type)
        if summary is None:
            return None
        if not summary.ran:
            return "nothing passed on the CPU", 2
        if summary.neuron_only:
            return f"{summary.neuron_only_tests} neuron-only", 1
        if summary.neuron_gaps:
            return f"{len(summary.neuron_gaps)} not run on neuron", 1
        return f"pass ({summary.counts['neuron'].passed})", 0


@dataclasses.dataclass(frozen=True)
class UpstreamView:
    """Upstream runs by library, the skipped lines, and what the runs were."""

    libraries: tuple[LibraryView, ...]
    problems: tuple[str, ...]
    run_ids: tuple[str, ...]
    backend: str

    def for_arch(self, model_type: str) -> tuple[tuple[str, ArchSummary], ...]:
        """The libraries that ran tests on an architecture, with its summary in each."""
        return tuple((library.suite, library.by_arch[model_type]) for library in self.libraries
                     if model_type in library.by_arch)


def _source(records: list[UpstreamRecord]) -> str:
    provenance = records[0]["env"].get("upstream_source") or {}
    details = ", ".join(f"{key} {value}" for key, value in provenance.items() if key not in ("kind", "source_txt"))
    return f"{provenance.get('kind', 'unknown')}: {details}" if provenance else "not recorded"


def _library(suite: str, records: list[UpstreamRecord], stands_for: Mapping[str, str]) -> LibraryView:
    units = summarize(records)
    if suite == "transformers":
        by_arch = units
    else:
        on_arch: dict[str, list[UpstreamRecord]] = {}
        for record in records:
            model_types = {stands_for[i] for i in record.get("stand_ins", []) if i in stands_for}
            if "architecture" in record:
                model_types.add(record["architecture"])
            for model_type in sorted(model_types):
                on_arch.setdefault(model_type, []).append({**record, "model_type": model_type})
        by_arch = {model_type: summarize(arch_records)[model_type] for model_type, arch_records in on_arch.items()}
    return LibraryView(suite, units, by_arch, _source(records))


def load_upstream(paths: Iterable[Path], stand_ins: Path = STAND_INS_PATH) -> UpstreamView:
    """The view of the upstream records in ``paths`` (directories or ``*.jsonl`` files); :class:`InputError` when a
    path does not exist or holds no valid record."""
    paths = list(paths)
    if missing := [str(path) for path in paths if not path.exists()]:
        raise InputError(f"--upstream: no such directory or file: {', '.join(missing)}")
    records, problems = read_records(paths)
    if not records:
        raise InputError(f"--upstream: no valid upstream record in {', '.join(map(str, paths))}")
    stands_for = {entry.id: entry.model_type for entry in load_stand_ins(stand_ins) if entry.model_type}
    by_suite: dict[str, list[UpstreamRecord]] = {}
    for record in records:
        by_suite.setdefault(record["suite"], []).append(record)
    return UpstreamView(
        libraries=tuple(_library(suite, by_suite[suite], stands_for)
                        for suite in sorted(by_suite, key=lambda name: (SUITES.index(name) if name in SUITES else 99,
                                                                        name))),
        problems=tuple(map(str, problems)),
        run_ids=tuple(sorted({record["run_id"] for record in records})),
        backend=", ".join(sorted({record["env"].get("backend", "?") for record in records})),
    )
