"""hf_neuron/device/trainium_sources.toml: the releases the trainium profile can predict, the one it predicts, and the
sources every fact cites — the rules its reader checks, and what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.vocabulary import trainium_sources
from hf_neuron.vocabulary.datafiles import DataFileError

TEXT = trainium_sources.SOURCES_FILE.read_text(encoding="utf-8")


def test_the_profile_predicts_the_released_backend_users_install() -> None:
    sources = trainium_sources.load()
    assert list(sources.releases) == ["pre-release", "2.33", "2.34"]
    assert sources.predicted.id == "2.34" and sources.predicted.torch_neuronx == ("2.13.3.1", "2.14.3.1")
    assert sources.predicted.label == "torch-neuronx 2.13.3.1 / 2.14.3.1 (Neuron 2.34.0, 2026-11-30)"
    assert sources.releases["pre-release"].label == "the pre-release tree (torch-neuronx 0.1.0, 2026-04-21)"


def test_every_source_says_when_and_what_of_it_was_read() -> None:
    for source in trainium_sources.load().sources.values():
        assert source.date and source.dated in ("modified", "released", "read") and source.read, source.id
        assert source.url.startswith("https://") or source.kind == "study-notes", source.id
    released = {name for name, source in trainium_sources.load().sources.items() if source.released}
    assert {"env-vars", "random-number-generation", "torch-compile-reference", "torchneuron-notes-2.34"} <= released
    assert "pre-release-tree" not in released and "study-notes" not in released


@pytest.mark.parametrize(("old", "new", "problem"), [
    ('predicts = "2.34"', 'predicts = "2.35"', r"predicts = '2.35' must name a release"),
    ('kind = "released-page"', 'kind = "blog"', r"'blog' is not one of released-page, release-note"),
    ('date = "2026-10-26"', 'date = "October 2026"', r"'October 2026' is not a date \(YYYY-MM-DD\)"),
    ('dated = "modified"', 'dated = "roughly"', "'roughly' is not one of modified, released, read"),
    ('id = "evrf004"', 'id = "evrf060"', "'evrf060' is defined twice"),
    ('read = "the message and why it happens"\n', "", "missing read"),
    ('url = "https://github.com/aws-neuron/torch-neuronx/releases/tag/v2.34.0"', 'url = "github.com/x"',
     r"url: must be a link"),
    ('torch_neuronx = ["2.13.3.1", "2.14.3.1"]', 'torch_neuronx = ["latest"]', "must be a non-empty list of versions"),
])
def test_a_malformed_file_is_refused_with_what_is_wrong(tmp_path: Path, old: str, new: str, problem: str) -> None:
    assert old in TEXT
    path = tmp_path / "trainium_sources.toml"
    with pytest.raises(DataFileError, match=problem):
        trainium_sources.parse(path, TEXT.replace(old, new, 1))
