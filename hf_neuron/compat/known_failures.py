"""Known failures: the reviewed list of matrix cases expected to fail, with why and what upstream change would fix
them (``compat/known_failures.toml``, read by the one reader of expected-failure lists, :mod:`.expected_failures`)::

    [[known_failure]]
    model_type = "mamba"            # or a list of model types that fail the same way: ["mamba", "mamba2"], or "*"
                                    # for every architecture (then `message` is required: one failure, by its text)
    scenario = "compile"            # a scenario name, a list of them, or "*" for every scenario
    reason = "the conv1d of the mixer has no neuron kernel"
    upstream = "https://github.com/pytorch/pytorch/issues/NNNNN"
    message = "Could not run 'aten::convolution_overrideable'"   # optional regex, searched in "Type: message"
    sources = ["pre-release-tree"]  # where the failure's cause is stated: ids of hf_neuron/device/trainium_sources.toml
    releases = ["pre-release", "2.33", "2.34"]   # the torch-neuronx releases it holds for (ids of the same file)
    unconfirmed = "what no released source confirms"   # optional; required when no released source is cited

Every entry cites where its cause is stated and the releases it holds for; an entry without them, or with an id the
sources file does not define, is refused (:meth:`~hf_neuron.vocabulary.trainium_sources.TrainiumSources.check`).

A failing case that matches an entry is recorded as ``known-failure``; a case that passes although an entry names
it keeps ``passed`` and carries the entry in ``known_failure``, so the summary and the report say it can be
removed from the list. Scenario names are checked against the run's scenario set when the file is read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from pathlib import Path

from hf_neuron.compat.expected_failures import (
    EVERY,
    ExpectedFailure,
    ExpectedFailures,
    ListSchema,
    Selector,
    load_expected,
)
from hf_neuron.compat.files import COMPAT_DIR
from hf_neuron.vocabulary import trainium_sources
from hf_neuron.vocabulary.trainium_sources import Citation

__all__ = ["KNOWN_FAILURES_PATH", "KnownFailures", "citation", "holding_for", "known_failures_schema",
           "load_known_failures", "names_every_type"]

KNOWN_FAILURES_PATH = COMPAT_DIR / "known_failures.toml"
KnownFailures = ExpectedFailures


def citation(entry: ExpectedFailure) -> Citation:
    """Where ``entry``'s cause is stated and the releases it holds for."""
    return Citation(entry.lists["sources"], entry.lists["releases"], entry.fields.get("unconfirmed", ""))


def _check(entry: ExpectedFailure) -> str | None:
    if EVERY in entry.names["model_type"] and entry.message is None:
        return (f"an entry for every architecture ({EVERY!r}) needs a message: the failure it expects, so that no "
                "other failure is excused")
    if not entry.fields["upstream"].startswith(("https://", "http://")):
        return "upstream must be a link (https://...) to the issue or patch that fixes it"
    sources = trainium_sources.load()
    if problem := sources.problem(citation(entry)):
        return problem
    if not any(sources.sources[name].released for name in entry.lists["sources"]) and "unconfirmed" not in entry.fields:
        return "cites no released source: say what is unconfirmed (unconfirmed = \"...\")"
    return None


def known_failures_schema(scenario_names: Collection[str]) -> ListSchema:
    """The shape of the file's entries, for a run whose scenarios are ``scenario_names``."""
    return ListSchema("known_failure", {"model_type": Selector(), "scenario": Selector(allowed=tuple(scenario_names))},
                      required=("upstream",), optional=("unconfirmed",), message_required=False, check=_check,
                      lists=("sources", "releases"))


def load_known_failures(path: Path, scenario_names: Collection[str], *, required: bool = False) -> KnownFailures:
    """Read and check ``path`` (whose scenarios must be among ``scenario_names``); a missing file is an empty list
    unless ``required``."""
    return load_expected(path, known_failures_schema(scenario_names), required=required)


def holding_for(known: KnownFailures, release: str | None) -> KnownFailures:
    """The entries of ``known`` that hold for ``release`` (an id of ``trainium_sources.toml``'s releases): a run that
    predicts 2.34 is not excused by a failure listed for the pre-release tree only, nor told to take off an entry
    that still holds there. Every entry where the run predicts no release (the real backend, which measures what it
    is; a plain CPU-parity profile)."""
    if release is None:
        return known
    return dataclasses.replace(known, entries=tuple(entry for entry in known.entries
                                                    if release in entry.lists["releases"]))


def names_every_type(entry: dict[str, object] | None) -> bool:
    """Whether a record's ``known_failure`` entry names every architecture (``"*"``): such an entry stays on the
    list when some of them pass."""
    if not entry:
        return False
    named = entry["model_type"]
    return EVERY in (named if isinstance(named, list) else [named])
