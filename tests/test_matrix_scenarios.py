"""The scenario contract: parity against the CPU with the per-dtype tolerance, the shared tiny checkpoint, and
the built-in scenarios on a tiny Llama (on the CPU: the runner's CPU re-run calls them the same way)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from hf_neuron.matrix.builtin_scenarios import SCENARIOS
from hf_neuron.matrix.scenarios import SCENARIO_NAMES, TOLERANCES, CaseContext, compare

torch = pytest.importorskip("torch")


def test_compare_uses_the_dtype_tolerance() -> None:
    expected = torch.tensor([1.0, -2.0, 3.0])
    assert compare(expected + 1e-5, expected, "logits").outcome == "passed"
    missed = compare(expected + 1e-2, expected, "logits")
    assert missed.outcome == "failed" and missed.parity_missed
    assert missed.parity["tolerance"] == pytest.approx(TOLERANCES["float32"].bound(3.0))
    assert missed.message.startswith("logits differ from the CPU's: max abs diff 0.01 > tolerance")
    halves = expected.to(torch.bfloat16)
    assert compare(halves + 0.03, halves, "logits").outcome == "passed"


def test_every_builtin_scenario_has_a_known_name() -> None:
    assert set(SCENARIOS) <= set(SCENARIO_NAMES)


def test_a_checkpoint_is_built_once_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Path] = []

    def materialize(model_type: str, out_dir: Path, *, seed: int = 0) -> Path:
        out_dir.mkdir(parents=True)
        (out_dir / "config.json").write_text(model_type)
        built.append(out_dir)
        return out_dir

    fake = types.ModuleType("hf_neuron.tiny.checkpoint")
    fake.materialize = materialize  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hf_neuron.tiny.checkpoint", fake)
    ctx = CaseContext("llama", "decoder", "forward", "neuron", tmp_path)
    first, second = ctx.checkpoint, ctx.on("cpu").checkpoint
    assert first == second == tmp_path / "checkpoints" / "llama"
    assert (first / "config.json").read_text() == "llama" and len(built) == 1
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["llama"]  # no staging left behind


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workdir holding a tiny Llama where the runner's checkpoint cache expects it."""
    from transformers import LlamaConfig, LlamaForCausalLM

    workdir = tmp_path_factory.mktemp("workdir")
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(workdir / "checkpoints" / "llama")
    return workdir


@pytest.mark.slow
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_builtin_scenarios_pass_on_the_cpu(tiny_llama: Path, scenario: str) -> None:
    result = SCENARIOS[scenario](CaseContext("llama", "decoder", scenario, "cpu", tiny_llama))
    assert result.outcome == "passed", result.message
    if scenario == "forward":
        assert result.parity is not None and result.parity["value"] == 0.0
