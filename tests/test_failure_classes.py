"""Failure classes: each rule of the reviewed table on the kind of message it exists for, and what comes first."""

from __future__ import annotations

import pytest

from hf_neuron.matrix.case.classify import FAILURE_CLASSES, RULES, classify


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
    ],
)
def test_rules(text: str, expected: str) -> None:
    assert classify("error", text, cpu_outcome="passed", parity_missed=False) == expected


def test_what_the_runner_knows_comes_before_the_rules() -> None:
    oom_text = "torch.OutOfMemoryError: out of memory"
    assert classify("error", oom_text, cpu_outcome="error", parity_missed=False) == "fails-on-cpu"
    assert classify("timeout", oom_text, cpu_outcome="timeout", parity_missed=False) == "fails-on-cpu"
    assert classify("timeout", "CaseTimeout: ran past", cpu_outcome="passed", parity_missed=False) == "timeout"
    abort = "WorkerCrash: killed by signal SIGABRT"
    assert classify("crashed", abort, cpu_outcome=None, parity_missed=False) == "crash"
    assert (classify("crashed", "WorkerCrash: killed by signal SIGKILL", cpu_outcome=None, parity_missed=False)
            == "out-of-memory")
    assert classify("failed", "CheckFailed: logits differ", cpu_outcome="passed", parity_missed=True) == (
        "numerics-mismatch"
    )


def test_the_table_is_closed_and_documented() -> None:
    assert {rule.failure_class for rule in RULES} <= set(FAILURE_CLASSES)
    assert all(rule.why for rule in RULES)
