"""The matrix `ddp` scenario: 2 long-lived ranks' gradients against one process on the whole batch, each rank's device
and peak memory as the ranks report them, untested below 2 devices, and a failing rank's error."""

from __future__ import annotations

from pathlib import Path

import pytest
from _helpers import run

from hf_neuron.matrix.scenarios import ddp as ddp_module
from hf_neuron.matrix.scenarios.contract import CaseContext
from hf_neuron.matrix.scenarios.ddp import ddp


@pytest.mark.distributed
def test_ddp_passes_on_a_tiny_llama_with_each_ranks_facts_and_keeps_its_ranks(tmp_path: Path) -> None:
    ctx = CaseContext("llama", "decoder", "ddp", "neuron", tmp_path)
    result = ddp(ctx)
    assert result.outcome == "passed", result.message
    assert result.parity is not None and result.parity["metric"] == "max_abs_diff_over_bound"
    assert result.parity["value"] <= 1e-6  # the same kernels; only the order of a 2-term sum differs
    assert result.parity["tolerance"] > 1e-5 and result.parity["compared"] > 0
    assert sorted(path.name for path in ctx.scratch_path.iterdir()) == ["rank0.pt", "rank1.pt"]
    ranks = result.details["ranks"]  # type: ignore[index]
    assert [(rank["rank"], rank["device"]) for rank in ranks] == [(0, "neuron:0"), (1, "neuron:1")]
    assert all(rank["peak_memory_bytes"] > 0 for rank in ranks)
    first = ddp_module._ranks["neuron"]
    again = ddp(CaseContext("gpt2", "decoder", "ddp", "neuron", tmp_path))
    assert again.outcome == "passed", again.message
    assert ddp_module._ranks["neuron"] is first and first.alive()  # the same ranks served the second case


def test_ddp_is_untested_with_a_reason_below_two_devices(tmp_path: Path) -> None:
    result = run(
        f"""
        from pathlib import Path
        from hf_neuron.matrix.scenarios.ddp import ddp
        from hf_neuron.matrix.scenarios.contract import CaseContext
        result = ddp(CaseContext("llama", "decoder", "ddp", "neuron", Path({str(tmp_path)!r})))
        print(result.outcome, result.gap, "|", result.message)
        """,
        {"HF_NEURON_EMULATOR_DEVICES": "1"},
    )
    assert result.stdout.strip() == (
        "untested devices | ddp needs 2 neuron devices, this process sees 1 (the reference device: set "
        "HF_NEURON_EMULATOR_DEVICES=2)"), result.stderr
    assert not (tmp_path / "checkpoints").exists()  # untested before building anything


@pytest.mark.distributed
def test_a_failing_rank_raises_with_its_error_and_the_next_case_gets_new_ranks(tmp_path: Path) -> None:
    from hf_neuron.tiny.transformers.checkpoint import materialize

    broken = tmp_path / "broken"
    materialize("t5", broken / "checkpoints" / "llama")  # a seq2seq checkpoint where the causal LM's should be
    with pytest.raises(ValueError, match=r"^Unrecognized configuration class") as failure:
        ddp(CaseContext("llama", "decoder", "ddp", "neuron", broken))
    assert str(failure.value).startswith("Unrecognized configuration class <class "
                                         "'transformers.models.t5.configuration_t5."), failure.value
    assert str(failure.value).endswith("(in the 2-process DDP run, exit 1)"), failure.value
    assert not ddp_module._ranks["neuron"].alive()
    assert ddp(CaseContext("llama", "decoder", "ddp", "neuron", tmp_path)).outcome == "passed"
