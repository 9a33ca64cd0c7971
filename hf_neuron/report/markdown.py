"""A run's matrix as Markdown, for GitHub's job summary: the counts, one row per architecture with each scenario's
status (a mark and a word: colour is never the only signal), one row per checkpoint likewise (the checkpoints' cases,
split from the tiny models' by :func:`~hf_neuron.report.load.split_sources`), then what fails on neuron.

Statuses are the site's (:mod:`hf_neuron.report.status`). Text taken from records is escaped: it shows as text and
cannot break the table or add links.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from hf_neuron.report.load import split_sources
from hf_neuron.report.status import FAILING, cell_status, scenario_order
from hf_neuron.vocabulary.outcomes import NOT_RUN, STATUSES, label
from hf_neuron.vocabulary.records import Record

__all__ = ["markdown_summary"]

#: Longest failure message shown; the site and the records have the whole of it.
_MESSAGE_CHARS = 200
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~])")


def _text(value: str, limit: int = _MESSAGE_CHARS) -> str:
    """``value`` on one line, at most ``limit`` characters, with HTML and Markdown syntax escaped."""
    flat = " ".join(value.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(flat, quote=False))


def _mark(status: str) -> str:
    if status == "passed":
        return "✅"
    if status in FAILING:
        return "❌"
    return "" if status == NOT_RUN else "⚪"  # not applicable, untested, failing on the CPU too


def _cell(status: str) -> str:
    return f"{_mark(status)} {label(status)}".strip()


def _model(record: Record) -> str:
    """What a record's row is: its checkpoint's id, or its architecture."""
    checkpoint = record["checkpoint"]
    return checkpoint["id"] if checkpoint else record["model_type"]


def _grid(what: str, records: Sequence[Record], statuses: Mapping[str, str]) -> list[str]:
    """One row per model of ``records`` (an architecture, or a checkpoint: ``what``), one column per scenario."""
    scenarios = scenario_order({r["scenario"]: r["scenario_facts"] for r in records})
    by_model: dict[str, dict[str, str]] = {}
    about: dict[str, str] = {}
    for record in records:
        name = _model(record)
        by_model.setdefault(name, {})[record["scenario"]] = statuses[record["case_id"]]
        about[name] = record["model_type"] if record["checkpoint"] else record["group"]
    lines = [
        f"| {what} | {'architecture' if what == 'checkpoint' else 'group'} | " + " | ".join(scenarios) + " |",
        "|---|---|" + "---|" * len(scenarios),
    ]
    for name in sorted(by_model):
        cells = [_cell(by_model[name].get(s, NOT_RUN)) for s in scenarios]
        lines.append(f"| {_text(name)} | {_text(about[name])} | " + " | ".join(cells) + " |")
    return lines


def markdown_summary(records: Sequence[Record], *, title: str = "Compatibility matrix", skipped_lines: int = 0) -> str:
    """The Markdown summary of ``records`` (one run's, or a slice of it); ``skipped_lines`` malformed record lines
    are counted in it, so that none is lost silently."""
    if not records:
        return f"### {_text(title)}\n\nNo record.\n"
    statuses = {r["case_id"]: cell_status(r) for r in records}
    counts = Counter(statuses.values())
    runs = sorted({r["run_id"] for r in records})
    backends = sorted({str(r["env"].get("backend", "?")) for r in records})
    profiles = sorted({str(r["env"].get("profile")) for r in records if r["env"].get("profile")})
    kernels = " (CPU kernels, not Trainium)" if "reference" in backends else ""
    profile = f", profile {', '.join(map(_text, profiles))}" if profiles else ""
    lines = [
        f"### {_text(title)}",
        "",
        f"Run {', '.join(map(_text, runs))} on the {', '.join(map(_text, backends))} backend{kernels}{profile}: "
        f"{len(records)} cases, " + ", ".join(f"{counts[s]} {label(s)}" for s in STATUSES if counts[s]) + ".",
        "",
    ]
    if skipped_lines:
        lines += [f"**{skipped_lines} malformed record lines were skipped** (the job's log names them).", ""]
    tiny, checkpoints = split_sources(records)
    if tiny:
        lines += _grid("architecture", tiny, statuses)
    if checkpoints:
        lines += [*([""] if tiny else []), f"#### Checkpoints ({len({_model(r) for r in checkpoints})})",
                  "", *_grid("checkpoint", checkpoints, statuses)]
    failing = sorted((r for r in records if statuses[r["case_id"]] in FAILING), key=lambda r: r["case_id"])
    if failing:
        lines += ["", f"#### Failing on neuron ({len(failing)})", ""]
        for record in failing:
            failure = record["failure"]
            what = f"{failure['type']}: {failure['message']}" if failure else record["outcome"]
            known = " (known failure)" if record["known_failure"] else ""
            lines.append(f"- **{_text(record['case_id'])}**{known}: {_text(what)}")
    return "\n".join(lines) + "\n"
