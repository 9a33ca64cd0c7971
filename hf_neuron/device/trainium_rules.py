"""The real backend's behaviours the reference device emulates, each a declared rule: what it does, where the fact comes
from and the torch-neuronx releases it holds for (a :class:`~hf_neuron.vocabulary.trainium_sources.Citation` of
``trainium_sources.toml``), and the switch that turns it on or off. The ``trainium`` matrix profile turns on the rules
the release it predicts follows by default (:func:`profile_switches`) and turns off hf-neuron's own switches of the
others; a rule that a release follows only under a documented non-default setting of the real backend (its switch is
that setting: ``TORCH_NEURONX_COMPLEX_DECOMPOSE=0`` for 2.33 and 2.34) is left to that setting.

Each rule has a test with an input that makes it fire and one that does not (``tests/test_trainium_rules.py`` fails for
a rule without them); a rule that held for an older release only has a test of the older behaviour under that release's
switches and of the current one under the predicted release's. :data:`COMPILE_CHECKS` are the compile contract's
checks that no switch turns off (``hf_neuron/device/dynamo_backend.py``), cited the same way.
``docs/trainium-profile.md`` is generated from both tables (``scripts/update_docs.py``).
"""

from __future__ import annotations

import dataclasses
import functools

from hf_neuron.vocabulary.trainium_sources import Citation, load

__all__ = ["COMPILE_CHECKS", "TRAINIUM_RULES", "Check", "Rule", "checked", "profile_switches"]

_ALL = ("pre-release", "2.33", "2.34")
_TREE_ONLY = "stated by no released page read here: the pre-release tree only"


@dataclasses.dataclass(frozen=True)
class Rule:
    """One emulated behaviour of the real backend."""

    name: str
    behaviour: str
    #: Paths in TorchNeuron's pre-release tree (``torch_neuronx/...``) that show it, if any.
    tree_paths: tuple[str, ...]
    #: Its sources, the releases it holds for, and what no released source confirms.
    citation: Citation
    #: The environment switch, the value that turns the rule on and the one that turns it off.
    switch: str
    value: str
    off: str
    #: Where sources disagree, what each says (the released documentation wins).
    disagreement: str = ""
    #: The releases that behave so by default (None: every release it holds for); for the other releases it holds
    #: for, it is what a documented non-default setting of the real backend brings (its switch is that setting).
    default_for: tuple[str, ...] | None = None

    @property
    def default_releases(self) -> tuple[str, ...]:
        """The releases that behave so by default."""
        return self.citation.releases if self.default_for is None else self.default_for

    @property
    def own_switch(self) -> bool:
        """Whether its switch is hf-neuron's (``HF_NEURON_*``), not the real backend's own variable."""
        return self.switch.startswith("HF_NEURON_")


@dataclasses.dataclass(frozen=True)
class Check:
    """One check of ``torch.compile(backend="neuron")``'s contract that no switch turns off."""

    name: str
    behaviour: str
    citation: Citation


TRAINIUM_RULES: tuple[Rule, ...] = (
    Rule("64bit-narrowing",
         "float64 and int64 tensors keep their dtype on the device, but every operator computes them in 32 bits and "
         "casts the result back (values round through float32 / int32)",
         ("torch_neuronx/python_ops/base.py", "torch_neuronx/python_ops/dtype_autocast.py",
          "torch_neuronx/python_ops/cast_policy.py", "examples/torch_compile/README.md"),
         Citation(("pre-release-tree", "study-notes", "compiler-notes-2.32"), _ALL,
                  "the compiler's 2.32 notes announce native int64 (--native-int64=enabled, "
                  "--implicit-integer-downcast=none) as the next release's default; whether the compiler of 2.33 or "
                  "2.34 made it so is not readable from here, so the rule is kept for them"),
         "HF_NEURON_EMULATOR_64BIT", "narrow", "exact",
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
         Citation(("pre-release-tree", "study-notes"), _ALL, _TREE_ONLY),
         "HF_NEURON_EMULATOR_MEMORY_FORMATS", "strict", "any"),
    Rule("compile-integer-scatter",
         "torch.compile(backend=\"neuron\") rejects a graph that scatters with compute into integers (scatter_add, "
         "index_add, scatter_reduce, accumulating index_put): NCC_EVRF060",
         (),
         Citation(("evrf060", "compiler-notes-2.32"), _ALL),
         "HF_NEURON_EMULATOR_COMPILE_CONTRACT", "trainium", "lenient"),
    Rule("compile-complex",
         "with the real backend's complex decomposition turned off, torch.compile(backend=\"neuron\") rejects a graph "
         "with a complex dtype: NCC_EVRF004 \"Complex data types are not supported on the Neuron device\"; by default "
         "(PyTorch >= 2.13: 2.33 and 2.34) TorchNeuron decomposes complex operations into real ones before lowering, "
         "and such a graph compiles; the pre-release tree (torch ~2.10) did not: its torch.compile example replaces a "
         "complex rotary embedding (torch.polar, complex multiplication) with real arithmetic, \"not supported by "
         "Neuron\"",
         ("examples/torch_compile/models/gpt_oss/README.md",),
         Citation(("env-vars", "evrf004", "pre-release-tree"), _ALL),
         "TORCH_NEURONX_COMPLEX_DECOMPOSE", "0", "1", default_for=("pre-release",)),
    Rule("compile-backend-selection",
         "the backend is 'neuron', explicitly set or selected by itself on a Neuron device: a torch.compile that "
         "names no backend, or Inductor by name (torch.compile cannot tell them apart), compiles a graph with a "
         "neuron input, or one that makes its tensors on the device (torch's create_block_mask given a neuron "
         "device), with the neuron backend, its mode ignored with a warning; a graph off the device stays "
         "Inductor's. Off (the pre-release tree: \"Use 'neuron' backend\"), such a graph goes to Inductor, which "
         "has no lowering for the device",
         ("examples/torch_compile/README.md",),
         Citation(("torch-compile-reference", "pre-release-tree"), ("2.33", "2.34"),
                  "the page says the backend is auto-selected on a Neuron device; that an explicit "
                  "backend='inductor' is selected the same way, and how (by a graph's inputs here), is inferred"),
         "HF_NEURON_EMULATOR_COMPILE_BACKEND", "auto", "explicit"),
    Rule("flex-attention",
         "torch's flex_attention runs on the device: its device check accepts a neuron query, and the attention is "
         "computed densely (the full scores matrix, score_mod applied, the block mask's mask_mod as -inf, softmax), "
         "eagerly and compiled with the neuron backend, forward and backward, for every mask. Off (the pre-release "
         "tree), torch refuses neuron tensors (\"FlexAttention is only supported on CUDA, CPU, HPU, or MPS "
         "devices\") unless the user patches its check; once patched, the tree ran it compiled with backend='neuron' "
         "only, decomposed into dense attention by a pass after AOTAutograd",
         ("torch_neuronx/neuron_dynamo_backend/fx/passes/flex_attention_legalization.py",
          "examples/torch_compile/models/gpt_oss/README.md"),
         Citation(("torchneuron-notes-2.34", "pre-release-tree", "torch-flex-attention"), ("2.33", "2.34"),
                  "the 2.34 notes say FlexAttention runs on Neuron, faster and with more masks than before (so 2.33 "
                  "ran it too); which masks run, by which path, and how torch's device check is lifted are in "
                  "sections not readable from here: the device runs every mask, densely, as the pre-release tree's "
                  "compiler pass computed it"),
         "HF_NEURON_EMULATOR_FLEX_ATTENTION", "device", "refused"),
    Rule("fallback-log",
         "an operator the device dispatches that TorchNeuron does not register for PrivateUse1 runs through its "
         "catch-all CPU fallback and is reported by get_fallback_ops() (with its calls here), except the fallback's "
         "whitelisted views; operators dispatched from inside a device kernel are not the model's and not counted",
         ("torch_neuronx/csrc/core/NeuronBindings.cpp", "torch_neuronx/python_ops/__init__.py",
          "torch_neuronx/python_ops/auto_registration.py"),
         Citation(("pre-release-tree", "supported-operators", "study-notes"), _ALL),
         "HF_NEURON_EMULATOR_OP_LOG", "1", "0"),
    Rule("complex-falls-back",
         "a native operator called with complex tensors runs on the CPU and reports itself as a fallback (its "
         "kernel is compiled by the Neuron compiler, which refuses complex types)",
         ("torch_neuronx/python_ops/base.py",),
         Citation(("pre-release-tree", "evrf004", "env-vars"), _ALL,
                  "the released backend decomposes complex operations into real ones before lowering by default "
                  "(env-vars); whether an eager operator on complex tensors then runs on the device instead of falling "
                  "back is not stated: the rule is kept (it changes which operators are counted, not a verdict)"),
         "HF_NEURON_EMULATOR_OP_LOG", "1", "0"),
    Rule("composite-routes",
         "an operator TorchNeuron does not implement runs its composite kernel when it has one (a structured "
         "operator's out= variant, a decomposition), whose parts are dispatched and reported as on Trainium; "
         "without the switch every operator with a CPU kernel runs it directly",
         ("torch_neuronx/python_ops/__init__.py", "torch_neuronx/csrc/core/NeuronBindings.cpp"),
         Citation(("pre-release-tree",), _ALL, _TREE_ONLY),
         "HF_NEURON_EMULATOR_DISPATCH", "trainium", "cpu"),
    Rule("contiguous-results",
         "a native operator's new results have the contiguous strides of their shape, whatever the layout of its "
         "inputs and of the CPU kernel's result (a convolution or an add of a channels-last-strided input returns "
         "channels-last on the CPU), down to the strides of size-1 dimensions, from which ATen suggests a memory "
         "format; views, "
         "in-place and out= results keep theirs, an operator that falls back keeps the CPU's, and so does every "
         "operator of a compiled graph (the Neuron compiler lays out a graph's values; run operator by operator, the "
         "graph relies on the strides it was traced with)",
         ("torch_neuronx/python_ops/torch_mlir/kernel.py",),
         Citation(("pre-release-tree",), _ALL, _TREE_ONLY),
         "HF_NEURON_EMULATOR_DISPATCH", "trainium", "cpu"),
    Rule("fused-attention",
         "scaled_dot_product_attention with 4-D query, key and value on the device picks the overrideable fused "
         "kernel (_scaled_dot_product_fused_attention_overrideable, native), any other the math decomposition; "
         "without the switch the CPU's choice (its flash kernel, not native)",
         ("torch_neuronx/csrc/aten/SdpBackendSelection.cpp", "torch_neuronx/python_ops/__init__.py"),
         Citation(("pre-release-tree",), _ALL, _TREE_ONLY),
         "HF_NEURON_EMULATOR_DISPATCH", "trainium", "cpu"),
    Rule("rng-on-cpu",
         "random operators on the device (randn, dropout, bernoulli, ...) draw from the CPU's default generator, so "
         "torch.manual_seed governs them and a neuron generator passed explicitly is refused; off (the released "
         "backend), each neuron device has its own default generator, random operators on the device draw from it, "
         "an explicit neuron generator is used, and torch.manual_seed seeds it with the CPU's",
         ("torch_neuronx/csrc/core/NeuronBindings.cpp", "torch_neuronx/csrc/core/NeuronGenerator.h",
          "torch_neuronx/python_ops/torch_mlir/ops/dropout.py"),
         Citation(("pre-release-tree", "random-number-generation"), ("pre-release",)),
         "HF_NEURON_EMULATOR_RNG", "cpu", "device",
         "the released backend (random-number-generation, 2026-10-26) keeps a default torch.Generator per neuron "
         "device whose values come from an NKI kernel on the device, and torch.manual_seed seeds the CPU generator "
         "and every neuron generator. So a pass that draws both from the CPU's generator (torch.randn(...).to(device): "
         "VITS's duration noise, VibeVoice's diffusion noise) and from the device's (randn_like of a device tensor) "
         "draws other numbers than a CPU run of it, and its outputs differ from the CPU's. Not modelled: the "
         "device's kernel draws other numbers than the CPU's for the same seed; the reference device's generator "
         "draws the CPU's algorithm from its own state"),
)

#: The compile contract's checks that no switch turns off (``hf_neuron/device/dynamo_backend.py``).
COMPILE_CHECKS: tuple[Check, ...] = (
    Check("compile-dynamic",
          "torch.compile(..., dynamic=True) is rejected (DynamicShapesError); a new input shape compiles a new graph",
          Citation(("torch-compile-reference", "study-notes"), _ALL)),
    Check("compile-mode",
          "only mode=\"default\" applies: another mode warns \"Neuron backend does not support mode='X', falling "
          "back to default mode.\" and is ignored",
          Citation(("torch-compile-reference", "study-notes"), _ALL)),
    Check("compile-failures-raise",
          "a graph that fails to compile raises; it is not run eagerly instead "
          "(TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION, default on)",
          Citation(("env-vars", "study-notes"), _ALL)),
)


@functools.cache
def checked() -> tuple[tuple[Rule, ...], tuple[Check, ...]]:
    """Both tables, after refusing (:class:`~hf_neuron.vocabulary.trainium_sources.CitationError`) a citation that names
    an unknown source or release, or two default rules of one switch that hold for different releases."""
    sources = load()
    for rule in TRAINIUM_RULES:
        sources.check(rule.citation, f"rule {rule.name}")
    for check in COMPILE_CHECKS:
        sources.check(check.citation, f"compile check {check.name}")
    by_switch: dict[str, Rule] = {}
    for rule in TRAINIUM_RULES:
        if not set(rule.default_releases) <= set(rule.citation.releases):
            raise ValueError(f"rule {rule.name} is the default of a release it does not hold for")
        other = by_switch.setdefault(rule.switch, rule)
        if (other.default_releases, other.value, other.off) != (rule.default_releases, rule.value, rule.off):
            raise ValueError(f"rules {other.name} and {rule.name} share {rule.switch} but not their releases")
    return TRAINIUM_RULES, COMPILE_CHECKS


def profile_switches(release: str) -> dict[str, str]:
    """The switches of a profile predicting ``release``: the value of each rule ``release`` follows by default, the
    off value of hf-neuron's own switch of every other rule; the real backend's own variables are left to the user
    where ``release`` follows their default."""
    rules, _ = checked()
    return {rule.switch: rule.value if release in rule.default_releases else rule.off
            for rule in rules if release in rule.default_releases or rule.own_switch}
