"""What declares a library's test suite for ``hf-neuron upstream``: :class:`Suite` and its :class:`Group` s.

A suite says where its tests come from (the installed distribution, and how ``--fetch`` gets the tree), how it is
laid out, how its tests pick their device (probes the command reads to prove where a run ran), which pytest options
it needs, how a test's node id names its **unit** (the first column of the per-library table: an architecture for
transformers, a test module for the others) and its documented :class:`Group` s of tests, with the selections the
command runs by default, in the nightly and in CI.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Literal

from hf_neuron.errors import InputError
from hf_neuron.testing import Library

__all__ = ["SELECTIONS", "FetchKind", "Group", "Selection", "Suite"]

FetchKind = Literal["sdist", "git-tag"]
Selection = Literal["default", "nightly", "ci"]
#: The selections every group-based suite declares.
SELECTIONS: tuple[Selection, ...] = ("default", "nightly", "ci")
_UNKNOWN_UNIT = "other"


@dataclasses.dataclass(frozen=True)
class Group:
    """Documented tests of a suite: ``files`` (relative to the tree) filtered by the pytest ``keyword`` expression
    (all their tests without one), run with ``devices`` neuron devices."""

    name: str
    doc: str
    files: tuple[str, ...]
    keyword: str | None = None
    devices: int = 1


@dataclasses.dataclass(frozen=True)
class Suite:
    """One library's test suite, as ``hf-neuron upstream <name>`` runs it."""

    name: Library
    distribution: str
    fetch: FetchKind
    git_url: str
    #: What a tree of this suite's tests holds (checked before anything runs).
    needs: str
    #: Where the suite's tests keep the device they run on: ``module:attribute`` or ``module:function()``.
    device_probes: tuple[str, ...]
    #: A regular expression on a node id whose group ``unit`` names the test's unit.
    unit_pattern: str
    groups: tuple[Group, ...] = ()
    selections: Mapping[Selection, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    #: What a git export of the tests takes (``--source REPO``).
    export: tuple[str, ...] = ("tests", "pyproject.toml", "setup.cfg", "conftest.py")
    #: Test folders rebuilt in the working tree with an ``__init__.py`` (a source distribution left it out).
    packages: tuple[str, ...] = ()
    #: Options added to every pytest command line of the suite.
    pytest_options: tuple[str, ...] = ()
    #: A pytest ``-m`` expression: tests left out, with :attr:`deselected_why`.
    deselect: str | None = None
    deselected_why: str = ""
    #: The skip reason the suite's tests that run only where no accelerator is give on any accelerator (neuron's skip
    #: of such a test is the test's own applicability, not a neuron-side gap).
    cpu_only_skip: str | None = None
    #: transformers: tests are chosen by architecture (``--arch``, ``--top``), one unit per architecture.
    by_architecture: bool = False
    #: The neuron devices a run of tests chosen without a group (by architecture, or by file) gets.
    devices: int = 1
    #: An installed package the tests import from ``src/<name>`` (transformers'), linked there in the working tree.
    src_package: str | None = None
    #: The architecture (a model type of the catalog: a row of the report's index) whose tests a unit holds, for the
    #: units that test one (diffusers: a test module per backbone class); each record of such a unit names it.
    architectures: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: The setting (:mod:`hf_neuron.settings`) that names a tree of the suite's tests for ``--configured``.
    source_setting: str | None = None
    #: With :attr:`source_setting`: the setting that names the release of the library the tree's tests were written
    #: for, installed beside the installed one (``--against``).
    against_setting: str | None = None
    #: With a git repository in :attr:`source_setting`: the setting that names the commit whose tests are exported.
    revision_setting: str | None = None
    #: A kept copy of the suite's tests beside the checkout (``../shared/upstream/<shared_tree>``), which
    #: ``--configured`` takes when :attr:`source_setting` is empty and the copy is there.
    shared_tree: str | None = None

    def unit_of(self, node_id: str) -> str:
        """The unit a test belongs to, from its node id."""
        found = re.search(self.unit_pattern, node_id)
        return found.group("unit") if found else _UNKNOWN_UNIT

    def group(self, name: str) -> Group:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(name)

    def select(self, names: Iterable[str]) -> tuple[Group, ...]:
        """The groups named (a group's name, or a selection's: ``default``, ``nightly``, ``ci``), in order, each
        once; :class:`InputError` on an unknown name, listing the known ones."""
        chosen: list[Group] = []
        for name in names:
            if name in self.selections:
                members = [self.group(member) for member in self.selections[name]]  # type: ignore[index]
            elif name in {group.name for group in self.groups}:
                members = [self.group(name)]
            else:
                known = ", ".join([*self.selections, *(group.name for group in self.groups)]) or "none"
                raise InputError(f"--group {name}: {self.name} has no such group or selection (it has: {known}; "
                                 f"hf-neuron upstream {self.name} --list describes them)")
            chosen += [group for group in members if group not in chosen]
        return tuple(chosen)
