"""Reading compat/ data for the report: the baseline file, the ranking CSV, the catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_neuron.report.compat import baseline_mode, load_baseline, load_catalog, load_ranking
from hf_neuron.report.load import ReportInputError

BASELINE = Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json"


def test_the_committed_baseline_counts_9_for_inference_and_3_for_training() -> None:
    baseline = load_baseline(BASELINE)
    assert baseline.name == "Optimum Neuron 0.4.5"
    assert baseline.inference == {
        "granite", "llama", "llama4_text", "mixtral", "phi3", "qwen2", "qwen3", "qwen3_moe", "smollm3"
    }
    assert baseline.training == {"granite", "llama", "qwen3"}


def test_scenarios_compare_with_the_baselines_matching_mode() -> None:
    baseline = load_baseline(BASELINE)
    assert [baseline_mode(s) for s in ("load", "generate", "train", "lora", "ddp", "compile")] == [
        "inference", "inference", "training", "training", "training", "inference"
    ]
    assert baseline.supports("phi3", "generate") and not baseline.supports("phi3", "train")
    assert not baseline.supports("mistral", "load")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", r"baseline.json:1: not valid JSON"),
        ('{"baseline": "x", "version": "1"}', "needs 'baseline', 'version' and a 'text_generation' object"),
        ('{"baseline": "x", "version": "1", "text_generation": {"llama": {"inference": "yes", "training": false}}}',
         "'text_generation.llama' needs boolean 'inference' and 'training'"),
    ],
)
def test_a_malformed_baseline_is_named(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(content)
    with pytest.raises(ReportInputError, match=message):
        load_baseline(path)


def test_ranking(tmp_path: Path) -> None:
    path = tmp_path / "ranking.csv"
    path.write_text("model_type,rank,source\nllama,1,hub downloads\nqwen3,2,hub downloads\n")
    ranking = load_ranking(path)
    assert dict(ranking.ranks) == {"llama": 1, "qwen3": 2}
    assert ranking.source == "hub downloads"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("model_type,rank\nllama,1\n", "needs columns model_type, rank, source \\(missing source\\)"),
        ("model_type,rank,source\nllama,1,x\nqwen3,first,x\n", "ranking.csv:3: rank must be a whole number >= 1, got 'first'"),
        ("model_type,rank,source\nllama,1,x\nllama,2,x\n", "ranking.csv:3: 'llama' is ranked twice"),
    ],
)
def test_a_malformed_ranking_is_named_with_its_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "ranking.csv"
    path.write_text(content)
    with pytest.raises(ReportInputError, match=message):
        load_ranking(path)


@pytest.mark.parametrize("wrap", [lambda e: e, lambda e: {"architectures": e}, lambda e: {"entries": e}])
def test_catalog_shapes(tmp_path: Path, wrap) -> None:
    entries = [{"model_type": "llama", "group": "decoder", "family": "llama", "model_class": "LlamaForCausalLM"}]
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(wrap(entries)))
    assert load_catalog(path) == {"llama": entries[0]}


def test_a_catalog_entry_without_model_type_is_named(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps([{"model_type": "llama"}, {"group": "decoder"}]))
    with pytest.raises(ReportInputError, match="entry 1 is not an object with a 'model_type'"):
        load_catalog(path)
