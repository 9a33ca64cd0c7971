"""Failure classes: what kind of failure a case had, from a reviewed rule table.

:func:`classify` looks first at what the runner knows for sure (the case timed out or its process died, a parity
check missed its tolerance), then at :data:`RULES`, matched in order against ``"ExceptionType: message"``; the first
rule that matches names the class. Each rule says why it exists. Change the table with a test in
``tests/test_failure_classes.py`` showing the message it is for. The CPU re-run's failure is classified by the same
rules; whether it excuses the device's failure is :func:`hf_neuron.matrix.case.verdict.compare_with_cpu`'s call.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Literal, get_args

from hf_neuron.matrix.records import Outcome

__all__ = ["FAILURE_CLASSES", "NEURON_ONLY_CLASSES", "RULES", "FailureClass", "Rule", "classify"]

FailureClass = Literal[
    "timeout",
    "crash",
    "out-of-memory",
    "numerics-mismatch",
    "needs-inductor",
    "compile",
    "unsupported-dtype",
    "memory-format",
    "op-missing",
    "device-hardcoded",
    "other",
]
#: The closed set of failure classes.
FAILURE_CLASSES: tuple[FailureClass, ...] = get_args(FailureClass)
#: Classes neuron's by construction: the CPU is not asked (Inductor lowers for the CPU, never for neuron).
NEURON_ONLY_CLASSES: frozenset[FailureClass] = frozenset({"needs-inductor"})



@dataclasses.dataclass(frozen=True)
class Rule:
    """Messages matching ``pattern`` (searched in ``"Type: message"``) belong to ``failure_class``."""

    failure_class: FailureClass
    pattern: re.Pattern[str]
    why: str


def _rule(failure_class: FailureClass, pattern: str, why: str) -> Rule:
    return Rule(failure_class, re.compile(pattern), why)


RULES: tuple[Rule, ...] = (
    _rule("out-of-memory",
          r"\bMemoryError\b|OutOfMemoryError|out of memory|[Cc]annot allocate memory|can't allocate memory"
          r"|not enough memory",
          "Python's MemoryError, torch's OutOfMemoryError and the allocators' messages (the reference device's "
          "capacity limit raises the same)."),
    _rule("needs-inductor",
          r"needs Inductor|[Ii]nductor(?s:.*)\b(?:neuron|PrivateUse1|privateuseone)\b",
          "Inductor (torch.compile's default backend, and what flex_attention and CompileConfig() compile with) has no "
          "lowering for the neuron device: hf-neuron's own errors say \"needs Inductor\", Inductor's name the device."),
    _rule("compile",
          r"torch\._dynamo|torch\._inductor|\bBackendCompilerFailed\b|\bInternalTorchDynamoError\b"
          r"|^\S*Unsupported: |Invalid backend|graph break",
          "torch.compile failures: dynamo's exception types, an unregistered backend (\"Invalid backend: 'neuron'\"), "
          "graph breaks under fullgraph=True."),
    _rule("unsupported-dtype",
          r"not implemented for '(?:BFloat16|Half|Float8\w*|Double|ComplexFloat|ComplexDouble|Long|Int|Bool|Byte)'"
          r"|[Uu]nsupported (?:scalar type|dtype|data type)|[Gg]ot unsupported ScalarType|dtype \S+ is not supported"
          r"|expected scalar type \w+ but found \w+|does not support (?:bfloat16|float16|float64|fp16|bf16)",
          "a kernel exists but not for this dtype (\"'addmm_impl_cpu_' not implemented for 'Half'\"): checked before "
          "op-missing, whose \"not implemented\" it would otherwise match."),
    _rule("memory-format",
          r"Neuron tensors only support contiguous or preserve memory format",
          "TorchNeuron's refusal of any other memory format (channels_last...), which the trainium profile models; "
          "ATen asks for one itself where an input's strides suggest it (constant_pad_nd, empty_like)."),
    _rule("op-missing",
          r"Could not run '[\w:.]+' with arguments from the '\w+' backend|^(?:builtins\.)?NotImplementedError\b"
          r"|not (?:currently )?implemented for (?:the )?'?neuron|fell back to (?:the )?CPU|would fall back",
          "the dispatcher has no kernel for the device (\"Could not run 'aten::...' with arguments from the 'neuron' "
          "backend\"), NotImplementedError, and the device's CPU-fallback warnings turned into errors."),
    _rule("device-hardcoded",
          r"Expected all tensors to be on the same device|found at least two devices"
          r"|Expected (?:a |an )?\w*\s?tensor (?:to be )?on (?:device )?\S+ but (?:got|found)"
          r"|Expected an? '\w+' device type"
          r"|[Tt]orch not compiled with CUDA enabled|\bCUDA (?:driver|error|is not available)"
          r"|device '?neuron'? is invalid|[Ii]nvalid device|[Uu]nsupported device|not on the expected device"
          r"|indices should be either on cpu or on the same device|[Dd]evice mismatch",
          "library code that names a device (\"cuda\", \"cpu\") or mixes devices: the classic reason a model runs "
          "on CUDA but not on a new accelerator."),
)


def classify(outcome: Outcome, failure_text: str, *, parity_missed: bool) -> FailureClass:
    """The class of a failure. ``failure_text`` is ``"ExceptionType: message"``.

    ``parity_missed`` is true when the scenario returned a parity value beyond its tolerance.
    """
    if outcome == "timeout":
        return "timeout"
    if outcome == "crashed":
        # The kernel's out-of-memory killer ends a process with SIGKILL, and nothing else in a matrix run does.
        return "out-of-memory" if "SIGKILL" in failure_text else "crash"
    if parity_missed:
        return "numerics-mismatch"
    for rule in RULES:
        if rule.pattern.search(failure_text):
            return rule.failure_class
    return "other"
