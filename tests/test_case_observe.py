"""What a case compiled is the device's alone: the backends asked for and Dynamo's graphs, counted by the observer,
with a reference computation on the CPU (``not_the_device``) left out."""

from __future__ import annotations

import copy

import pytest
import torch

from hf_neuron.matrix.case.observe import Observer, fresh_dynamo, not_the_device, watch_torch_compile, wrong_backend


def _double(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


@pytest.fixture
def observer(neuron: object) -> Observer:
    watch_torch_compile()
    torch._dynamo.reset()
    observer = Observer("neuron:0")
    observer.start()
    return observer


def test_a_substitute_backend_on_the_device_is_caught(observer: Observer) -> None:
    torch.compile(_double, backend="aot_eager")(torch.ones(3, device="neuron"))
    facts = observer.finish().compile
    assert facts is not None and facts["backends"] == ["aot_eager"] and facts["graphs"] == 1
    assert "compiled with backend 'aot_eager' on a neuron device" in (wrong_backend(facts, "neuron:0") or "")


def test_a_cpu_reference_compilation_is_not_the_devices(observer: Observer) -> None:
    torch.compile(_double, backend="neuron")(torch.ones(3, device="neuron"))
    with not_the_device():
        torch.compile(_double, backend="aot_eager")(torch.ones(4))  # the CPU's reference: another backend, graph
    facts = observer.finish().compile
    assert facts is not None and facts["backends"] == ["neuron"] and facts["graphs"] == 1
    assert wrong_backend(facts, "neuron:0") is None


def _backend_taking(seconds: float) -> object:
    def backend(graph: torch.fx.GraphModule, example_inputs: object) -> object:
        import time

        time.sleep(seconds)  # a backend that takes a known time to compile
        return graph.forward

    return backend


def test_the_compile_seconds_are_the_devices_alone(observer: Observer) -> None:
    torch.compile(_double, backend=_backend_taking(0.3))(torch.ones(3, device="neuron"))
    with not_the_device():
        torch.compile(_double, backend=_backend_taking(4.0))(torch.ones(5))  # the CPU's reference compiles longer
    facts = observer.finish().compile
    assert facts is not None and facts["seconds"] is not None
    # the bound is the reference's sleep, not a speed target: Dynamo's tracing on a loaded machine takes seconds
    assert 0.3 <= facts["seconds"] < 4.0, "the device's compilation, without the reference's"
    observer.start()
    assert observer.finish().compile is None, "a case that compiled nothing has no compile facts"


def test_a_case_that_compiles_afresh_keeps_its_compile_seconds(observer: Observer) -> None:
    torch.compile(_double, backend=_backend_taking(0.3))(torch.ones(3, device="neuron"))  # compiled before the reset
    fresh_dynamo()  # as the compile scenarios start: Dynamo's reset clears its own timer
    torch.compile(_double, backend=_backend_taking(0.2))(torch.ones(3, device="neuron"))
    facts = observer.finish().compile
    assert facts is not None and facts["seconds"] is not None
    assert facts["seconds"] >= 0.5, "both compilations, the one before the reset included"


def _data_dependent(x: torch.Tensor) -> torch.Tensor:
    return x.nonzero().sum() + x.sum()


def test_a_graph_break_is_named_with_the_operator_behind_it(observer: Observer) -> None:
    """What the architecture's page says of a break that stays: its kind and the operator Dynamo names."""
    torch.compile(_data_dependent, backend="neuron")(torch.ones(3, device="neuron"))
    facts = observer.finish().compile
    assert facts is not None and facts["graph_breaks"] == 1
    assert facts["break_reasons"] == ["Dynamic shape operator: Operator `aten.nonzero.default`'s output shape depends "
                                      "on input Tensor data. at test_case_observe.py:_data_dependent"]


def _counts(x: torch.Tensor) -> torch.Tensor:
    return x + x.sum().item()


def _breaks_twice(x: torch.Tensor) -> torch.Tensor:
    return _counts(x) + _counts(x * 2).nonzero().sum()


def test_each_graph_break_is_named_with_where_it_broke(observer: Observer) -> None:
    """The same break at two places is two reasons, each naming its file and function; a place Dynamo logs again
    without its traceback (a second compile after the first was logged) keeps its function."""
    for size in (3, 4):  # the second size recompiles: Dynamo logs the same places again, briefly
        torch.compile(_breaks_twice, backend="neuron")(torch.ones(size, device="neuron"))
    facts = observer.finish().compile
    assert facts is not None and facts["graph_breaks"] >= 3
    assert [reason.rsplit(" at ", 1)[-1] for reason in facts["break_reasons"]] == [
        "test_case_observe.py:_counts", "test_case_observe.py:_breaks_twice"]


def _breaks_at_five_places(x: torch.Tensor) -> torch.Tensor:
    x = _data_dependent(x)
    x = _counts(x)
    x = _copies(x)
    x = x + x.nonzero().sum()
    return x + int(x.sum().item())


def test_every_place_a_model_breaks_is_named(observer: Observer) -> None:
    """A vision-language model breaks at five or six places: the record names each, not the first three."""
    torch.compile(_breaks_at_five_places, backend="neuron")(torch.ones(3, device="neuron"))
    facts = observer.finish().compile
    assert facts is not None
    places = [reason.rsplit(" at ", 1)[-1] for reason in facts["break_reasons"]]
    assert len(places) == 5, facts["break_reasons"]  # two reasons in the last function: two places
    assert set(places) == {f"test_case_observe.py:{function}" for function in (
        "_data_dependent", "_counts", "_copies", "_breaks_at_five_places")}


def _copies(x: torch.Tensor) -> torch.Tensor:
    copies = [copy.deepcopy(y) for y in (x,)]  # a comprehension's frame, then the standard library's
    return copies[0] + 1


def test_a_break_inside_the_standard_library_is_named_by_the_user_function_that_called_it(observer: Observer) -> None:
    torch.compile(_copies, backend="neuron")(torch.ones(3, device="neuron"))
    facts = observer.finish().compile
    assert facts is not None and facts["break_reasons"], "Dynamo breaks on copy.deepcopy of a tensor"
    assert facts["break_reasons"][0].endswith(" at test_case_observe.py:_copies"), facts["break_reasons"]


def test_a_library_installed_inside_the_standard_librarys_folder_is_user_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside a virtualenv site-packages lies inside the standard library's folder (/usr/local/lib/python3.11):
    transformers' frames there are the user's code, copy.py beside them is not."""
    import sysconfig

    from hf_neuron.matrix.case import observe

    lib = "/usr/local/lib/python3.11"
    packages = f"{lib}/site-packages"
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"stdlib": lib, "purelib": packages, "platlib": packages})
    traceback = (f'  File "{packages}/transformers/models/x/modeling_x.py", line 9, in get_rope_index\n'
                 f'  File "{lib}/copy.py", line 153, in deepcopy\n')
    assert observe._break_location(list(observe._FRAME.finditer(traceback))) == "modeling_x.py:get_rope_index"


def test_torchs_own_compile_of_eager_flex_attention_is_not_a_backend_the_case_asked_for(observer: Observer) -> None:
    """Eager FlexAttention compiles its body with Dynamo's eager backend on every device: torch's implementation, not
    a substitute for the neuron backend (the user's own ``backend="eager"`` still is one, above)."""
    from torch.nn.attention.flex_attention import flex_attention

    q = torch.ones(1, 2, 8, 16, device="neuron")
    flex_attention(q, q, q)
    facts = observer.finish().compile
    assert facts is None or facts["backends"] == []
    assert wrong_backend(facts, "neuron:0") is None
    observer.start()
    torch.compile(_double, backend="eager")(torch.ones(3, device="neuron"))
    assert "compiled with backend 'eager'" in (wrong_backend(observer.finish().compile, "neuron:0") or "")
