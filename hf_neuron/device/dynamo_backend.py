"""``torch.compile(backend="neuron")`` on the reference device.

The pipeline the real backend documents, minus the Neuron compiler: Dynamo -> AOTAutograd -> the captured
forward and backward graphs, run eagerly on the device (no Inductor, which cannot lower for a PrivateUse1
device). Its documented rules hold: ``dynamic=True`` is rejected, modes other than ``"default"`` warn and are
ignored, failures raise (there is no silent fallback to eager), and, with the compile contract ``trainium``
(``HF_NEURON_EMULATOR_COMPILE_CONTRACT``, the default), a graph the Neuron compiler rejects by default is rejected
with its documented error code: integer scatter-with-compute (NCC_EVRF060). Complex operations are decomposed into
real ones before lowering, as TorchNeuron does by default (``TORCH_NEURONX_COMPLEX_DECOMPOSE``, on for PyTorch >=
2.13), so a graph with complex values compiles; with that switch off, the compiler sees them and rejects the graph
(NCC_EVRF004).

The backend is also chosen by itself on a Neuron device, as the released backend documents ("explicitly set, or
auto-selected when running on a Neuron device": ``torch/compile/reference-torch-compile``): a ``torch.compile`` that
names no backend means Inductor, which ``torch.compile`` cannot tell from an explicit ``backend="inductor"`` (both
become its Inductor wrapper), so a graph on the device (a neuron input, or a tensor it makes there) that reaches that
wrapper is compiled by the ``neuron``
backend, its mode warning and falling back to default as it does for ``backend="neuron"`` (:func:`select_on_neuron`).
Graphs off the device go to Inductor as before.

Registered only while the reference device is active, when Dynamo is first imported, so that the real
backend's own ``neuron`` entry point is never shadowed and ``import torch`` does not pay for Dynamo.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = [
    "BACKEND_NAME",
    "INTEGER_SCATTER_OPS",
    "TRACE_DECOMPOSED",
    "DynamicShapesError",
    "NeuronCompilerRejectionError",
    "neuron_backend",
    "register",
    "register_when_dynamo_loads",
    "select_on_neuron",
]

BACKEND_NAME = "neuron"
_DYNAMO_REGISTRY = "torch._dynamo.backends.registry"


class DynamicShapesError(RuntimeError):
    """``torch.compile(..., dynamic=True)`` was asked of the neuron backend."""


class NeuronCompilerRejectionError(RuntimeError):
    """A graph the Neuron compiler rejects by default (its documented error code is in the message)."""


#: Scatter-with-compute operators (aten names, overload packets) the Neuron compiler rejects on integer data.
INTEGER_SCATTER_OPS: frozenset[str] = frozenset(
    {"scatter_add", "scatter_add_", "index_add", "index_add_", "scatter_reduce", "scatter_reduce_"}
)
#: The same when they accumulate: ``index_put(..., accumulate=True)``.
_ACCUMULATING_OPS: frozenset[str] = frozenset({"index_put", "index_put_", "_index_put_impl_"})


def _integer_scatter(graph: torch.fx.GraphModule) -> str | None:
    """The first integer scatter-with-compute of ``graph`` (``"aten.scatter_add on torch.int64"``), if any."""
    for node in graph.graph.nodes:
        packet = getattr(node.target, "overloadpacket", None)
        name = getattr(packet, "__name__", "")
        accumulates = name in _ACCUMULATING_OPS and (
            (len(node.args) > 3 and node.args[3] is True) or node.kwargs.get("accumulate") is True
        )
        if node.op != "call_function" or not (name in INTEGER_SCATTER_OPS or accumulates):
            continue
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor) and not value.is_floating_point() and not value.is_complex():
            return f"aten.{name} on {value.dtype}"
    return None


def _complex_value(graph: torch.fx.GraphModule) -> str | None:
    """The first value of ``graph`` with a complex dtype (``"view_as_complex: torch.complex64"``), if any."""
    for node in graph.graph.nodes:
        values = node.meta.get("val")
        for value in values if isinstance(values, (list, tuple)) else (values,):
            if isinstance(value, torch.Tensor) and value.is_complex():
                return f"{getattr(node.target, '__name__', node.name)}: {value.dtype}"
    return None


def _run_eagerly(graph: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    from torch._functorch.aot_autograd import make_boxed_func

    from hf_neuron import settings

    if settings.read("HF_NEURON_EMULATOR_COMPILE_CONTRACT") == "trainium" and (found := _integer_scatter(graph)):
        raise NeuronCompilerRejectionError(
            f"the Neuron compiler rejects integer scatter-with-compute ({found}) [NCC_EVRF060]: it is emulated "
            "in float32 and imprecise above 2**24. Compute it in float32, or outside the compiled region "
            "(HF_NEURON_EMULATOR_COMPILE_CONTRACT=lenient compiles it as the CPU does)"
        )
    if not settings.read("TORCH_NEURONX_COMPLEX_DECOMPOSE") and (found := _complex_value(graph)):
        raise NeuronCompilerRejectionError(
            f"the Neuron compiler rejects complex data types ({found}) [NCC_EVRF004]: complex tensors are not "
            "supported on the Neuron device, and TORCH_NEURONX_COMPLEX_DECOMPOSE=0 keeps them from being decomposed "
            "into real operations first (unset it, or compute with their real and imaginary parts)"
        )
    return _with_traced_layouts(make_boxed_func(graph.forward))


def _with_traced_layouts(boxed: Callable[..., Any]) -> Callable[..., Any]:
    """``boxed`` (a graph run operator by operator), its results keeping the strides the graph was traced with: the
    device's rule that a native result is contiguous (the real backend's eager kernels) is off inside it, since the
    Neuron compiler lays out a graph's values itself and the graph relies on the traced strides."""
    from hf_neuron.device import runtime

    def run(args: list[Any]) -> Any:
        previous = runtime.extension().set_in_compiled_graph(True)
        try:
            return boxed(args)
        finally:
            runtime.extension().set_in_compiled_graph(previous)

    run._boxed_call = True  # type: ignore[attr-defined]  # AOTAutograd calls it with the boxed argument list
    return run


#: Operators without a TorchNeuron kernel whose ATen composite, which runs them on the device under the trainium routes,
#: views its input (``math_group_norm``): inside a graph the Neuron compiler lowers them, but the reference device runs
#: a graph operator by operator, where a layout the trace kept (a channels-last convolution result, a permuted input:
#: UNet2DModel, UNetMotionModel) cannot be viewed. They are decomposed while tracing, where the decomposition plans its
#: reshapes with the traced strides.
TRACE_DECOMPOSED: tuple[torch._ops.OpOverload, ...] = (torch.ops.aten.native_group_norm.default,)


def _trace_decompositions() -> dict[Any, Callable[..., Any]]:
    from torch._decomp import get_decompositions

    from hf_neuron import settings

    if not settings.reference_device_settings().trainium_dispatch:
        return {}
    return get_decompositions(list(TRACE_DECOMPOSED))


def neuron_backend(
    graph: torch.fx.GraphModule, example_inputs: Sequence[Any], mode: str | None = None, options: Any = None
) -> Callable[..., Any]:
    """The dynamo backend ``neuron``: AOTAutograd with eager execution of the captured graphs."""
    import torch._dynamo.config as dynamo_config
    from torch._dynamo.backends.common import aot_autograd

    if not dynamo_config.assume_static_by_default:
        raise DynamicShapesError(
            "Neuron backend does not support dynamic=True: each new input shape compiles a new graph. "
            "Call torch.compile without dynamic=True (pad inputs to a few fixed shapes to limit recompiles)."
        )
    if mode not in (None, "default"):
        warnings.warn(f"Neuron backend does not support mode='{mode}', falling back to default mode.", stacklevel=2)
    return aot_autograd(fw_compiler=_run_eagerly, bw_compiler=_run_eagerly,
                        decompositions=_trace_decompositions())(graph, example_inputs)


#: The modes whose options Inductor's wrapper holds instead of their names (``torch._inductor.list_mode_options``).
_INDUCTOR_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _mode_of(wrapper: Any) -> str | None:
    """The mode ``torch.compile`` gave Inductor's wrapper (it keeps only the mode's options), None for the default."""
    from torch._inductor import list_mode_options

    for mode in _INDUCTOR_MODES:
        options = list_mode_options(mode, wrapper.dynamic)
        if options and all(wrapper.config.get(key) == value for key, value in options.items()):
            return mode
    return None


def _on_neuron(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> bool:
    """Whether a captured graph runs on the device: a neuron input, or a value it computes on the device (a graph
    that makes its tensors there, as torch's create_block_mask does from a ``device`` argument)."""

    def neuron(value: Any) -> bool:
        return isinstance(value, torch.Tensor) and value.device.type == BACKEND_NAME

    return any(neuron(value) for value in inputs) or any(
        neuron(node.meta.get("example_value")) for node in graph.graph.nodes)


def select_on_neuron(inductor_call: Callable[..., Any]) -> Callable[..., Any]:
    """``torch._TorchCompileInductorWrapper.__call__`` choosing the ``neuron`` backend for a graph on the device (a
    neuron input, or a value it computes there: :func:`_on_neuron`), as the released backend auto-selects it on a
    Neuron device (``HF_NEURON_EMULATOR_COMPILE_BACKEND=auto``, the default; ``explicit`` as the pre-release tree:
    Inductor); Inductor for any other graph."""

    @functools.wraps(inductor_call)
    def __call__(self: Any, model_: torch.fx.GraphModule, inputs_: Sequence[Any], **kwargs: Any) -> Any:  # noqa: N807
        from hf_neuron import settings

        if settings.read("HF_NEURON_EMULATOR_COMPILE_BACKEND") == "auto" and _on_neuron(model_, inputs_):
            from torch._dynamo.backends.registry import lookup_backend

            backend: Callable[..., Any] = lookup_backend(BACKEND_NAME)  # neuron_backend, or what replaced it
            return backend(model_, inputs_, mode=_mode_of(self))
        return inductor_call(self, model_, inputs_, **kwargs)

    __call__._selects_neuron = True  # type: ignore[attr-defined]
    return __call__


def register() -> None:
    """Register :func:`neuron_backend` with Dynamo as ``neuron``, and have Inductor's wrapper choose it for a graph
    on the device (:func:`select_on_neuron`); idempotent."""
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend

    if _COMPILER_FNS.get(BACKEND_NAME) is not neuron_backend:
        register_backend(compiler_fn=neuron_backend, name=BACKEND_NAME)
    wrapper = torch._TorchCompileInductorWrapper
    if not getattr(wrapper.__call__, "_selects_neuron", False):
        wrapper.__call__ = select_on_neuron(wrapper.__call__)  # type: ignore[method-assign]


def register_when_dynamo_loads() -> None:
    """Register now if Dynamo is loaded, else right after it is first imported."""
    from hf_neuron import import_hooks

    import_hooks.when_imported(_DYNAMO_REGISTRY, lambda _module: register())
