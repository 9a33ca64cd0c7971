"""The real backend's behaviours the reference device emulates, each a declared rule: what it does, where the fact comes
from, and the switch that turns it on (the ``trainium`` matrix profile turns on every one the released backend follows
by default; a rule of a documented non-default setting, ``released_default=False``, is that setting's).

Sources are TorchNeuron's own (pre-release) source at the commit of ``hf_neuron/device/trainium_ops.toml``'s
provenance, and the AWS Neuron release documentation; where the two disagree, the documentation wins and the rule says
so (``disagreement``). Each rule has a test with an input that makes it fire and one that does not
(``tests/test_trainium_rules.py`` fails for a rule without them). ``docs/trainium-prediction.md`` shows
:func:`markdown_table`.
"""

from __future__ import annotations

import dataclasses

__all__ = ["TRAINIUM_RULES", "Rule", "markdown_table"]


@dataclasses.dataclass(frozen=True)
class Rule:
    """One emulated behaviour of the real backend."""

    name: str
    behaviour: str
    #: Paths in TorchNeuron's source tree (``torch_neuronx/...``) that show it, if any.
    source: tuple[str, ...]
    #: Release documentation that states it (a page of the AWS Neuron docs, or ``../shared/NEURON_FACTS.md``), if any.
    docs: str
    #: The environment switch and the value that turn it on.
    switch: str
    value: str
    #: Where source and documentation disagree, what each says (the documentation wins).
    disagreement: str = ""
    #: Whether the released backend behaves so by default, and so the ``trainium`` profile turns the rule on; False
    #: for what a documented non-default setting of the real backend brings (its switch is that setting).
    released_default: bool = True


TRAINIUM_RULES: tuple[Rule, ...] = (
    Rule("64bit-narrowing",
         "float64 and int64 tensors keep their dtype on the device, but every operator computes them in 32 bits and "
         "casts the result back (values round through float32 / int32)",
         ("torch_neuronx/python_ops/base.py", "torch_neuronx/python_ops/dtype_autocast.py",
          "torch_neuronx/python_ops/cast_policy.py"),
         "NEURON_FACTS.md, Dtypes: computed in 32-bit and cast back (precision loss)",
         "HF_NEURON_EMULATOR_64BIT", "narrow",
         "at that commit a native operator casts float64 inputs to float32 and returns float32 unless given a "
         "float64 out= tensor; the documentation says the dtype is kept: the device keeps it"),
    Rule("memory-formats",
         "a user's request for a memory format other than contiguous and preserve (contiguous(memory_format=...), "
         "a device tensor's .to(memory_format=...)) raises \"Neuron tensors only support contiguous or preserve "
         "memory format\"; an allocation's request (empty, resize_: what ATen's composites ask for where an input's "
         "strides suggest channels-last) is honoured for a 4-D channels-last and a 5-D channels-last-3d shape and "
         "laid out contiguously otherwise; a FakeTensor that torch.compile traces is not refused (the contiguous "
         "kernel is registered at the backend key, below the tracing mode, which decomposes the call itself)",
         ("torch_neuronx/python_ops/cast_policy.py", "torch_neuronx/python_ops/contiguous.py",
          "torch_neuronx/python_ops/to_copy.py", "torch_neuronx/csrc/aten/NeuronNativeFunctions.cpp",
          "torch_neuronx/python_ops/auto_registration.py"),
         "NEURON_FACTS.md, Dtypes, ops, fallback",
         "HF_NEURON_EMULATOR_MEMORY_FORMATS", "strict"),
    Rule("compile-integer-scatter",
         "torch.compile(backend=\"neuron\") rejects a graph that scatters with compute into integers (scatter_add, "
         "index_add, scatter_reduce, accumulating index_put): NCC_EVRF060",
         (),
         "AWS Neuron compiler error codes: NCC_EVRF060",
         "HF_NEURON_EMULATOR_COMPILE_CONTRACT", "trainium"),
    Rule("compile-complex",
         "with the real backend's complex decomposition turned off, torch.compile(backend=\"neuron\") rejects a graph "
         "with a complex dtype: NCC_EVRF004 \"Complex data types are not supported on the Neuron device\"; by default "
         "(PyTorch >= 2.13) TorchNeuron decomposes complex operations into real ones before lowering, and such a graph "
         "compiles (not in the trainium profile, which keeps the released default)",
         (),
         "AWS Neuron compiler error codes: NCC_EVRF004; torch/reference/env-vars: TORCH_NEURONX_COMPLEX_DECOMPOSE "
         "(default True for PyTorch >= 2.13)",
         "TORCH_NEURONX_COMPLEX_DECOMPOSE", "0", released_default=False),
    Rule("fallback-log",
         "an operator the device dispatches that TorchNeuron does not register for PrivateUse1 runs through its "
         "catch-all CPU fallback and is reported by get_fallback_ops() (with its calls here), except the fallback's "
         "whitelisted views; operators dispatched from inside a device kernel are not the model's and not counted",
         ("torch_neuronx/csrc/core/NeuronBindings.cpp", "torch_neuronx/python_ops/__init__.py",
          "torch_neuronx/python_ops/auto_registration.py"),
         "NEURON_FACTS.md, Dtypes, ops, fallback: one warning per operator that fell back",
         "HF_NEURON_EMULATOR_OP_LOG", "1"),
    Rule("complex-falls-back",
         "a native operator called with complex tensors runs on the CPU and reports itself as a fallback (its "
         "kernel is compiled by the Neuron compiler, which refuses complex types)",
         ("torch_neuronx/python_ops/base.py",),
         "AWS Neuron compiler error codes: NCC_EVRF004",
         "HF_NEURON_EMULATOR_OP_LOG", "1"),
    Rule("composite-routes",
         "an operator TorchNeuron does not implement runs its composite kernel when it has one (a structured "
         "operator's out= variant, a decomposition), whose parts are dispatched and reported as on Trainium; "
         "without the switch every operator with a CPU kernel runs it directly",
         ("torch_neuronx/python_ops/__init__.py", "torch_neuronx/csrc/core/NeuronBindings.cpp"),
         "",
         "HF_NEURON_EMULATOR_DISPATCH", "trainium"),
    Rule("contiguous-results",
         "a native operator's new results have the contiguous strides of their shape, whatever the layout of its "
         "inputs and of the CPU kernel's result (a convolution or an add of a channels-last-strided input returns "
         "channels-last on the CPU), down to the strides of size-1 dimensions, from which ATen suggests a memory "
         "format; views, "
         "in-place and out= results keep theirs, an operator that falls back keeps the CPU's, and so does every "
         "operator of a compiled graph (the Neuron compiler lays out a graph's values; run operator by operator, the "
         "graph relies on the strides it was traced with)",
         ("torch_neuronx/python_ops/torch_mlir/kernel.py",),
         "",
         "HF_NEURON_EMULATOR_DISPATCH", "trainium"),
    Rule("fused-attention",
         "scaled_dot_product_attention with 4-D query, key and value on the device picks the overrideable fused "
         "kernel (_scaled_dot_product_fused_attention_overrideable, native), any other the math decomposition; "
         "without the switch the CPU's choice (its flash kernel, not native)",
         ("torch_neuronx/csrc/aten/SdpBackendSelection.cpp", "torch_neuronx/python_ops/__init__.py"),
         "",
         "HF_NEURON_EMULATOR_DISPATCH", "trainium"),
    Rule("rng-on-cpu",
         "random operators on the device (randn, dropout, bernoulli, ...) draw from the CPU's default generator, so "
         "torch.manual_seed governs them and a neuron generator passed explicitly is refused",
         ("torch_neuronx/csrc/core/NeuronBindings.cpp", "torch_neuronx/csrc/core/NeuronGenerator.h",
          "torch_neuronx/python_ops/torch_mlir/ops/dropout.py"),
         "",
         "HF_NEURON_EMULATOR_RNG", "cpu"),
)


def markdown_table() -> str:
    """The rules as the documentation shows them."""
    rows = ["| rule | what the device does | source (TorchNeuron tree) | release docs | switch |",
            "|---|---|---|---|---|"]
    for rule in TRAINIUM_RULES:
        behaviour = rule.behaviour + (f" (docs win: {rule.disagreement})" if rule.disagreement else "")
        source = ", ".join(f"`{path}`" for path in rule.source) or "-"
        rows.append(f"| `{rule.name}` | {behaviour} | {source} | {rule.docs or '-'} | "
                    f"`{rule.switch}={rule.value}` |")
    return "\n".join(rows) + "\n"
