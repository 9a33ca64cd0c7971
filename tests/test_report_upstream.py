"""The report's view of the libraries' own tests: an index column and a section per architecture, from fixture
upstream records beside the matrix's fixture records."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.errors import InputError
from hf_neuron.report.site import build_site
from hf_neuron.report.upstream import load_upstream
from hf_neuron.upstream.plugin import PluginConfig, make_record, text_failure
from hf_neuron.upstream.records import Device, UpstreamRecord
from hf_neuron.upstream.suites import suite
from hf_neuron.vocabulary.outcomes import Outcome

RECORDS = Path(__file__).parent / "fixtures" / "records" / "run-1"
BASELINE = load_baseline(Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json")


def _record(arch: str, test: str, device: Device, outcome: Outcome, failure: str | None = None) -> UpstreamRecord:
    config = PluginConfig("up-1", "transformers", arch, device, "results", {"backend": "reference"}, "list.toml")
    return make_record(config, f"tests/models/{arch}/test_modeling_{arch}.py::T::{test}", outcome,
                       reason="Inductor has no neuron lowering" if outcome == "known-failure" else None,
                       failure=None if failure is None else text_failure(failure), started=0.0, finished=1.0)


def _peft(test: str, device: Device, outcome: Outcome, stand_in: str | None = None,
          failure: str | None = None) -> UpstreamRecord:
    config = PluginConfig("up-2", "peft", None, device, "results", {"backend": "reference"}, "list.toml",
                          unit_pattern=r"test_(?P<unit>[a-z_]+)\.py")
    return make_record(config, f"tests/test_decoder_models.py::TestDecoderModels::{test}", outcome,
                       failure=None if failure is None else text_failure(failure), started=0.0, finished=1.0,
                       stand_ins=(stand_in,) if stand_in else ())


def _write(directory: Path, records: list[UpstreamRecord], extra: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "up.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + extra)
    return directory


UPSTREAM = [
    _record("llama", "test_a", "cpu", "passed"), _record("llama", "test_a", "neuron", "passed"),
    _record("llama", "test_compile", "cpu", "passed"),
    _record("llama", "test_compile", "neuron", "known-failure", "InductorError: x"),
    _record("qwen3", "test_a", "cpu", "passed"), _record("qwen3", "test_a", "neuron", "passed"),
    _record("qwen3", "test_op", "cpu", "passed"),
    _record("qwen3", "test_op", "neuron", "failed", "RuntimeError: no <b>kernel</b> for aten::op"),
    # PEFT's decoder tests: one on the Llama stand-in (it counts for llama), one that read no stand-in
    _peft("test_train", "cpu", "passed", "trl-internal-testing/tiny-random-LlamaForCausalLM"),
    _peft("test_train", "neuron", "passed", "trl-internal-testing/tiny-random-LlamaForCausalLM"),
    _peft("test_config", "cpu", "passed"), _peft("test_config", "neuron", "failed", failure="RuntimeError: x"),
]


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("report-upstream")
    upstream = _write(work / "upstream", UPSTREAM, extra="not json\n")
    build_site([RECORDS], work / "site", baseline=BASELINE, upstream=[upstream])
    return work / "site"


def test_the_index_has_a_column_for_the_upstream_tests(site: Path) -> None:
    html = (site / "index.html").read_text()
    rows = {m.group(1): _text(m.group(0)) for m in re.finditer(r'<tr data-name="([^"]+)".*?</tr>', html, re.S)}
    assert rows["llama"].endswith("pass (1) pass (1)")  # transformers' tests, then PEFT's on its stand-in
    assert rows["qwen3"].endswith("1 neuron-only not run")
    assert rows["mistral"].endswith("not run not run")
    assert "transformers' own tests" in _text(html) and "transformers's" not in _text(html)
    assert "1 upstream record line skipped" in _text(html)


def test_an_architecture_page_shows_both_devices_and_neuron_s_own_failures(site: Path) -> None:
    page = _text((site / "arch" / "qwen3.html").read_text())
    assert "transformers' own tests" in page
    assert "cpu 2 0 0 — neuron 1 1 0 0" in page
    assert "Neuron-only failures: 1" in page
    assert "RuntimeError: no <b>kernel</b> for aten::op" in page  # escaped markup, shown as text
    assert "<b>kernel</b>" not in (site / "arch" / "qwen3.html").read_text()
    llama = _text((site / "arch" / "llama.html").read_text())
    assert "Neuron-only failures: none" in llama
    assert "test_compile : Inductor has no neuron lowering" in llama
    assert "own tests" not in _text((site / "arch" / "mistral.html").read_text())


def test_each_library_has_a_section_with_its_units_on_the_index(site: Path) -> None:
    html = _text((site / "index.html").read_text())
    assert "peft's own tests on neuron" in html and "transformers' own tests on neuron" in html
    assert "decoder_models 2 0 0 1 1 0 0 0 1 1" in html  # unit, CPU, neuron, same failure, neuron-only, stand-ins
    assert "1 neuron-only failure." in html
    peft_on_llama = _text((site / "arch" / "llama.html").read_text())
    assert "The tests of peft that ran on this architecture's Hub stand-in" in peft_on_llama


def test_without_upstream_records_the_report_is_unchanged(tmp_path: Path) -> None:
    build_site([RECORDS], tmp_path / "site", baseline=BASELINE)
    assert "upstream" not in (tmp_path / "site" / "index.html").read_text()


def test_an_upstream_directory_that_is_missing_or_empty_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--upstream: no such directory or file"):
        load_upstream([tmp_path / "nowhere"])
    with pytest.raises(InputError, match="--upstream: no valid upstream record"):
        load_upstream([_write(tmp_path / "empty", [], extra="{}\n")])


def _diffusers(test: str, device: Device, outcome: Outcome, failure: str | None = None) -> UpstreamRecord:
    config = PluginConfig("up-3", "diffusers", None, device, "results", {"backend": "reference"}, "list.toml",
                          unit_pattern=suite("diffusers").unit_pattern,
                          architectures=dict(suite("diffusers").architectures))
    return make_record(config, f"tests/models/transformers/test_models_transformer_flux.py::TestFlux::{test}",
                       outcome, failure=None if failure is None else text_failure(failure), started=0.0,
                       finished=1.0)


def test_a_diffusers_test_module_counts_for_the_backbone_class_it_tests(tmp_path: Path) -> None:
    """diffusers' tests use no stand-in of a catalog architecture: their record names the class their module tests,
    so Flux's row of the index gets diffusers' cell, and a neuron-only failure shows there and in its section."""
    passing = [_diffusers("test_output", device, "passed") for device in ("cpu", "neuron")]
    failing = [_diffusers("test_training", "cpu", "passed"),
               _diffusers("test_training", "neuron", "failed", "RuntimeError: view size is not compatible")]
    assert {r["architecture"] for r in passing} == {"FluxTransformer2DModel"}
    (library,) = load_upstream([_write(tmp_path / "passing", passing)]).libraries
    assert library.cell("FluxTransformer2DModel") == ("pass (1)", 0)
    assert library.cell("llama") is None  # diffusers ran nothing there
    (library,) = load_upstream([_write(tmp_path / "failing", passing + failing)]).libraries
    assert library.cell("FluxTransformer2DModel") == ("1 neuron-only", 1)
    build_site([RECORDS], tmp_path / "site", baseline=BASELINE, upstream=[tmp_path / "failing"])
    html = _text((tmp_path / "site" / "index.html").read_text())
    assert "diffusers' own tests on neuron" in html
    assert "transformer_flux 2 0 0 1 1 0 0 0 1 0" in html  # unit, CPU, neuron, same failure, neuron-only, stand-ins
    assert "1 neuron-only failure." in html and "view size is not compatible" in html


def test_a_record_that_names_no_architecture_counts_for_none() -> None:
    config = PluginConfig("up-4", "accelerate", None, "cpu", "results", {"backend": "reference"}, "list.toml",
                          unit_pattern=suite("accelerate").unit_pattern)
    record = make_record(config, "tests/test_hooks.py::HooksModelTester::test_x", "passed", started=0.0,
                         finished=1.0)
    assert record["model_type"] == "hooks" and "architecture" not in record


def test_a_library_section_says_which_release_its_tests_ran_against(tmp_path: Path) -> None:
    against = "trl 1.9.0, installed beside 1.16.0 (beside/trl-1.9.0)"
    env = {"backend": "reference", "upstream_source": {"kind": "git", "commit": "f2cd577", "against": against}}
    config = PluginConfig("up-3", "trl", None, "cpu", "results", env, "list.toml",
                          unit_pattern=r"test_(?P<unit>[a-z_]+)\.py")
    records = [make_record(config, "tests/test_sft_trainer.py::T::test_train", "passed", started=0.0, finished=1.0)]
    [library] = load_upstream([_write(tmp_path / "upstream", records)]).libraries
    assert library.source == "git: commit f2cd577, against trl 1.9.0, installed beside 1.16.0 (beside/trl-1.9.0)"


def test_a_test_neuron_did_not_run_shows_as_a_gap_not_a_pass(tmp_path: Path) -> None:
    """Flux's test_training passed on the CPU and has no neuron record (a crash cut the neuron run short): the old
    cell said "pass (1)"."""
    records = [_diffusers("test_output", device, "passed") for device in ("cpu", "neuron")]
    records.append(_diffusers("test_training", "cpu", "passed"))
    (library,) = load_upstream([_write(tmp_path / "gap", records)]).libraries
    assert library.cell("FluxTransformer2DModel") == ("1 not run on neuron", 1)
    assert not library.ok and library.neuron_gaps == 1
    build_site([RECORDS], tmp_path / "site", baseline=BASELINE, upstream=[tmp_path / "gap"])
    html = _text((tmp_path / "site" / "index.html").read_text())
    assert "0 neuron-only failures; 1 test passed on the CPU and not run on neuron." in html
    assert "Passed on the CPU, not run on neuron (no record: a crash cut the neuron run short; or skipped on neuron " \
           "only): test_training" in html
