"""The baseline file (compat/baselines/): what Optimum Neuron 0.4.5 supports, read and validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.errors import InputError
from hf_neuron.report.tables import baseline_mode

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
    assert baseline.supports("phi3", baseline_mode("generate"))
    assert not baseline.supports("phi3", baseline_mode("train"))
    assert not baseline.supports("mistral", baseline_mode("load"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", r"baseline.json: line 1: not valid JSON"),
        ('{"baseline": "x", "version": "1"}', "needs 'baseline', 'version' and a 'text_generation' object"),
        ('{"baseline": "x", "version": "1", "text_generation": {"llama": {"inference": "yes", "training": false}}}',
         "'text_generation.llama' needs boolean 'inference' and 'training'"),
    ],
)
def test_a_malformed_baseline_is_named(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        load_baseline(path)
