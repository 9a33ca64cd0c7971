"""The libraries whose own test suites ``hf-neuron upstream`` runs, each declared once in a module of its own.

========================  ==========================================================================================
module                    suite
========================  ==========================================================================================
:mod:`~.transformers`     transformers' model tests, by architecture (``tests/models/<arch>/``)
:mod:`~.peft`             PEFT's tests (its source distribution carries them)
:mod:`~.accelerate`       accelerate's tests (its source distribution carries them)
:mod:`~.diffusers`        diffusers' model tests (a public snapshot: the source distribution has none)
:mod:`~.trl`              TRL's tests (a public snapshot: the source distribution has none)
========================  ==========================================================================================

:mod:`~.base` defines what a declaration holds. Adding a library is a module here and a line in :func:`_suites`.
"""

from __future__ import annotations

from collections.abc import Mapping

from hf_neuron.errors import InputError
from hf_neuron.upstream.suites.base import SELECTIONS, Group, Selection, Suite

__all__ = ["SELECTIONS", "SUITES", "Group", "Selection", "Suite", "suite"]


def _suites() -> dict[str, Suite]:
    from hf_neuron.upstream.suites import accelerate, diffusers, peft, transformers, trl

    return {module.SUITE.name: module.SUITE for module in (transformers, peft, accelerate, diffusers, trl)}


#: Every suite, by name.
SUITES: Mapping[str, Suite] = _suites()


def suite(name: str) -> Suite:
    """The suite called ``name``; :class:`InputError` for an unknown one."""
    if name not in SUITES:
        raise InputError(f"no upstream suite {name!r}: choose one of {', '.join(SUITES)}")
    return SUITES[name]
