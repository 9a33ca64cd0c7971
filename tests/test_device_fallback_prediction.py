"""The reference device predicts Trainium's CPU fallbacks: every operator a model dispatches on the device that
TorchNeuron does not implement (hf_neuron/device/trainium_ops.toml) is counted, with its calls, and nothing else —
not the device's own kernels' work, not what the real backend never dispatches."""

from __future__ import annotations

import json
import textwrap

import pytest
from _helpers import run

#: The trainium profile's routes and op log.
TRAINIUM = {"HF_NEURON_EMULATOR_OP_LOG": "1", "HF_NEURON_EMULATOR_DISPATCH": "trainium"}
CPU_ROUTES = {"HF_NEURON_EMULATOR_OP_LOG": "1", "HF_NEURON_EMULATOR_DISPATCH": "cpu"}


def _ops(code: str, env: dict[str, str]) -> dict[str, dict[str, int]]:
    """Run ``code`` on the device with ``env``; the operators it executed and those predicted to fall back."""
    result = run(f"""
        import json, torch
        torch.neuron.reset_op_log()
{_indent(code)}
        print(json.dumps({{"executed": torch.neuron.get_executed_ops(), "fallback": torch.neuron.get_fallback_ops()}}))
        """, env)
    assert result.returncode == 0, result.stderr
    logged: dict[str, dict[str, int]] = json.loads(result.stdout.splitlines()[-1])
    return logged


def _indent(code: str) -> str:
    return textwrap.indent(textwrap.dedent(code).strip(), " " * 8)


def test_operators_are_named_by_overload_and_counted_per_call() -> None:
    logged = _ops("""
        x = torch.randn(4, 4, device="neuron")
        for _ in range(3):
            x.argmax()
        (x @ x).relu()
        """, TRAINIUM)
    assert logged["fallback"]["aten::argmax.out"] == 3, "argmax is not native: its out= variant falls back, 3 calls"
    assert logged["executed"]["aten::mm"] == 1 and "aten::mm" not in logged["fallback"], "mm is native"
    assert "aten::relu" not in logged["fallback"]


def test_a_composite_of_a_native_part_takes_the_real_backends_route() -> None:
    code = """
        x = torch.randn(4, 4, device="neuron")
        x / 3
        x > 0
        """
    trainium = _ops(code, TRAINIUM)
    assert "aten::div.out" in trainium["executed"] and "aten::div.Tensor" not in trainium["executed"]
    assert trainium["fallback"] == {"aten::normal_": 1}, "div.out and gt.Scalar_out are native on Trainium"
    cpu_routes = _ops(code, CPU_ROUTES)  # every CPU kernel run directly: the functional variants look like fallbacks
    assert {"aten::div.Tensor", "aten::gt.Scalar"} <= set(cpu_routes["fallback"])


def test_a_native_composite_is_not_decomposed_into_what_it_is_not() -> None:
    code = """
        x = torch.randn(6, device="neuron")
        x.argsort(stable=True)
        """
    trainium = _ops(code, TRAINIUM)
    assert trainium["executed"].get("aten::argsort.stable") == 1
    assert not [name for name in trainium["fallback"] if name.startswith("aten::sort")], \
        "TorchNeuron implements argsort.stable: its sort is not dispatched"
    sort = _ops("torch.randn(6, device='neuron').sort()", TRAINIUM)
    assert "aten::sort.values_stable" in sort["fallback"], "sort itself is not native"


def test_the_devices_own_kernels_work_is_not_the_models() -> None:
    code = """
        x = torch.randn(64, device="neuron")
        torch.manual_seed(0)
        torch.nn.functional.dropout(x, 0.5, training=True)
        """
    logged = _ops(code, TRAINIUM)
    assert logged["executed"].get("aten::native_dropout") == 1
    assert "aten::bernoulli_.float" not in logged["executed"], "drawn inside the device's dropout kernel"
    direct = _ops("torch.empty(64, device='neuron').bernoulli_(0.5)", TRAINIUM)
    assert direct["fallback"].get("aten::bernoulli_.float") == 1, "called by the model itself: counted"


def test_own_kernels_are_native_on_trainium_or_counted() -> None:
    result = run("""
        import torch
        from hf_neuron.device import runtime, trainium_ops
        native = trainium_ops.load().native
        print(sorted(set(runtime.extension().own_kernels()) - native))
        torch.neuron.reset_op_log()
        x = torch.randn(3, device="neuron", requires_grad=True)
        torch.ops.aten._efficientzerotensor([2], device="neuron")
        print(torch.neuron.get_fallback_ops())
        """, TRAINIUM)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # _copy_from: reached only through copy_'s composite, which TorchNeuron implements itself (never on Trainium);
    # _efficientzerotensor: TorchNeuron has no kernel for it, so the device counts it itself.
    assert lines[0] == "['aten::_copy_from', 'aten::_efficientzerotensor']"
    assert lines[1] == "{'aten::_efficientzerotensor': 1, 'aten::normal_': 1}"


def test_complex_inputs_make_a_native_operator_fall_back() -> None:
    logged = _ops("""
        z = torch.randn(4, dtype=torch.complex64, device="neuron")
        r = torch.randn(4, device="neuron")
        z * z
        r * r
        torch.view_as_real(z)
        """, TRAINIUM)
    assert logged["fallback"].get("aten::mul.Tensor") == 1, "one complex call of a native operator"
    assert logged["executed"]["aten::mul.Tensor"] == 2
    assert "aten::view_as_real" not in logged["fallback"], "a view the fallback does not report"


def test_the_warning_names_each_predicted_fallback_once() -> None:
    result = run(
        """
        import warnings, torch
        x = torch.randn(8, device="neuron")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                torch.nonzero(x > 0)
                torch.fft.rfft(x)
        for warning in caught:
            print(warning.message)
        """,
        {"HF_NEURON_EMULATOR_WARN_FALLBACK": "1", "HF_NEURON_EMULATOR_DISPATCH": "trainium"},
    )
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "Operator 'aten::_fft_r2c' would fall back to CPU on Trainium (hf-neuron reference device)",
    ], "nonzero and gt.Scalar_out are native at that commit"


def test_a_measured_list_replaces_the_prediction(tmp_path: pytest.TempPathFactory) -> None:
    result = run("""
        import dataclasses
        from hf_neuron import settings
        from hf_neuron.device import trainium_ops
        source = trainium_ops.load()
        measured = dataclasses.replace(
            source, provenance={**source.provenance, "kind": "measured"},
            measured={"run_id": "trn", "started_at": "a", "finished_at": "b", "torch_neuronx": "2.13", "cases": 1},
            measured_fallback={"aten::nonzero": 4})
        trainium_ops.load = lambda path=None: measured
        import torch, hf_neuron.device
        hf_neuron.device.activate(settings.reference_device_settings({
            "HF_NEURON_EMULATOR": "1", "HF_NEURON_EMULATOR_OP_LOG": "1", "HF_NEURON_EMULATOR_DISPATCH": "trainium"}))
        x = torch.randn(4, device="neuron")
        torch.nonzero(x); x.argmax()
        print(torch.neuron.get_fallback_ops())
        """, {"HF_NEURON_EMULATOR": "0"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "{'aten::nonzero': 1}", "measured: nonzero fell back, argmax did not"


def test_the_op_log_is_off_unless_asked() -> None:
    result = run("""
        import torch
        torch.randn(4, device="neuron").argmax()
        print(torch.neuron.get_executed_ops(), torch.neuron.get_fallback_ops())
        """, {"HF_NEURON_EMULATOR_OP_LOG": "0", "HF_NEURON_EMULATOR_DISPATCH": "trainium"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{} {}"
