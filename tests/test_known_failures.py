"""Known failures: the reviewed file is validated entry by entry, matched per case, and a listed case that
passes is reported as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.compat.catalog import load_catalog
from hf_neuron.compat.expected_failures import EVERY, ExpectedFailure
from hf_neuron.compat.known_failures import KNOWN_FAILURES_PATH as KNOWN_FAILURES_FILE
from hf_neuron.compat.known_failures import KnownFailures, holding_for, load_known_failures
from hf_neuron.errors import InputError
from hf_neuron.matrix.case.verdict import Attempt, to_record
from hf_neuron.matrix.results.summary import summarize
from hf_neuron.matrix.scenarios.registry import load_scenarios
from hf_neuron.matrix.selection import Case
from hf_neuron.vocabulary.failures import failure

#: The built-in scenarios, which the project's file may name.
SCENARIO_NAMES = load_scenarios().names

ENTRY = """
[[known_failure]]
model_type = "mamba"
scenario = "{scenario}"
reason = "conv1d has no neuron kernel"
upstream = "https://github.com/example/issues/1"
sources = ["evrf060"]
releases = ["2.33", "2.34"]
{extra}
"""


def _matched(known: KnownFailures, model_type: str, scenario: str, text: str | None) -> ExpectedFailure | None:
    return known.match(text, model_type=model_type, scenario=scenario)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "known_failures.toml"
    path.write_text(text)
    return path


def _unknown_names(known: KnownFailures, model_types: set[str]) -> list[str]:
    """What the entries of ``known`` name that the matrix never runs (so the entry can never match), or leave
    empty: architectures outside ``model_types``, scenarios outside :data:`SCENARIO_NAMES`, a blank reason or link."""
    problems = []
    for number, entry in enumerate(known.entries, 1):
        problems += [f"#{number}: architecture {name!r} is not in the catalog"
                     for name in entry.names["model_type"] if name not in (*model_types, EVERY)]
        problems += [f"#{number}: scenario {name!r} does not exist"
                     for name in entry.names["scenario"] if name not in (*SCENARIO_NAMES, EVERY)]
        problems += [f"#{number}: empty reason" for _ in [0] if not entry.reason.strip()]
        problems += [f"#{number}: empty upstream" for _ in [0] if not entry.fields.get("upstream", "").strip()]
    return problems


def test_the_project_file_names_only_architectures_and_scenarios_that_exist() -> None:
    known = load_known_failures(KNOWN_FAILURES_FILE, SCENARIO_NAMES, required=True)
    assert _unknown_names(known, set(load_catalog().by_type())) == []


def test_an_entry_naming_an_unknown_architecture_fails_the_check(tmp_path: Path) -> None:
    catalog = set(load_catalog().by_type())
    assert "llama" in catalog and "mamba-9000" not in catalog
    text = ENTRY.format(scenario="forward", extra="").replace('"mamba"', '["llama", "mamba-9000"]')
    known = load_known_failures(_write(tmp_path, text), SCENARIO_NAMES)
    assert _unknown_names(known, catalog) == ["#1: architecture 'mamba-9000' is not in the catalog"]
    assert _unknown_names(known, catalog | {"mamba-9000"}) == []
    unloadable = KnownFailures((ExpectedFailure({"model_type": ("llama",), "scenario": ("forwards", EVERY)}, " ", None,
                                                {"upstream": "https://x"}),))
    assert _unknown_names(unloadable, catalog) == ["#1: scenario 'forwards' does not exist", "#1: empty reason"]


def test_a_missing_file_is_empty_unless_asked_for(tmp_path: Path) -> None:
    assert load_known_failures(tmp_path / "none.toml", SCENARIO_NAMES).entries == ()
    with pytest.raises(InputError, match=r"none\.toml: no such file"):
        load_known_failures(tmp_path / "none.toml", SCENARIO_NAMES, required=True)


@pytest.mark.parametrize(
    ("scenario", "extra", "message"),
    [
        ("forward", 'message = "("', r"#1 message: not a valid regular"),
        ("forwards", "", r"#1 scenario: 'forwards' is not one of load, forward"),
        ("forward", 'owner = "me"', r"#1: unknown key\(s\) owner; allowed: model_type, scenario, reason"),
        ("forward", 'message = ""', "#1 message: must be a non-empty string"),
    ],
)
def test_a_malformed_entry_is_named_with_what_is_wrong(
    tmp_path: Path, scenario: str, extra: str, message: str
) -> None:
    path = _write(tmp_path, ENTRY.format(scenario=scenario, extra=extra))
    with pytest.raises(InputError, match=message) as error:
        load_known_failures(path, SCENARIO_NAMES)
    assert str(error.value).startswith(f"{path}:2: [[known_failure]] #1"), "it names the file, line and entry"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[known_failure]]\nmodel_type = 'x'\nscenario = '*'\nreason = 'r'\n", "missing upstream"),
        ("[[known_failure]]\nmodel_type = 'x'\nscenario = '*'\nreason = 'r'\nupstream = 'issue 12'\n"
         "sources = 'evrf060'\nreleases = '2.34'\n",
         "upstream must be a link"),
        ("[[known_failure]\n", "not valid TOML"),
        ("known_failure = 'x'\n", "must be an array of tables"),
        ("[known]\n", "unknown top-level key"),
        (ENTRY.format(scenario="*", extra="") * 2,
         r":11: \[\[known_failure\]\] #2: names .*'mamba'.* same message as #1: merge"),
        (ENTRY.format(scenario="*", extra="").replace('sources = ["evrf060"]\n', ""), "missing sources"),
        (ENTRY.format(scenario="*", extra="").replace('releases = ["2.33", "2.34"]\n', ""), "missing releases"),
        (ENTRY.format(scenario="*", extra="").replace('"evrf060"', '"a-blog-post"'),
         r"cites unknown source\(s\) \['a-blog-post'\]"),
        (ENTRY.format(scenario="*", extra="").replace('"2.34"', '"2.35"'), r"names unknown release\(s\) \['2.35'\]"),
        (ENTRY.format(scenario="*", extra="").replace('"evrf060"', '"pre-release-tree"'),
         "cites no released source: say what is unconfirmed"),
    ],
)
def test_a_malformed_file_is_named_with_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_known_failures(_write(tmp_path, text), SCENARIO_NAMES)


def test_matching_prefers_the_scenario_and_honours_the_message(tmp_path: Path) -> None:
    text = ENTRY.format(scenario="*", extra="") + ENTRY.format(scenario="compile", extra='message = "graph break"')
    known = load_known_failures(_write(tmp_path, text), SCENARIO_NAMES)
    assert _matched(known, "mamba", "compile", "Unsupported: graph break in conv1d").names["scenario"] == ("compile",)
    assert _matched(known, "mamba", "compile", "RuntimeError: other").names["scenario"] == ("*",)
    assert _matched(known, "mamba", "compile", None).names["scenario"] == ("compile",)
    assert _matched(known, "llama", "compile", "graph break") is None


def _record(tmp_path: Path, attempt: Attempt, known: KnownFailures | None = None) -> dict[str, object]:
    if known is None:
        entry = ENTRY.format(scenario="forward", extra='message = "aten::conv"')
        known = load_known_failures(_write(tmp_path, entry), SCENARIO_NAMES)
    return to_record(  # type: ignore[return-value]
        Case("mamba", "decoder", "forward", {"kind": "core", "trains": False}), attempt, cpu=Attempt("passed"),
        known=known, run_id="r", env={"backend": "reference"},
        started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:00:01+00:00", duration_s=1.0,
    )


def test_a_matching_failure_becomes_a_known_failure_with_its_entry(tmp_path: Path) -> None:
    found = failure("NotImplementedError", "Could not run 'aten::convolution'", "conv.py:forward", outcome="error")
    record = _record(tmp_path, Attempt("error", failure=found))
    assert record["outcome"] == "known-failure" and record["reason"] == "conv1d has no neuron kernel"
    assert record["known_failure"]["upstream"] == "https://github.com/example/issues/1"  # type: ignore[index]
    assert record["failure"]["failure_class"] == "op-missing"  # type: ignore[index]


def test_another_failure_of_a_listed_case_stays_a_failure(tmp_path: Path) -> None:
    found = failure("ValueError", "bad config", "config.py:__init__", outcome="error")
    record = _record(tmp_path, Attempt("error", failure=found))
    assert record["outcome"] == "error" and record["known_failure"] is None


def test_a_listed_case_that_passes_keeps_passed_and_carries_its_entry(tmp_path: Path) -> None:
    record = _record(tmp_path, Attempt("passed"))
    assert record["outcome"] == "passed" and record["reason"] is None
    assert record["known_failure"]["reason"] == "conv1d has no neuron kernel"  # type: ignore[index]


def test_one_entry_can_list_the_architectures_and_scenarios_that_fail_the_same_way(tmp_path: Path) -> None:
    text = ENTRY.format(scenario="*", extra='message = "histogram_cpu"').replace(
        'model_type = "mamba"', 'model_type = ["mamba", "jamba"]').replace('scenario = "*"',
                                                                          'scenario = ["forward", "train"]')
    known = load_known_failures(_write(tmp_path, text), SCENARIO_NAMES)
    assert _matched(known, "jamba", "train", 'NotImplementedError: "histogram_cpu" not implemented') is not None
    assert _matched(known, "jamba", "load", None) is None  # a passing load is not reported as "now passes"
    assert _matched(known, "jamba", "train", "RuntimeError: something else") is None
    assert _matched(known, "llama", "train", 'NotImplementedError: "histogram_cpu"') is None
    assert known.entries[0].as_dict()["model_type"] == ["mamba", "jamba"]
    assert known.entries[0].as_dict()["scenario"] == ["forward", "train"]
    for bad in ('model_type = []', 'model_type = ["a", "a"]', 'model_type = [1]'):
        with pytest.raises(InputError, match="model_type: must be a non-empty string or a list of distinct"):
            load_known_failures(_write(tmp_path, text.replace('model_type = ["mamba", "jamba"]', bad)), SCENARIO_NAMES)
    for bad, wrong in (('scenario = []', "must be a non-empty string or a list"),
                       ('scenario = ["train", "train"]', "must be a non-empty string or a list"),
                       ('scenario = ["trains"]', "'trains' is not one of load, ")):
        with pytest.raises(InputError, match=f"scenario: {wrong}"):
            load_known_failures(_write(tmp_path, text.replace('scenario = ["forward", "train"]', bad)), SCENARIO_NAMES)


def test_an_entry_for_every_architecture_excuses_only_its_failure(tmp_path: Path) -> None:
    text = ENTRY.format(scenario="forward", extra='message = "needs Inductor"').replace('"mamba"', '"*"')
    known = load_known_failures(_write(tmp_path, text), SCENARIO_NAMES)
    assert _matched(known, "llama", "forward", "NotImplementedError: flex_attention needs Inductor") is not None
    assert _matched(known, "llama", "forward", "RuntimeError: something else") is None
    assert _matched(known, "llama", "train", "NotImplementedError: flex_attention needs Inductor") is None
    with pytest.raises(InputError, match="needs a message"):
        load_known_failures(_write(tmp_path, ENTRY.format(scenario="forward", extra="").replace('"mamba"', '"*"')),
                            SCENARIO_NAMES)


def test_a_passing_case_is_reported_only_when_its_entry_names_the_architecture(tmp_path: Path) -> None:
    named = _record(tmp_path, Attempt("passed"))
    every = {**named, "case_id": "llama::forward", "known_failure": {**named["known_failure"], "model_type": "*"}}
    summary = summarize([named, every], ["mamba::forward", "llama::forward"])  # type: ignore[list-item]
    assert summary.known_now_passing == ("mamba::forward",), "an entry for every architecture stays on the list"



def test_a_case_whose_facts_hold_a_nan_loss_is_recorded(tmp_path: Path) -> None:
    """gemma3n_text's sft steps log NaN losses on both devices: the record keeps them by name, and the record writer
    (JSON without NaN) writes it; before, the case ended with no record at all."""
    import json
    import math

    from hf_neuron.matrix.results.store import RecordWriter
    from hf_neuron.vocabulary.records import Leg

    nan = math.nan
    leg = Leg(name="packed", outcome="failed", reason="r", parity=None, details={"losses": [6.9, nan]})
    record = _record(tmp_path, Attempt("failed", details={"losses": [nan, math.inf, 1.5]}, legs=(leg,)))
    assert record["details"] == {"losses": ["nan", "inf", 1.5]}
    assert record["legs"][0]["details"] == {"losses": [6.9, "nan"]}  # type: ignore[index]
    RecordWriter(tmp_path / "records", "test").write(record)
    (written,) = [json.loads(path.read_text()) for path in (tmp_path / "records").iterdir()]
    assert written["details"] == {"losses": ["nan", "inf", 1.5]}
    with pytest.raises(ValueError, match="not JSON compliant"):
        RecordWriter(tmp_path / "raw", "test").write({**record, "details": {"losses": [nan]}})  # what it refuses


@pytest.mark.parametrize(("release", "held"), [("2.34", True), ("pre-release", False), (None, True)])
def test_an_entry_holds_only_for_its_releases(tmp_path: Path, release: str | None, held: bool) -> None:
    """An entry for 2.33 and 2.34 excuses the failure in a run that predicts 2.34, not in one that predicts the
    pre-release tree (there the failure is the device's, and a pass is no reason to take the entry off); a run that
    predicts no release (the real backend) keeps every entry."""
    known = holding_for(load_known_failures(_write(tmp_path, ENTRY.format(scenario="forward", extra="")),
                                            SCENARIO_NAMES), release)
    found = failure("NotImplementedError", "Could not run 'aten::convolution'", "conv.py:forward", outcome="error")
    record = _record(tmp_path, Attempt("error", failure=found), known=known)
    assert (record["outcome"] == "known-failure") is held
    assert (_record(tmp_path, Attempt("passed"), known=known)["known_failure"] is not None) is held


def test_a_run_predicting_a_release_reads_the_entries_that_hold_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_neuron import backends
    from hf_neuron.matrix.options import MatrixConfig
    from hf_neuron.matrix.profiles import PROFILES

    monkeypatch.setattr(backends, "real_backend_installed", lambda: False)
    config = MatrixConfig.from_values({"matrix_profile": "trainium"})
    release = PROFILES["trainium"].predicts
    entries = config.known().entries
    assert entries and all(release in entry.lists["releases"] for entry in entries)
    assert len(entries) < len(load_known_failures(KNOWN_FAILURES_FILE, SCENARIO_NAMES).entries)
