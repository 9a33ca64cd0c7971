"""How a case collects its fallback operators: the reference device's counts over the case, and a real backend's
report, whether it counts calls (a dict) or only names the operators (a list), cleared at the start of the case."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from _helpers import run

from hf_neuron import backends
from hf_neuron.matrix.case.observe import Observer


class _RealBackend(types.ModuleType):
    """A stand-in for torch_neuronx at the source's commit: fallback names, once per process until cleared."""

    def __init__(self) -> None:
        super().__init__(backends.REAL_PACKAGE)
        self.seen: set[str] = set()
        self.clears = 0

    def get_fallback_ops(self) -> list[str]:
        return sorted(self.seen)

    def clear_op_tracking(self) -> None:
        self.clears += 1
        self.seen.clear()


@pytest.fixture
def real_backend(monkeypatch: pytest.MonkeyPatch) -> _RealBackend:
    import torch

    module = _RealBackend()
    monkeypatch.setitem(sys.modules, backends.REAL_PACKAGE, module)
    monkeypatch.setattr(backends, "reference_device_active", lambda: False)
    neuron: Any = types.SimpleNamespace()  # a torch.neuron without get_fallback_ops, as at that commit
    monkeypatch.setattr(torch, "neuron", neuron, raising=False)
    return module


def test_a_real_backend_that_names_operators_without_calls(real_backend: _RealBackend) -> None:
    real_backend.seen.add("aten::sort.values_stable")  # from an earlier case of the worker
    observer = Observer("neuron:0")
    observer.start()
    assert real_backend.clears == 1, "cleared at the start: the report is once per process"
    real_backend.seen.add("aten::argmax.out")
    assert observer.finish().fallback_ops == {"aten::argmax.out": 0}, "named, calls not counted"


def test_a_cpu_case_reports_no_fallbacks(real_backend: _RealBackend) -> None:
    observer = Observer("cpu")
    observer.start()
    real_backend.seen.add("aten::argmax.out")
    assert observer.finish().fallback_ops is None


def test_the_reference_device_counts_the_calls_of_the_case() -> None:
    code = """
        import torch
        from hf_neuron.matrix.case.observe import Observer
        x = torch.randn(4, device="neuron")
        x.argmax()  # before the case: not the case's
        observer = Observer("neuron:0")
        observer.start()
        x.argmax(); x.argmax()
        print(observer.finish().fallback_ops)
        """
    logged = run(code, {"HF_NEURON_EMULATOR_OP_LOG": "1", "HF_NEURON_EMULATOR_DISPATCH": "trainium"})
    assert logged.returncode == 0, logged.stderr
    assert logged.stdout.strip() == "{'aten::argmax.out': 2}"
    unlogged = run(code, {"HF_NEURON_EMULATOR_OP_LOG": "0"})
    assert unlogged.stdout.strip() == "None", "no op log: the device cannot tell"
