"""``hf-neuron device build``: build (or find) the reference device's C++ extension ahead of first use."""

from __future__ import annotations

import argparse

__all__ = ["register"]


def _build(args: argparse.Namespace) -> int:
    from hf_neuron.device import build

    module = build.load(verbose=args.verbose)
    print(f"reference neuron device ready: {module.__file__}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``device`` command."""
    parser = subparsers.add_parser("device", help="the reference neuron device")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="build the C++ extension now (otherwise built on first use)")
    build.add_argument("--verbose", action="store_true", help="show the compiler's output")
    build.set_defaults(func=_build)
