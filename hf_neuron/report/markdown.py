"""A run's matrix as Markdown, for GitHub's job summary: the counts, one row per architecture with each scenario's
status (a mark and a word: colour is never the only signal), then what fails on neuron.

Statuses are the site's (:mod:`hf_neuron.report.status`). Text taken from records is escaped: it shows as text and
cannot break the table or add links.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Sequence

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
    scenarios = scenario_order({r["scenario"]: r["scenario_facts"] for r in records})
    by_arch: dict[str, dict[str, str]] = {}
    groups: dict[str, str] = {}
    for record in records:
        by_arch.setdefault(record["model_type"], {})[record["scenario"]] = statuses[record["case_id"]]
        groups[record["model_type"]] = record["group"]
    lines += [
        "| architecture | group | " + " | ".join(scenarios) + " |",
        "|---|---|" + "---|" * len(scenarios),
    ]
    for model_type in sorted(by_arch):
        cells = [_cell(by_arch[model_type].get(s, NOT_RUN)) for s in scenarios]
        lines.append(f"| {_text(model_type)} | {_text(groups[model_type])} | " + " | ".join(cells) + " |")
    failing = sorted((r for r in records if statuses[r["case_id"]] in FAILING), key=lambda r: r["case_id"])
    if failing:
        lines += ["", f"#### Failing on neuron ({len(failing)})", ""]
        for record in failing:
            failure = record["failure"]
            what = f"{failure['type']}: {failure['message']}" if failure else record["outcome"]
            known = " (known failure)" if record["known_failure"] else ""
            lines.append(f"- **{_text(record['case_id'])}**{known}: {_text(what)}")
    return "\n".join(lines) + "\n"
