"""The matrix's unit of output: one JSON record per (architecture, scenario) case — its schema, defined once.

A record is written as one line of a ``*.jsonl`` file the moment its case finishes, so an interrupted run loses
nothing that finished. :class:`Record` is the schema (version :data:`SCHEMA_VERSION`); :func:`validate_record` checks a
line against the schema it says it has; :func:`upgrade` reads a record of any readable schema in the current shape
(what every reader works with); :func:`case_verdict` says how a record counts; :func:`latest` is the one rule of which
of two records of one case wins.

What schema 6 changed: a case of a checkpoint's slice (``hf-neuron check``, the matrix's checkpoint cases) says which
checkpoint and what it is at full size (``checkpoint``: :class:`CheckpointFacts`; null for a tiny model's case), and
its ``case_id`` names the checkpoint instead of the architecture.
What schema 5 changed: a case's compile facts say how long it spent compiling (``seconds``: Dynamo's tracing and
the backend, the device's compilations only), so that a run's cost can be split into compiling and the rest.
What schema 4 changed: a case made of parts that apply or not on their own (``generate``'s default and static
caches) lists them as ``legs``, each with its outcome; parity is compared element by element
(``max_abs_diff_over_bound``, with the positions compared). What schema 3 changed: each record says what its
scenario is (``scenario_facts``); the CPU's verdict for "the same failure" is ``fails-on-cpu-too``, the name it has
everywhere; the CPU's failure has the device failure's shape (with a traceback); the vision-language group is
``image-text`` (schemas 1 and 2 said ``multimodal``). Schema 2 added ``gap``, ``cpu_failure``'s class,
``cpu_verdict``, ``compile``, ``fallback_ops`` and ``details`` to schema 1.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Literal, NotRequired, TypedDict, TypeVar, cast, get_args

from hf_neuron.vocabulary.backends import BACKEND_KINDS, BackendKind
from hf_neuron.vocabulary.failures import (
    FAILURE_CLASSES,
    FAILURE_FIELDS,
    LIMITATIONS,
    Failure,
    classify,
    cpu_verdict,
    failure_text,
)
from hf_neuron.vocabulary.gaps import GAPS, Gap
from hf_neuron.vocabulary.groups import GROUP_ALIASES, GROUPS, Group
from hf_neuron.vocabulary.outcomes import (
    CPU_VERDICTS,
    DID_NOT_WORK,
    FAILS_ON_CPU_TOO,
    NEURON_LIMITATION,
    OUTCOMES,
    RESULT_OUTCOMES,
    CaseVerdict,
    CpuVerdict,
    Outcome,
    ResultOutcome,
)
from hf_neuron.vocabulary.scenarios import SCENARIO_KINDS, SCHEMA_2_SCENARIOS, ModelSource, ScenarioFacts, decodes

__all__ = [
    "CONFLICT_POLICIES",
    "CPU_ISA",
    "DEVICE_STEPS",
    "FLOAT32_REFERENCE",
    "GRAPHS_PER_GENERATION",
    "GRAPH_BUDGET",
    "READABLE_SCHEMAS",
    "ROUNDING_NOISE",
    "SCHEMA_VERSION",
    "CheckpointFacts",
    "CompileFacts",
    "ConflictPolicy",
    "CostFacts",
    "Env",
    "FallbackList",
    "FallbackListKind",
    "Leg",
    "NamedScenario",
    "OneEach",
    "Parity",
    "QuantizationFacts",
    "Record",
    "SliceFacts",
    "case_id",
    "case_verdict",
    "finite_facts",
    "is_name",
    "latest",
    "one_each",
    "parse_time",
    "result_key",
    "scenario_facts",
    "upgrade",
    "validate_record",
]

SCHEMA_VERSION = 6

#: The key of a record's ``details`` (and a leg's) that says how many steps the case ran on the device: optimizer
#: steps of a training scenario, tokens decoded of a decoding one. The report divides fallback calls by it.
DEVICE_STEPS = "device_steps"
#: The leg of a compiled-decoding case that holds its decoding to a graph budget (the same graphs for more tokens), and
#: the key of its ``details`` that gives the graphs each generation compiled, by its new tokens (``{"6": 1, "10": 1}``).
GRAPH_BUDGET = "graph budget"
GRAPHS_PER_GENERATION = "graphs_per_generation"
#: The key of a record's ``details`` that holds the rounding noise a float32 comparison was judged against
#: (:mod:`hf_neuron.matrix.scenarios.rounding`): the largest, of which tensor, over how many draws, and its multiple.
ROUNDING_NOISE = "rounding_noise"
#: The key of a record's ``details`` that holds how a 16-bit mixed-precision comparison was judged against the CPU's
#: float32 computation (:func:`hf_neuron.matrix.scenarios.rounding.judged_against_float32`): the worst tensor, its
#: ratio of the device's to the CPU's error, both errors, and the multiple allowed.
FLOAT32_REFERENCE = "float32_reference"
#: The record schemas this module reads (older ones through :func:`upgrade`).
READABLE_SCHEMAS = (1, 2, 3, 4, 5, SCHEMA_VERSION)

class Parity(TypedDict):
    """The scenario's comparison with the CPU: which ``metric``, its ``value`` and the ``tolerance`` it was held to
    (``value <= tolerance`` when it held). An element-by-element comparison (metric ``max_abs_diff_over_bound``,
    schema 4) gives the difference and the bound of its worst element, and how many of its ``positions`` it
    ``compared`` within the tolerance (the rest had to be equal: masks, infinities, NaN)."""

    metric: str
    value: float
    tolerance: float
    compared: NotRequired[int]
    positions: NotRequired[int]


class Leg(TypedDict):
    """One part of a case that applies or not on its own (``generate``: the default cache, a static cache): its
    ``name``, its ``outcome``, the ``reason`` it does not apply or what did not hold, its ``parity``, and its facts
    (``details``, e.g. the graphs its decoding compiled). A case passes when every leg that applies passed, and is
    ``skipped`` only when none applies."""

    name: str
    outcome: ResultOutcome
    reason: str | None
    parity: Parity | None
    details: dict[str, Any] | None


def finite_facts(value: Any) -> Any:
    """A case's facts (``details``) as a record holds them, JSON without NaN: a non-finite float becomes its name
    ("nan", "inf", "-inf"; a training step's NaN loss or gradient norm is a fact to keep, and json refuses it)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {key: finite_facts(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_facts(item) for item in value]
    return value


class CompileFacts(TypedDict):
    """What Dynamo did during a case: the backends asked for, graphs compiled, graph breaks, recompilations, and the
    seconds it spent compiling them (None: not measured, records before schema 5). Each of ``break_reasons`` is a
    break's kind and what Dynamo's explanation names, then where the user's code broke, as "file.py:function" after
    " at " ("Data dependent operator: ... at modeling_qwen2_vl.py:get_rope_index"); one Dynamo did not place, and
    every one in records written before the locations were kept (the same schema), has no " at ..."."""

    backends: list[str]
    graphs: int
    graph_breaks: int
    break_reasons: list[str]
    recompiles: int
    recompile_reasons: list[str]
    seconds: float | None


class SliceFacts(TypedDict):
    """What a checkpoint's real-width slice was: the ``layers`` it kept, its ``parameters``, its estimated peak
    ``bytes`` against the run's ``budget`` (bytes), and what was cut to fit (``reductions``, each a sentence: fewer
    layers, a smaller vocabulary, fewer experts)."""

    layers: int
    parameters: int
    bytes: int
    budget: int
    reductions: list[str]


class CostFacts(TypedDict):
    """A checkpoint's estimated price-performance on one instance family (:mod:`hf_neuron.checkpoint.cost`, at the
    plan's sequence and batch): decoded tokens a second of one sequence, and US dollars a million output tokens (None
    where the family's price is not sourced). An estimate, not a measurement."""

    decode_tokens_per_s: float | None
    usd_per_million_output_tokens: float | None


class QuantizationFacts(TypedDict):
    """A quantized checkpoint's ``method`` (its ``quant_method``), what it does on neuron (``verdict``:
    ``runs-dequantized`` or ``not-runnable``) and ``why``."""

    method: str
    verdict: str
    why: str


class CheckpointFacts(TypedDict):
    """The checkpoint of a case of its slice: its ``id`` (Hub id, or a local checkpoint's name), the ``dtype`` its
    config states (None: none), and at full size (:mod:`hf_neuron.checkpoint.plan`): its ``parameters``, those a token
    uses (``active_parameters``: None but for a mixture of experts), ``memory`` in bytes by use (``inference``,
    ``full_fine_tune``, ``lora``), the logical NeuronCores each use needs by instance family (``neuron_cores``:
    family -> use -> cores), its estimated price-performance by family (``cost``; absent from records before it),
    its ``quantization`` (None: unquantized) and its ``slice``. A record written where the
    checkpoint could not be planned (its worker died first) has only the ``id``."""

    id: str
    dtype: NotRequired[str | None]
    #: the dtype the plan counts the weights (and KV cache) in: the stated one, float32 where none is stated,
    #: bfloat16 for a quantized checkpoint that runs dequantized
    weights_dtype: NotRequired[str]
    parameters: NotRequired[int]
    active_parameters: NotRequired[int | None]
    memory: NotRequired[dict[str, int]]
    neuron_cores: NotRequired[dict[str, dict[str, int]]]
    cost: NotRequired[dict[str, CostFacts]]
    quantization: NotRequired[QuantizationFacts | None]
    slice: NotRequired[SliceFacts | None]


class NamedScenario(ScenarioFacts):
    """A scenario of a run's set: its name, its facts, the models it runs on (``tiny``, ``checkpoints``; absent
    from records before checkpoint cases: ``tiny``), whether the run's selection chose it (``selected``) and the groups
    that have a case of it (``groups``); the last two tell the report which cases the run meant to run (absent from
    older records)."""

    name: str
    models: NotRequired[list[ModelSource]]
    selected: NotRequired[bool]
    groups: NotRequired[list[str]]


#: Where a run's list of the operators the real backend runs on the CPU comes from: TorchNeuron's source, a Trainium
#: run's measurement of it (both kept in ``hf_neuron/device/trainium_ops.toml``), or the real backend's own report.
FallbackListKind = Literal["source", "measured", "backend"]


class FallbackList(TypedDict):
    """The provenance of a run's ``fallback_ops`` (``env.fallback_list``): the ``source`` repository (or the
    backend's package) and its ``commit``, the TorchNeuron version it describes, its ``kind``; for the reference
    device also the ``file`` it was read from, the source's ``date``, the count of ``native`` overloads and, when
    measured, the measuring run and its TorchNeuron version."""

    source: str
    commit: str | None
    torch_neuronx: str | None
    kind: FallbackListKind
    file: NotRequired[str]
    date: NotRequired[str]
    native: NotRequired[int]
    measured_run: NotRequired[str]
    measured_torch_neuronx: NotRequired[str]


#: The instruction-set extensions a record's ``env.cpu_isa`` may name, in this order: those that choose which CPU
#: kernels torch runs (ATen's AVX2 or AVX-512 kernels; oneDNN's bfloat16 ones with AVX-512 BF16 or AMX), so the time
#: and the bfloat16 numerics of a case depend on them.
CPU_ISA = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


class Env(TypedDict):
    """The run's environment, the same in all its records: the backend under test and its version and devices, the
    matrix profile, the hf-neuron patches that applied (and those that work around a gap of the reference device),
    Python and library versions, hf-neuron's version and commit, the host and its processor. Keys added later are
    absent from older records; hf-neuron may add more."""

    backend: BackendKind
    backend_version: NotRequired[str | None]
    device_count: NotRequired[int | None]
    profile: NotRequired[str | None]
    #: the torch-neuronx release whose behaviours the verdicts predict (the profile's, on the reference device; None
    #: otherwise; absent from records before profiles named one)
    predicts: NotRequired[str | None]
    patches: NotRequired[list[str]]
    reference_gap_patches: NotRequired[list[str]]
    python: NotRequired[str]
    torch: NotRequired[str | None]
    transformers: NotRequired[str | None]
    accelerate: NotRequired[str | None]
    peft: NotRequired[str | None]
    diffusers: NotRequired[str | None]
    hf_neuron: NotRequired[str]
    hf_neuron_commit: NotRequired[str | None]
    host: NotRequired[str]
    #: the processor the run ran on: its model name (None where the system does not say), the CPUs the run could use,
    #: and which of :data:`CPU_ISA` it has, space-separated ("none" for none of them; None where the system does not
    #: say)
    cpu_model: NotRequired[str | None]
    cpus: NotRequired[int]
    cpu_isa: NotRequired[str | None]
    #: the run's scenario set, in run order, each with what its records say of it (schema 3)
    scenarios: NotRequired[list[NamedScenario]]
    #: where the list of operators the real backend runs on the CPU came from (absent before schema 3's
    #: trainium_ops.toml; None for a CPU-only run)
    fallback_list: NotRequired[FallbackList | None]
    #: a run of a library's own tests (``hf-neuron upstream``): where its tests came from (their provenance)
    upstream_source: NotRequired[dict[str, str]]


class Record(TypedDict):
    """One case. ``reason`` says why for ``skipped``, ``untested`` and ``known-failure``; ``gap`` is the harness gap
    of an ``untested`` case; ``parity`` the scenario's comparison; ``cpu_*`` the CPU re-run of a case that failed on the
    device; ``known_failure`` the matching entry of ``compat/known_failures.toml``; ``compile`` what Dynamo did (null
    when nothing was compiled); ``fallback_ops`` the operators that ran on the device which the real backend runs on the
    CPU, with counts (null when the backend cannot tell; on the real backend a count of 0 means the operator fell back
    and its calls were not counted); ``details`` scenario-specific facts (e.g. ``ddp``'s ranks,
    :data:`DEVICE_STEPS`)."""

    schema: int
    run_id: str
    case_id: str  # "<model_type>::<scenario>" ("<checkpoint id>::<scenario>" for a checkpoint), unique within a run
    model_type: str
    checkpoint: CheckpointFacts | None
    group: Group
    scenario: str
    scenario_facts: ScenarioFacts
    outcome: Outcome
    reason: str | None
    gap: Gap | None
    duration_s: float
    peak_memory_bytes: int | None
    parity: Parity | None
    cpu_outcome: Outcome | None
    cpu_failure: Failure | None
    cpu_verdict: CpuVerdict | None
    failure: Failure | None
    known_failure: dict[str, Any] | None
    compile: CompileFacts | None
    fallback_ops: dict[str, int] | None
    details: dict[str, Any] | None
    legs: list[Leg] | None
    env: Env
    started_at: str
    finished_at: str


def case_id(model_type: str, scenario: str, checkpoint: str | None = None) -> str:
    """The one spelling of a case's id: ``"llama::forward"``, or for a checkpoint's slice
    ``"meta-llama/Llama-3.1-8B::forward"``."""
    return f"{checkpoint or model_type}::{scenario}"


def scenario_facts(scenario: str) -> ScenarioFacts:
    """What a record of schema 1 or 2 (which named only built-in scenarios) says of ``scenario``."""
    return SCHEMA_2_SCENARIOS.get(scenario, {"kind": "extra", "trains": False})


def case_verdict(record: Mapping[str, Any]) -> CaseVerdict:
    """How a record (in the current shape: :func:`upgrade`) counts: a failure of a documented limitation of the device
    (:data:`~hf_neuron.vocabulary.failures.LIMITATIONS`, known or not) is ``neuron-limitation``, never the model's."""
    outcome = record["outcome"]
    if outcome == "passed":
        return "passed"
    if outcome == "skipped":
        return "not-applicable"
    if outcome == "untested":
        return "untested"
    if (record.get("failure") or {}).get("failure_class") in LIMITATIONS:
        return NEURON_LIMITATION
    if outcome != "known-failure" and record.get("cpu_verdict") == FAILS_ON_CPU_TOO:
        return FAILS_ON_CPU_TOO
    return "fails-on-neuron"


def result_key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """What two records of one case must share to be one result seen twice (else they conflict): the outcome, the
    CPU's outcome and the failure's fingerprint."""
    failure = record.get("failure")
    return record["outcome"], record.get("cpu_outcome"), None if failure is None else failure["fingerprint"]


Item = TypeVar("Item", bound=Mapping[str, Any])

ConflictPolicy = Literal["error", "latest"]
#: What to do with records of one case that disagree (:func:`result_key` differs): refuse them, or keep the latest.
CONFLICT_POLICIES: tuple[ConflictPolicy, ...] = get_args(ConflictPolicy)


def latest(records: Iterable[Item], key: Callable[[Item], Hashable]) -> dict[Hashable, Item]:
    """The one rule of which record counts when several share a ``key`` (a case of a run, a test on a device): the one
    that finished last; on a tie, the one read last."""
    return one_each(records, key).kept


@dataclass(frozen=True)
class OneEach(Generic[Item]):
    """Records reduced to one per key (:func:`latest`'s), with how many repeated a kept record's result and, per key,
    the records that disagreed (in the order they finished)."""

    kept: dict[Hashable, Item]
    duplicates: int
    conflicts: dict[Hashable, list[Item]]


def one_each(records: Iterable[Item], key: Callable[[Item], Hashable]) -> OneEach[Item]:
    """One record per ``key``: the latest (finished last; on a tie, read last). Records of a key that say the same
    (:func:`result_key`) are one result seen twice; records that say different things are a conflict, which the
    caller refuses or accepts (no splicing of runs by accident)."""
    by_key: dict[Hashable, list[Item]] = {}
    for record in records:
        by_key.setdefault(key(record), []).append(record)
    kept, duplicates, conflicts = {}, 0, {}
    for k, found in by_key.items():
        ordered = sorted(found, key=lambda record: parse_time(record["finished_at"]))  # stable: read order on a tie
        kept[k] = ordered[-1]
        if len({result_key(record) for record in ordered}) > 1:
            conflicts[k] = ordered
        else:
            duplicates += len(ordered) - 1
    return OneEach(kept, duplicates, conflicts)


# ---- validation -------------------------------------------------------------------------------------------
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")

Check = Callable[[Any], "str | None"]


def parse_time(value: str) -> datetime:
    """An ISO-8601 timestamp as an aware datetime (a timestamp without offset is taken as UTC)."""
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def is_name(value: Any) -> bool:
    """Whether ``value`` is a name safe in a file name and a URL: letters, digits, ``_ . -``, not leading ``. _ -``."""
    return isinstance(value, str) and _NAME.match(value) is not None


def _string(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "must be a non-empty string"


def _name(value: Any) -> str | None:
    ok = is_name(value)
    return None if ok else "must be a name of letters, digits, '_', '.' and '-', starting with a letter or digit"


def _number(value: Any) -> str | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return None if ok else "must be a finite number"


def _non_negative(value: Any) -> str | None:
    return _number(value) or (None if value >= 0 else "must be >= 0")


def _byte_count(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return None if ok else "must be a whole number >= 0"


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _one_of(allowed: Iterable[Any]) -> Check:
    allowed = tuple(allowed)
    return lambda value: None if value in allowed else "must be one of " + ", ".join(map(str, allowed))


def _timestamp(value: Any) -> str | None:
    try:
        parse_time(value)
    except (TypeError, ValueError):
        return "must be an ISO-8601 timestamp"
    return None


def _optional(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


def _counts(value: Any) -> str | None:
    ok = isinstance(value, dict) and all(isinstance(k, str) and _byte_count(v) is None for k, v in value.items())
    return None if ok else "must be an object of names to whole numbers >= 0"


def _strings(value: Any) -> str | None:
    ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
    return None if ok else "must be a list of strings"


def _legs(value: Any) -> str | None:
    if not isinstance(value, list):
        return "must be a list of legs"
    for leg in value:
        ok = (isinstance(leg, dict) and _text(leg.get("name")) is None and leg.get("outcome") in RESULT_OUTCOMES
              and _optional(_string)(leg.get("reason")) is None)
        if not ok:
            return "must be a list of legs (name, outcome, reason, parity, details)"
    return None


@dataclass(frozen=True)
class _Object:
    """A field holding a JSON object with ``fields`` (and possibly more); None is allowed when ``optional``."""

    fields: Mapping[str, Check | _Object]
    optional: bool = False


def _field_problems(obj: Mapping[str, Any], fields: Mapping[str, Check | _Object], prefix: str = "") -> list[str]:
    problems = []
    for key, spec in fields.items():
        name = prefix + key
        if key not in obj:
            problems.append(f"missing field '{name}'")
            continue
        value = obj[key]
        if isinstance(spec, _Object):
            if isinstance(value, dict):
                problems.extend(_field_problems(value, spec.fields, prefix=f"{name}."))
                continue
            problem = None if value is None and spec.optional else "must be an object"
        else:
            problem = spec(value)
        if problem is not None:
            problems.append(f"'{name}' {problem} (got {json.dumps(value)[:60]})")
    return problems


def _failure(fields: Iterable[str], *, classes: bool = False) -> _Object:
    """A failure of these ``fields`` (strings), its class one of today's when ``classes`` (older records' classes
    were an open set: reading classifies them again)."""
    checks: dict[str, Check | _Object] = dict.fromkeys(fields, _string)
    if classes:
        checks["failure_class"] = _one_of(FAILURE_CLASSES)
    return _Object(checks, optional=True)


_CPU_FAILURE_FIELDS_1 = ("type", "message", "frame", "fingerprint")
_COMPILE = _Object({"backends": _strings, "graphs": _byte_count, "graph_breaks": _byte_count,
                    "break_reasons": _strings, "recompiles": _byte_count, "recompile_reasons": _strings},
                   optional=True)
#: The fields of every schema (schema 1's failure class is a free string: classes came later).
_FIELDS: dict[str, Check | _Object] = {
    "schema": _one_of(READABLE_SCHEMAS),
    "run_id": _text,
    "case_id": _text,
    "model_type": _name,
    "scenario": _name,
    "outcome": _one_of(OUTCOMES),
    "reason": _optional(_string),
    "duration_s": _non_negative,
    "peak_memory_bytes": _optional(_byte_count),
    "parity": _Object({"metric": _text, "value": _number, "tolerance": _number}, optional=True),
    "cpu_outcome": _optional(_one_of(OUTCOMES)),
    "known_failure": _Object({}, optional=True),
    "started_at": _timestamp,
    "finished_at": _timestamp,
}
#: What each schema adds to (or changes in) :data:`_FIELDS`.
_SCHEMA_FIELDS: dict[int, dict[str, Check | _Object]] = {
    1: {"group": _text, "env": _Object({"backend": _text}),
        "failure": _Object(dict.fromkeys(FAILURE_FIELDS, _string), optional=True)},
    2: {
        "group": _text,  # groups were an open set then; reading maps the renamed ones (GROUP_ALIASES)
        "env": _Object({"backend": _text}),
        "failure": _failure(FAILURE_FIELDS),
        "gap": _optional(_one_of(GAPS)),
        "cpu_failure": _failure((*_CPU_FAILURE_FIELDS_1, "failure_class")),
        "cpu_verdict": _optional(_one_of(["passes", "same-failure", "different-failure", "not-rerun"])),
        "compile": _COMPILE,
        "fallback_ops": _optional(_counts),
        "details": _Object({}, optional=True),
    },
    3: {
        "group": _one_of(GROUPS),
        "env": _Object({"backend": _one_of(BACKEND_KINDS)}),
        "scenario_facts": _Object({"kind": _one_of(SCENARIO_KINDS), "trains": _boolean}),
        "failure": _failure(FAILURE_FIELDS, classes=True),
        "gap": _optional(_one_of(GAPS)),
        "cpu_failure": _failure(FAILURE_FIELDS, classes=True),
        "cpu_verdict": _optional(_one_of(CPU_VERDICTS)),
        "compile": _COMPILE,
        "fallback_ops": _optional(_counts),
        "details": _Object({}, optional=True),
    },
}
_SCHEMA_FIELDS[4] = {
    **_SCHEMA_FIELDS[3], "legs": _optional(_legs),
    "scenario_facts": _Object({"kind": _one_of(SCENARIO_KINDS), "trains": _boolean, "decodes": _boolean}),
}
_SCHEMA_FIELDS[5] = {
    **_SCHEMA_FIELDS[4],
    "compile": _Object({**_COMPILE.fields, "seconds": _optional(_non_negative)}, optional=True),
}
_SCHEMA_FIELDS[SCHEMA_VERSION] = {**_SCHEMA_FIELDS[5], "checkpoint": _Object({"id": _text}, optional=True)}


def validate_record(obj: Any) -> list[str]:
    """What is wrong with ``obj`` as a record of the schema it names (empty when it is a valid record). Unknown
    fields are allowed."""
    if not isinstance(obj, dict):
        return [f"expected a JSON object, got {type(obj).__name__}"]
    problems = _field_problems(obj, _FIELDS)
    schema = obj.get("schema")
    if schema in _SCHEMA_FIELDS:
        fields = _SCHEMA_FIELDS[schema]
        if schema == 1:  # its earliest records lack cpu_failure; check it where present
            fields = {**fields, **({"cpu_failure": _failure(_CPU_FAILURE_FIELDS_1)} if "cpu_failure" in obj else {})}
        problems += _field_problems(obj, fields)
    if problems:
        return problems
    checkpoint = obj.get("checkpoint")
    expected_case = case_id(obj["model_type"], obj["scenario"], checkpoint["id"] if checkpoint else None)
    if obj["case_id"] != expected_case:
        problems.append(f"'case_id' is {obj['case_id']!r}, expected {expected_case!r}")
    if obj["outcome"] in ("skipped", "untested", "known-failure") and not obj["reason"]:
        problems.append(f"outcome {obj['outcome']!r} needs a 'reason'")
    if schema != 1 and (obj["outcome"] == "untested") != (obj.get("gap") is not None):
        problems.append("'gap' is given for an untested case, and only for one")
    return problems


def _full_failure(found: Mapping[str, Any] | None, outcome: str | None) -> Failure | None:
    """A failure of an older record in the current shape: a traceback (empty where none was kept) and a class."""
    if found is None:
        return None
    full = {key: found.get(key, "") for key in FAILURE_FIELDS}
    if full["failure_class"] not in FAILURE_CLASSES:
        full["failure_class"] = classify(outcome or "error", failure_text(full))
    return cast(Failure, full)


def upgrade(record: Mapping[str, Any]) -> Record:
    """A valid record of any readable schema in the current shape (its ``schema`` says which it was written in):
    the group's current name, the scenario's facts, both failures in full, and the CPU's verdict by today's rule
    where the record did not say it."""
    schema = record["schema"]
    if schema == SCHEMA_VERSION:
        return cast(Record, record)
    if schema == 5:
        return cast(Record, {**record, "checkpoint": None})
    record = {**record, "checkpoint": None}
    unmeasured = None if record.get("compile") is None else {**record["compile"], "seconds": None}
    if schema == 4:
        return cast(Record, {**record, "compile": unmeasured})
    if schema == 3:  # its facts did not say which scenarios decode: the built-in ones' did
        facts = {**record["scenario_facts"], "decodes": decodes(scenario_facts(record["scenario"]))}
        return cast(Record, {**record, "scenario_facts": facts, "legs": None, "compile": unmeasured})
    upgraded: dict[str, Any] = {"gap": None, "cpu_failure": None, "cpu_verdict": None, "compile": None,
                                "fallback_ops": None, "details": None, "legs": None, **record}
    upgraded["compile"] = unmeasured
    upgraded["group"] = GROUP_ALIASES.get(record["group"], record["group"])
    built_in = scenario_facts(record["scenario"])
    upgraded["scenario_facts"] = {**built_in, "decodes": decodes(built_in)}
    upgraded["failure"] = _full_failure(record.get("failure"), record["outcome"])
    upgraded["cpu_failure"] = _full_failure(upgraded["cpu_failure"], record.get("cpu_outcome"))
    if upgraded["cpu_verdict"] == "same-failure":
        upgraded["cpu_verdict"] = FAILS_ON_CPU_TOO
    elif upgraded["cpu_verdict"] is None and record["outcome"] in (*DID_NOT_WORK, "known-failure"):
        # schema 1: the attempt failed (a known failure is a failure the list expects)
        upgraded["cpu_verdict"] = cpu_verdict("failed" if record["outcome"] == "known-failure" else record["outcome"],
                                              upgraded["failure"], record.get("cpu_outcome"), upgraded["cpu_failure"])
    return cast(Record, upgraded)
