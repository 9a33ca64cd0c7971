"""Known failures: the reviewed list of matrix cases expected to fail, with why and what upstream change would fix
them (``compat/known_failures.toml``, read by the one reader of expected-failure lists, :mod:`.expected_failures`)::

    [[known_failure]]
    model_type = "mamba"            # or a list of model types that fail the same way: ["mamba", "mamba2"], or "*"
                                    # for every architecture (then `message` is required: one failure, by its text)
    scenario = "compile"            # a scenario name, a list of them, or "*" for every scenario
    reason = "the conv1d of the mixer has no neuron kernel"
    upstream = "https://github.com/pytorch/pytorch/issues/NNNNN"
    message = "Could not run 'aten::convolution_overrideable'"   # optional regex, searched in "Type: message"

A failing case that matches an entry is recorded as ``known-failure``; a case that passes although an entry names
it keeps ``passed`` and carries the entry in ``known_failure``, so the summary and the report say it can be
removed from the list. Scenario names are checked against the run's scenario set when the file is read.
"""

from __future__ import annotations

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

__all__ = ["KNOWN_FAILURES_PATH", "KnownFailures", "known_failures_schema", "load_known_failures", "names_every_type"]

KNOWN_FAILURES_PATH = COMPAT_DIR / "known_failures.toml"
KnownFailures = ExpectedFailures


def _check(entry: ExpectedFailure) -> str | None:
    if EVERY in entry.names["model_type"] and entry.message is None:
        return (f"an entry for every architecture ({EVERY!r}) needs a message: the failure it expects, so that no "
                "other failure is excused")
    if not entry.fields["upstream"].startswith(("https://", "http://")):
        return "upstream must be a link (https://...) to the issue or patch that fixes it"
    return None


def known_failures_schema(scenario_names: Collection[str]) -> ListSchema:
    """The shape of the file's entries, for a run whose scenarios are ``scenario_names``."""
    return ListSchema("known_failure", {"model_type": Selector(), "scenario": Selector(allowed=tuple(scenario_names))},
                      required=("upstream",), message_required=False, check=_check)


def load_known_failures(path: Path, scenario_names: Collection[str], *, required: bool = False) -> KnownFailures:
    """Read and check ``path`` (whose scenarios must be among ``scenario_names``); a missing file is an empty list
    unless ``required``."""
    return load_expected(path, known_failures_schema(scenario_names), required=required)


def names_every_type(entry: dict[str, object] | None) -> bool:
    """Whether a record's ``known_failure`` entry names every architecture (``"*"``): such an entry stays on the
    list when some of them pass."""
    if not entry:
        return False
    named = entry["model_type"]
    return EVERY in (named if isinstance(named, list) else [named])
