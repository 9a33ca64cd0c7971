"""``hf-neuron settings [NAME]``: every environment switch with the value it has here, validated — or one switch's
value alone, for scripts (``workers=$(hf-neuron settings HF_NEURON_MATRIX_WORKERS)``), so that they read each variable
with the one parser and default :mod:`hf_neuron.settings` declares. A bad value exits 2 with the message."""

from __future__ import annotations

import argparse

from hf_neuron import settings
from hf_neuron.errors import InputError
from hf_neuron.vocabulary.exits import EXIT_OK

__all__ = ["register"]


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def _run(args: argparse.Namespace) -> int:
    names = [switch.name for switch in settings.SWITCHES]
    if args.name is not None:
        if args.name not in names:
            raise InputError(f"{args.name} is not an hf-neuron setting; `hf-neuron settings` lists them")
        print(_shown(settings.read(args.name)))
        return EXIT_OK
    width = max(map(len, names))
    for switch in settings.SWITCHES:
        print(f"{switch.name:<{width}}  {_shown(settings.read(switch.name))}")
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``hf-neuron settings``."""
    parser = subparsers.add_parser("settings", help="the environment switches and their values here",
                                   description=__doc__)
    parser.add_argument("name", nargs="?", metavar="NAME", help="print this switch's value only")
    parser.set_defaults(func=_run)
