"""Regenerate ``docs/reference.md``, the reference tables written from the code they document.

The environment switches (``hf_neuron.settings.SWITCHES``), the ``torch.neuron`` contract
(``hf_neuron.device.contract.CONTRACT``) and every patch of the registry. ``--check`` changes nothing and exits 1
when the file is out of date (``tests/test_readme.py`` runs it).

    python scripts/update_docs.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "reference.md"


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

    return markdown_table().rstrip("\n")


def render() -> str:
    """The whole reference page."""
    return f"""# hf-neuron reference

Generated from the code by `python scripts/update_docs.py` (a test fails when it is out of date): do not edit.

- [Environment switches](#environment-switches)
- [The `torch.neuron` contract](#the-torchneuron-contract)
- [Patches](#patches)

## Environment switches

Every variable is validated when read; a bad value stops `import torch` with a message naming the variable, the
value and what is accepted. The fidelity switches make the reference device behave like Trainium hardware where it
differs from the CPU.

{switches()}

## The `torch.neuron` contract

Every function TorchNeuron documents for `torch.neuron`, plus what torch and the Hugging Face libraries call on a
device module (`hf_neuron/device/contract.py`). `tests/test_device_contract.py` checks each against whichever
backend is active.

{contract()}

## Patches

Each patch is a declared record in `hf_neuron/patches/<library>.py`: an id named for what it makes true, the
library versions it was written against, and why it exists (the upstream code it works around).

{patches()}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/reference.md is out of date")
    args = parser.parse_args()
    updated = render()
    if args.check:
        if not REFERENCE.is_file() or REFERENCE.read_text() != updated:
            print("docs/reference.md is out of date: run python scripts/update_docs.py", file=sys.stderr)
            return 1
        return 0
    REFERENCE.parent.mkdir(exist_ok=True)
    REFERENCE.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
