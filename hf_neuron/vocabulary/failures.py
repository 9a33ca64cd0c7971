"""A failure, defined once: its shape, its fingerprint, its class, and whether the CPU fails the same way.

Every failure a record holds — a matrix case's on the device, its CPU re-run's, a library's own test's — is a
:class:`Failure`, built by :func:`failure`, which computes its fingerprint and its class:

- The **fingerprint** hashes the exception type, the message with everything that varies between runs or devices
  normalised away (paths, addresses, device names, shapes, numbers), and the frame that raised it (``file
  basename:function``), so the same failure on neuron and on the CPU has the same fingerprint.
- The **class** (:data:`FAILURE_CLASSES`) comes first from what the runner knows for sure (the case timed out, its
  process died, a parity check missed its tolerance), then from :data:`RULES`, matched in order against
  ``"Type: message"``. Change the table with a test in ``tests/test_failure_classes.py`` showing the message it is for.

:func:`cpu_verdict` is the one rule of "the CPU fails the same way", used by the matrix, by old records and by
``hf-neuron upstream`` alike: the same fingerprint, or the same class when that class is specific
(:data:`EXCUSING_CLASSES`); a timeout or a crash never excuses and is never excused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from typing import Any, Literal, TypedDict, get_args

from hf_neuron.vocabulary.outcomes import DID_NOT_WORK, FAILS_ON_CPU_TOO, CpuVerdict

__all__ = [
    "EXCUSING_CLASSES",
    "FAILURE_CLASSES",
    "FAILURE_FIELDS",
    "LIMITATIONS",
    "NEURON_ONLY_CLASSES",
    "RULES",
    "Failure",
    "FailureClass",
    "Rule",
    "classify",
    "cpu_verdict",
    "cut_paths",
    "failure",
    "failure_text",
    "fingerprint",
    "normalise",
]

FailureClass = Literal[
    "timeout",
    "crash",
    "out-of-memory",
    "numerics-mismatch",
    "flex-attention",
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
#: Classes specific enough that a CPU failure of the same class is the same failure (``other`` is not: it is what no
#: rule matched; ``timeout`` and ``crash`` never excuse).
EXCUSING_CLASSES: frozenset[FailureClass] = frozenset(
    {"compile", "out-of-memory", "unsupported-dtype", "op-missing", "device-hardcoded"}
)
#: Classes neuron's by construction: the CPU is not asked (Inductor lowers for the CPU, never for neuron; the CPU runs
#: flex attention).
NEURON_ONLY_CLASSES: frozenset[FailureClass] = frozenset({"flex-attention", "needs-inductor"})
#: Classes that are a documented limitation of the neuron device rather than the model's failure, each with what a
#: user does instead: a case failing so counts as ``neuron-limitation`` (:func:`~hf_neuron.vocabulary.records.
#: case_verdict`), never against the model, and the report shows the fix.
LIMITATIONS: dict[FailureClass, str] = {
    "flex-attention": "load the model with attn_implementation='sdpa' (or 'eager'), which computes the same "
                      "attention; a model whose code hard-wires flex attention (a diffusers attention processor that "
                      "refuses any other backend) runs on the CPU",
}


class Failure(TypedDict):
    """What a failure was: the exception ``type``, its ``message``, the raising ``frame`` (``file.py:function``),
    its ``fingerprint`` and ``failure_class``, and the end of its ``traceback`` (empty when there is none)."""

    type: str
    message: str
    frame: str
    fingerprint: str
    failure_class: FailureClass
    traceback: str


#: The fields of a :class:`Failure`, in order.
FAILURE_FIELDS: tuple[str, ...] = tuple(Failure.__annotations__)


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
    _rule("flex-attention",
          r"flex_attention' needs Inductor|FlexAttention is only supported on",
          "torch's flex attention, which the pre-release TorchNeuron tree does not run (2.33 and later do): "
          "transformers compiles it and its block mask with Inductor (hf-neuron's patch says so at once: "
          "\"'flex_attention' needs Inductor\"), and torch's flex_attention refuses tensors outside CUDA, CPU, XPU, "
          "HPU and MPS (\"FlexAttention is only supported on ...\"). A limitation with a fix (:data:`LIMITATIONS`); "
          "checked before needs-inductor."),
    _rule("needs-inductor",
          r"needs Inductor|[Ii]nductor(?s:.*)\b(?:neuron|PrivateUse1|privateuseone)\b",
          "Inductor (torch.compile's default backend, and what flex_attention compiles with) has no lowering for the "
          "neuron device, where TorchNeuron selects its own backend for a graph on the device: a graph Inductor still "
          "gets (one outside the device, a hard-wired Inductor call) fails; hf-neuron's own errors say \"needs "
          "Inductor\", Inductor's name the device."),
    _rule("compile",
          r"torch\._dynamo|torch\._inductor|\bBackendCompilerFailed\b|\bInternalTorchDynamoError\b"
          r"|^\S*Unsupported: |Invalid backend|graph break|recompiles as it decodes",
          "torch.compile failures: dynamo's exception types, an unregistered backend (\"Invalid backend: 'neuron'\"), "
          "graph breaks under fullgraph=True, compiled decoding over its graph budget (\"recompiles as it "
          "decodes\": its graphs grow with the tokens)."),
    _rule("unsupported-dtype",
          r"not implemented for '(?:BFloat16|Half|Float8\w*|Double|ComplexFloat|ComplexDouble|Long|Int|Bool|Byte)'"
          r"|[Uu]nsupported (?:scalar type|dtype|data type)|[Gg]ot unsupported ScalarType|dtype \S+ is not supported"
          r"|expected scalar type \w+ but found \w+|does not support (?:bfloat16|float16|float64|fp16|bf16)",
          "a kernel exists but not for this dtype (\"'addmm_impl_cpu_' not implemented for 'Half'\"): checked before "
          "op-missing, whose \"not implemented\" it would otherwise match."),
    _rule("memory-format",
          r"Neuron tensors only support contiguous or preserve memory format",
          "TorchNeuron's refusal of a memory format other than contiguous and preserve where code asks for one "
          "(contiguous(memory_format=...), .to(memory_format=...)), which the trainium profile models."),
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


def classify(outcome: str, text: str, *, parity_missed: bool = False) -> FailureClass:
    """The class of a failure whose outcome is ``outcome`` and whose ``"Type: message"`` is ``text``;
    ``parity_missed`` when the scenario returned a parity value beyond its tolerance."""
    if outcome == "timeout":
        return "timeout"
    if outcome == "crashed":
        # The kernel's out-of-memory killer ends a process with SIGKILL, and nothing else in a matrix run does.
        return "out-of-memory" if "SIGKILL" in text else "crash"
    if parity_missed:
        return "numerics-mismatch"
    for rule in RULES:
        if rule.pattern.search(text):
            return rule.failure_class
    return "other"


# Order matters: paths and addresses contain digits, shapes contain numbers.
#: An absolute path's directories: not a URL's path (after ``scheme://host``), but a path a URL embeds after a second
#: slash (huggingface_hub's "Checkout 'https://huggingface.co//tmp/x/tree/main'" for a local directory).
_PATH = re.compile(r"(?:(?<![\w.:/])|(?<=[^:/]/))(?:/[^\s/'\"`:,;()\[\]{}<>]+)+/")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_DEVICE = re.compile(r"\b(?:neuron|cpu|cuda|xpu|mps|xla|hpu|npu|privateuseone)(?::\d+)?\b")
_SHAPE_LIST = re.compile(r"[\[(]\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*[\])]")
_SHAPE_X = re.compile(r"\b\d+(?:x\d+)+\b")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.]*\w)")
_SPACE = re.compile(r"\s+")


def cut_paths(text: str) -> str:
    """``text`` with every absolute path's directories cut to ``<path>/`` (``<path>/config.json``)."""
    return _PATH.sub("<path>/", text)


def normalise(message: str) -> str:
    """The message with paths, addresses, device names, shapes and numbers replaced by placeholders, whitespace
    collapsed."""
    text = cut_paths(message)
    text = _ADDRESS.sub("0x<addr>", text)
    text = _DEVICE.sub("<device>", text)
    text = _SHAPE_LIST.sub("<shape>", text)
    text = _SHAPE_X.sub("<shape>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()


def fingerprint(type_name: str, message: str, frame: str) -> str:
    """16 hex digits identifying a failure across runs: hash of type, normalised message and raising frame."""
    key = "\x1f".join((type_name, normalise(message), frame))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def failure(type_name: str, message: str, frame: str = "", traceback: str = "", *, outcome: str,
            parity_missed: bool = False) -> Failure:
    """The :class:`Failure` of an attempt that came to ``outcome``: fingerprinted and classified."""
    return Failure(type=type_name, message=message, frame=frame, fingerprint=fingerprint(type_name, message, frame),
                   failure_class=classify(outcome, f"{type_name}: {message}", parity_missed=parity_missed),
                   traceback=traceback)


def failure_text(failure: Mapping[str, Any]) -> str:
    """``"Type: message"`` of a failure: what the class rules and the expected-failure patterns are matched against."""
    return f"{failure['type']}: {failure['message']}"


def cpu_verdict(device_outcome: str, device_failure: Mapping[str, Any] | None, cpu_outcome: str | None,
                cpu_failure: Mapping[str, Any] | None) -> CpuVerdict | None:
    """How the CPU re-run compares with the device's run: None when the device's run did not fail; ``not-rerun``
    without a CPU run; ``passes`` when the CPU's did not fail (it passed, or was skipped there); ``fails-on-cpu-too``
    for the same fingerprint, or the same class when that class is specific (:data:`EXCUSING_CLASSES`); else
    ``different-failure``. A timeout or a crash on either side is never the same failure."""
    if device_outcome not in DID_NOT_WORK:
        return None
    if cpu_outcome is None:
        return "not-rerun"
    if cpu_outcome not in DID_NOT_WORK:
        return "passes"
    if "timeout" in (device_outcome, cpu_outcome) or "crashed" in (device_outcome, cpu_outcome):
        return "different-failure"
    if device_failure is None or cpu_failure is None:
        return "different-failure"
    if device_failure["fingerprint"] == cpu_failure["fingerprint"]:
        return FAILS_ON_CPU_TOO
    same_class = device_failure["failure_class"] == cpu_failure["failure_class"]
    return FAILS_ON_CPU_TOO if same_class and device_failure["failure_class"] in EXCUSING_CLASSES else \
        "different-failure"
