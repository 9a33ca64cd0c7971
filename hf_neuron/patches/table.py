"""The README's list of patches, rendered from the registry as a markdown table."""

from __future__ import annotations

from collections.abc import Iterable

from hf_neuron.patches.registry import Patch

__all__ = ["markdown_table"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(patches: Iterable[Patch] | None = None) -> str:
    """One row per patch (default: every library's patches, in application order): id, library, versions, reason."""
    if patches is None:
        from hf_neuron.patches import default_registry

        patches = default_registry().patches()
    rows = ["| id | library | versions | reason |", "|---|---|---|---|"]
    rows += [f"| `{p.id}` | {p.library} | {_cell(p.versions)} | {_cell(p.reason)} |" for p in patches]
    return "\n".join(rows) + "\n"
