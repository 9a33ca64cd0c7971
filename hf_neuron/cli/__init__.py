"""The ``hf-neuron`` command: one sub-command module per job.

Each module in :data:`COMMANDS` defines ``register(subparsers)``, which adds its parser and sets ``func`` (called
with the parsed namespace, returning the exit code). Modules are imported only when their command runs, except
for building ``--help``. Bad input anywhere (an :class:`~hf_neuron.errors.InputError`: an unknown name, a bad option or
environment value, a malformed data file or record) is printed as ``hf-neuron <command>: error: ...`` and exits with
:data:`~hf_neuron.vocabulary.exits.EXIT_USAGE` (2), whatever the command; argparse's own usage errors exit 2 too.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from hf_neuron.errors import InputError
from hf_neuron.vocabulary.exits import EXIT_USAGE

__all__ = ["COMMANDS", "main"]

#: sub-command name -> module under ``hf_neuron.cli``
COMMANDS: dict[str, str] = {
    "check": "check",
    "doctor": "doctor",
    "device": "device",
    "smoke": "smoke",
    "matrix": "matrix",
    "report": "report",
    "upstream": "upstream",
    "settings": "settings",
}


def _parser(only: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hf-neuron",
        description="Hugging Face on PyTorch's `neuron` device: diagnostics, the reference device, "
        "the compatibility matrix and its report.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"hf_neuron.cli.{module}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hf-neuron`` console script."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    only = args_list[0] if args_list and args_list[0] in COMMANDS else None
    args = _parser(only).parse_args(args_list)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"hf-neuron {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
