"""The report's view of a run of upstream tests (``hf-neuron upstream``): loaded beside the matrix's records.

``hf-neuron report build --upstream DIR`` reads the upstream records in ``DIR`` through their schema
(:mod:`hf_neuron.upstream.records`) and compares the devices with :func:`hf_neuron.upstream.summary.summarize`, the
same comparison the command prints. The index gets a column (per architecture: whether its upstream tests pass on
neuron wherever they pass on the CPU, and how many do not), each architecture's page a section (counts on both
devices, neuron-only failures by fingerprint, tests not applicable on neuron with their reasons). Bad lines are
skipped and listed, as for the matrix's records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from hf_neuron.errors import InputError
from hf_neuron.upstream.records import read_records
from hf_neuron.upstream.summary import ArchSummary, summarize

__all__ = ["UpstreamView", "load_upstream"]


@dataclasses.dataclass(frozen=True)
class UpstreamView:
    """One upstream run's summaries by architecture, the skipped lines, and what the run was."""

    summaries: Mapping[str, ArchSummary]
    problems: tuple[str, ...]
    run_ids: tuple[str, ...]
    suite: str
    backend: str

    def cell(self, model_type: str) -> tuple[str, int] | None:
        """The index cell of an architecture: its text and a sort key (0 passes, 1 fails, 2 ran nothing), or None
        when the upstream run did not include it."""
        summary = self.summaries.get(model_type)
        if summary is None:
            return None
        neuron = summary.counts["neuron"]
        if not summary.ran:
            return "nothing passed on the CPU", 2
        if summary.neuron_only:
            return f"{summary.neuron_only_tests} neuron-only", 1
        return f"pass ({neuron.passed})", 0


def load_upstream(paths: Iterable[Path]) -> UpstreamView:
    """The view of the upstream records in ``paths`` (directories or ``*.jsonl`` files); :class:`InputError` when a
    path does not exist or holds no valid record."""
    paths = list(paths)
    if missing := [str(path) for path in paths if not path.exists()]:
        raise InputError(f"--upstream: no such directory or file: {', '.join(missing)}")
    records, problems = read_records(paths)
    if not records:
        raise InputError(f"--upstream: no valid upstream record in {', '.join(map(str, paths))}")
    return UpstreamView(
        summaries=summarize(records),
        problems=tuple(map(str, problems)),
        run_ids=tuple(sorted({record["run_id"] for record in records})),
        suite=", ".join(sorted({record["suite"] for record in records})),
        backend=", ".join(sorted({record["env"].get("backend", "?") for record in records})),
    )
