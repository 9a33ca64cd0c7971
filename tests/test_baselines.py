"""The baseline file (compat/baselines/): what Optimum Neuron 0.4.5 supports, read and validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.errors import InputError
from hf_neuron.matrix.scenarios.registry import load_scenarios
from hf_neuron.report.tables import baseline_mode

BASELINE = Path(__file__).parents[1] / "compat" / "baselines" / "optimum-neuron-0.4.5.json"


def test_the_committed_baseline_says_what_it_supports_per_group() -> None:
    baseline = load_baseline(BASELINE)
    assert baseline.name == "Optimum Neuron 0.4.5"
    assert {group: baseline.count(group, "inference") for group in baseline.groups} == {
        "audio": 1, "decoder": 9, "encoder-decoder": 1, "image-text": 0, "diffusion": 3}
    assert {m for m, s in baseline.groups["decoder"].items() if s.inference} == {
        "granite", "llama", "llama4_text", "mixtral", "phi3", "qwen2", "qwen3", "qwen3_moe", "smollm3"
    }
    assert baseline.training == {"granite", "llama", "qwen3"}
    assert baseline.supports("t5", "inference", "encoder-decoder")
    assert not baseline.supports("t5", "inference", "decoder")  # compared within its group only
    assert "full-size checkpoints" in baseline.supported_means
    assert all(support.source for table in baseline.groups.values() for support in table.values())


def test_scenarios_compare_with_the_baselines_matching_mode() -> None:
    baseline = load_baseline(BASELINE)
    scenarios = load_scenarios()
    modes = {name: baseline_mode(scenarios[name].facts) for name in ("load", "generate", "train", "lora", "ddp",
                                                                      "compile")}
    assert modes == {"load": "inference", "generate": "inference", "train": "training", "lora": "training",
                     "ddp": "training", "compile": "inference"}
    # a scenario of one's own that trains is compared with training support, whatever its name
    assert baseline_mode({"kind": "extra", "trains": True}) == "training"
    assert baseline.supports("phi3", modes["generate"])
    assert not baseline.supports("phi3", modes["train"])
    assert not baseline.supports("mistral", modes["load"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", r"baseline.json: line 1: not valid JSON"),
        ('{"baseline": "x", "version": "1"}', "needs 'supported_means'"),
        ('{"baseline": "x", "version": "1", "supported_means": "m"}', "needs a 'support' object of catalog group"),
        ('{"baseline": "x", "version": "1", "supported_means": "m", "support": {"decoder": {"llama": '
         '{"inference": "yes", "training": false, "source": "s"}}}}',
         "'support.decoder.llama' needs boolean 'inference' and 'training'"),
        ('{"baseline": "x", "version": "1", "supported_means": "m", "support": {"decoder": {"llama": '
         '{"inference": true, "training": false}}}}', "'support.decoder.llama' needs a 'source'"),
    ],
)
def test_a_malformed_baseline_is_named(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        load_baseline(path)
