"""Regenerate the README's generated sections from the code they document.

Each section sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``. ``--check`` changes
nothing and exits 1 when the README is out of date (tests/test_readme.py runs it).

    python scripts/update_readme.py [--check]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def switches() -> str:
    """The environment switches, from hf_neuron.settings.SWITCHES."""
    from hf_neuron.settings import SWITCHES

    rows = ["| variable | default | what it does |", "|---|---|---|"]
    rows += [f"| `{s.name}` | `{s.default or '(unset)'}` | {_cell(s.doc)} |" for s in SWITCHES]
    return "\n".join(rows)


def contract() -> str:
    """The torch.neuron contract, from hf_neuron.device.contract.CONTRACT."""
    from hf_neuron.device.contract import CONTRACT

    rows = ["| name | kind | called by | must |", "|---|---|---|---|"]
    rows += [f"| `{r.name}` | {r.kind} | {_cell(r.callers)} | {_cell(r.behaviour)} |" for r in CONTRACT]
    return "\n".join(rows)


def patches() -> str:
    """Every patch of the registry with its reason."""
    from hf_neuron.patches.table import markdown_table

    return markdown_table()


SECTIONS: dict[str, Callable[[], str]] = {"switches": switches, "contract": contract, "patches": patches}


def render(text: str) -> str:
    """``text`` with every generated section replaced by its current content."""
    for name, produce in SECTIONS.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n).*?(<!-- /generated:{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no generated:{name} section")
        text = pattern.sub(lambda m: m.group(1) + produce().rstrip("\n") + "\n" + m.group(2), text)
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the README is out of date")
    args = parser.parse_args()
    current = README.read_text()
    updated = render(current)
    if args.check:
        if updated != current:
            print("README.md is out of date: run python scripts/update_readme.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
