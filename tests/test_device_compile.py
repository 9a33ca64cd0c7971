"""torch.compile(backend="neuron"): AOTAutograd on the device, results equal eager, the documented rules, the graphs
it compiles counted, and a graph the compile contract rejects raising rather than running eagerly."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torch._dynamo
from torch._dynamo.backends.registry import _COMPILER_FNS, lookup_backend
from torch._dynamo.utils import counters

from hf_neuron.device.dynamo_backend import NeuronCompilerRejectionError, neuron_backend

#: A graph Dynamo compiled, and its example inputs.
Graph = tuple[torch.fx.GraphModule, list[Any]]


@pytest.fixture
def graphs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Graph]]:
    """The graphs Dynamo hands to the ``neuron`` backend from now on, with their example inputs (Dynamo's caches
    and counters reset)."""
    assert lookup_backend("neuron") is neuron_backend
    seen: list[Graph] = []

    def spy(graph: torch.fx.GraphModule, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
        seen.append((graph, list(example_inputs)))
        return neuron_backend(graph, example_inputs, **kwargs)

    monkeypatch.setitem(_COMPILER_FNS, "neuron", spy)
    torch._dynamo.reset()
    counters.clear()
    yield seen
    torch._dynamo.reset()


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                               torch.nn.Linear(16, 4)).to("neuron")


def test_forward_and_backward_equal_eager() -> None:
    torch._dynamo.reset()
    model = _model()
    compiled = torch.compile(model, backend="neuron")
    x = torch.randn(5, 8, device="neuron")
    eager = model(x)
    out = compiled(x)
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), eager.cpu())
    (grads_eager,) = torch.autograd.grad(eager.sum(), [model[0].weight])
    (grads_compiled,) = torch.autograd.grad(compiled(x).sum(), [model[0].weight])
    torch.testing.assert_close(grads_compiled.cpu(), grads_eager.cpu())


def test_dynamic_true_is_rejected() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_model(), backend="neuron", dynamic=True)
    with pytest.raises(Exception, match="Neuron backend does not support dynamic=True"):
        compiled(torch.randn(3, 8, device="neuron"))


def test_other_modes_warn_and_fall_back_to_default() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_model(), backend="neuron", mode="max-autotune")
    with pytest.warns(UserWarning, match="Neuron backend does not support mode='max-autotune', falling back to "
                                         "default mode."):
        compiled(torch.randn(2, 8, device="neuron"))


@pytest.mark.parametrize("backend", [{}, {"backend": "inductor"}], ids=["no backend", "inductor"])
def test_the_neuron_backend_is_selected_on_the_device(graphs: list[Graph], backend: dict[str, str]) -> None:
    """As the released backend auto-selects it on a Neuron device: torch.compile without a backend (Inductor, by
    name) compiles a graph on neuron with the neuron backend, its mode warning and ignored; a CPU graph stays
    Inductor's."""
    model = _model()
    x = torch.randn(3, 8, device="neuron")
    torch.testing.assert_close(torch.compile(model, **backend)(x).cpu(), model(x).cpu())  # type: ignore[arg-type]
    assert len(graphs) == 1
    torch._dynamo.reset()
    with pytest.warns(UserWarning, match="does not support mode='reduce-overhead', falling back to default mode"):
        torch.compile(model, mode="reduce-overhead", **backend)(x)  # type: ignore[arg-type]
    assert len(graphs) == 2
    assert torch.equal(torch.compile(lambda t: t * 2, **backend)(torch.ones(2)), torch.full((2,), 2.0))  # type: ignore[arg-type]
    assert len(graphs) == 2, "a graph without a neuron input is Inductor's"


def test_compile_failures_raise() -> None:
    torch._dynamo.reset()

    def broken(x: torch.Tensor) -> torch.Tensor:
        return x + torch.ones(3, device="neuron:1")  # a device mismatch

    with pytest.raises(Exception, match="same device"):
        torch.compile(broken, backend="neuron")(torch.ones(3, device="neuron:0"))


def test_a_model_compiles_to_one_graph_without_breaks(graphs: list[Graph]) -> None:
    model = _model()
    x = torch.randn(5, 8, device="neuron")
    torch.testing.assert_close(torch.compile(model, backend="neuron")(x).cpu(), model(x).cpu())
    assert len(graphs) == 1 and counters["stats"]["unique_graphs"] == 1
    assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
    linears = [n for n in graphs[0][0].graph.nodes if n.op == "call_function" and n.target is torch._C._nn.linear]
    assert len(linears) == 2  # the whole model is in the one graph


def test_a_graph_break_splits_the_function_and_is_reported(graphs: list[Graph]) -> None:
    def breaks(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        if y.sum().item() > 0:  # a Python branch on a device value: Dynamo must leave the graph here
            return y + 1
        return y - 1

    x = torch.ones(3, device="neuron")
    assert torch.equal(torch.compile(breaks, backend="neuron")(x).cpu(), torch.full((3,), 3.0))
    assert len(graphs) == 2 and counters["stats"]["unique_graphs"] == 2
    reasons = list(counters["graph_break"])
    assert sum(counters["graph_break"].values()) == 1 and "Tensor.item" in reasons[0], reasons


def _integer_scatter_add(index: torch.Tensor) -> torch.Tensor:
    return torch.zeros(4, dtype=torch.int64, device=index.device).scatter_add(0, index, index)


def test_a_graph_the_compile_contract_rejects_raises_instead_of_running_eagerly(
    graphs: list[Graph], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_NEURON_EMULATOR_COMPILE_CONTRACT", "trainium")  # read when a graph is compiled
    index = torch.tensor([0, 1, 1, 3], device="neuron")
    assert _integer_scatter_add(index).cpu().tolist() == [0, 2, 0, 3]  # eagerly, it runs
    compiled = torch.compile(_integer_scatter_add, backend="neuron")
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as raised:
        compiled(index)
    assert isinstance(raised.value.inner_exception, NeuronCompilerRejectionError)
    assert "rejects integer scatter-with-compute (aten.scatter_add on torch.int64) [NCC_EVRF060]" in str(raised.value)
    assert len(graphs) == 1


def test_the_lenient_compile_contract_compiles_an_integer_scatter(
    graphs: list[Graph], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_NEURON_EMULATOR_COMPILE_CONTRACT", "lenient")
    index = torch.tensor([0, 1, 1, 3], device="neuron")
    assert torch.compile(_integer_scatter_add, backend="neuron")(index).cpu().tolist() == [0, 2, 0, 3]
    assert len(graphs) == 1


def test_each_new_shape_recompiles_statically(graphs: list[Graph]) -> None:
    model = _model()
    compiled = torch.compile(model, backend="neuron", dynamic=False)
    for batch in (2, 3, 4):
        x = torch.randn(batch, 8, device="neuron")
        torch.testing.assert_close(compiled(x).cpu(), model(x).cpu())
    assert len(graphs) == 3 and counters["stats"]["unique_graphs"] == 3
    for (_, inputs), batch in zip(graphs, (2, 3, 4), strict=True):  # one static graph per shape, none symbolic
        assert all(isinstance(x, torch.Tensor) for x in inputs), f"a symbolic size was compiled: {inputs}"
        assert (batch, 8) in [tuple(x.shape) for x in inputs]
