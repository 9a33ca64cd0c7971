"""Failure classes (each rule of the reviewed table on the kind of message it exists for, and what comes first), and
the CPU's verdict: only the same failure on the CPU excuses the device's — one rule for the matrix, old records and
the libraries' own tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.compat.known_failures import KnownFailures
from hf_neuron.matrix.case.execute import CaseRunner
from hf_neuron.matrix.case.verdict import Attempt, compare_with_cpu
from hf_neuron.matrix.results.store import RecordWriter
from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult
from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration, ScenarioSet
from hf_neuron.matrix.selection import Case
from hf_neuron.vocabulary.failures import FAILURE_CLASSES, RULES, classify, failure


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, neuron:0 and "
         "cpu!", "device-hardcoded"),
        ("AssertionError: Torch not compiled with CUDA enabled", "device-hardcoded"),
        ("RuntimeError: Expected a 'cuda' device type for generator but found 'neuron'", "device-hardcoded"),
        ("CheckFailed: 3 tensors not on the expected device neuron after from_pretrained(device_map='neuron')",
         "device-hardcoded"),
        ("RuntimeError: device neuron is invalid", "device-hardcoded"),
        ("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'", "unsupported-dtype"),
        ("TypeError: Got unsupported ScalarType BFloat16", "unsupported-dtype"),
        ("RuntimeError: Neuron tensors only support contiguous or preserve memory format", "memory-format"),
        ("NotImplementedError: Could not run 'aten::convolution_overrideable' with arguments from the 'neuron' "
         "backend.", "op-missing"),
        ("NotImplementedError: The operator 'aten::_foo' is not currently implemented for the neuron device",
         "op-missing"),
        ("NotImplementedError: subclasses must implement this", "op-missing"),
        ("torch._dynamo.exc.BackendCompilerFailed: backend='neuron' raised: ...", "compile"),
        ("torch._dynamo.exc.InvalidBackend: Invalid backend: 'neuron'", "compile"),
        ("torch.OutOfMemoryError: neuron out of memory. Tried to allocate 2.00 GiB", "out-of-memory"),
        ("MemoryError: ", "out-of-memory"),
        ("ValueError: something else entirely", "other"),
        ("NotImplementedError: attn_implementation='flex_attention' needs Inductor (...), which has no lowering for "
         "the neuron device: load the model with attn_implementation='sdpa'", "flex-attention"),
        ("ValueError: FlexAttention is only supported on CUDA, CPU, HPU, or MPS devices. Found input tensors on "
         "neuron device.", "flex-attention"),
        ("ValueError: FuyuModel does not support an attention implementation through torch's flex_attention. Please "
         "request the support for this architecture", "other"),  # the model's: the CPU fails the same way
        ("ValueError: generate(compile_config=CompileConfig(backend='inductor')) compiles with Inductor, which has no "
         "lowering for the neuron device: pass CompileConfig(backend='neuron', dynamic=False, mode='default')",
         "needs-inductor"),
        ("torch._inductor.exc.InductorError: LoweringException: AssertionError:\n  target: aten.mean.dim\n"
         "  Pointwise(\n      'neuron',", "needs-inductor"),
        ("torch._dynamo.exc.BackendCompilerFailed: backend='neuron' raised:\nNeuronCompilerRejectionError: the "
         "Neuron compiler rejects integer scatter-with-compute (aten.scatter_add on torch.int64)", "compile"),
        ("CheckFailed: compiled decoding recompiles as it decodes: 5 graphs for 6 new tokens, 8 for 10 "
         "(7 recompilations: 0/0: kwargs['cache'].layers[0].cumulative_length_int == 12)", "compile"),
    ],
)
def test_rules(text: str, expected: str) -> None:
    assert classify("error", text, parity_missed=False) == expected


def test_what_the_runner_knows_comes_before_the_rules() -> None:
    oom_text = "torch.OutOfMemoryError: out of memory"
    assert classify("timeout", oom_text, parity_missed=False) == "timeout"
    abort = "WorkerCrash: killed by signal SIGABRT"
    assert classify("crashed", abort, parity_missed=False) == "crash"
    assert classify("crashed", "WorkerCrash: killed by signal SIGKILL", parity_missed=False) == "out-of-memory"
    assert classify("failed", "CheckFailed: logits differ", parity_missed=True) == "numerics-mismatch"


def _error(kind: str, message: str, frame: str = "modeling_llama.py:forward") -> Attempt:
    return Attempt("error", failure=failure(kind, message, frame, outcome="error"))


def test_only_the_same_failure_on_the_cpu_excuses_the_device() -> None:
    on_neuron = _error("ValueError", "expected 12 tokens on neuron:0, got 17")
    assert compare_with_cpu(on_neuron, _error("ValueError", "expected 12 tokens on cpu, got 13")) == (
        "fails-on-cpu-too")
    assert compare_with_cpu(on_neuron, Attempt("passed")) == "passes"
    assert compare_with_cpu(on_neuron, None) == "not-rerun"
    assert compare_with_cpu(on_neuron, _error("KeyError", "'heavily_compressed_attention'")) == "different-failure"
    # another message of a specific class is the same failure; of 'other', it is not
    oom = _error("torch.OutOfMemoryError", "neuron out of memory")
    assert compare_with_cpu(oom, _error("MemoryError", "cannot allocate", "alloc.py:grow")) == "fails-on-cpu-too"
    assert compare_with_cpu(_error("ValueError", "bad"), _error("ValueError", "worse", "x.py:y")) == (
        "different-failure")


def test_a_timeout_never_excuses_and_is_never_excused() -> None:
    timeout = Attempt("timeout", failure=failure("CaseTimeout", "the case ran past its 300 s limit", outcome="timeout"))
    assert compare_with_cpu(timeout, timeout) == "different-failure"
    assert compare_with_cpu(_error("ValueError", "bad"), timeout) == "different-failure"
    crash = Attempt("crashed", failure=failure("WorkerCrash", "killed by signal SIGABRT", outcome="crashed"))
    assert compare_with_cpu(crash, crash) == "different-failure"


def _run_on_neuron(message: str, tmp_path: Path) -> tuple[dict[str, object], list[str]]:
    """Run one case whose scenario raises ``message`` on the device and passes on the CPU; the record and the
    devices the scenario ran on."""
    devices: list[str] = []

    def scenario(ctx: CaseContext) -> ScenarioResult:
        devices.append(ctx.device)
        if ctx.device != "cpu":
            raise NotImplementedError(message)
        return ScenarioResult.passed()

    declaration = ScenarioDeclaration("forward", "core", False, {"transformers": scenario}, "it does")
    runner = CaseRunner(ScenarioSet({"forward": declaration}), KnownFailures(), RecordWriter(tmp_path, "test"),
                        "r", {"backend": "reference"}, "neuron", 60.0, tmp_path)
    record = runner.run(Case("llama", "decoder", "forward", declaration.facts))
    return dict(record), devices


def test_a_failure_that_needs_inductor_is_not_rerun_on_the_cpu(tmp_path: Path) -> None:
    record, devices = _run_on_neuron("attn_implementation='flex_attention' needs Inductor", tmp_path / "inductor")
    assert (devices, record["cpu_outcome"], record["cpu_verdict"]) == (["neuron"], None, "not-rerun")
    record, devices = _run_on_neuron("Could not run 'aten::x' with arguments from the 'neuron' backend",
                                      tmp_path / "op")
    assert (devices, record["cpu_outcome"], record["cpu_verdict"]) == (["neuron", "cpu"], "passed", "passes")


def test_the_table_is_closed_and_documented() -> None:
    assert {rule.failure_class for rule in RULES} <= set(FAILURE_CLASSES)
    assert all(rule.why for rule in RULES)
