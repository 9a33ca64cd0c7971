"""The output of ``hf-neuron upstream``: one JSON record per upstream test and device.

Records follow the matrix's conventions, from the vocabulary: the closed outcome set
(:mod:`hf_neuron.vocabulary.outcomes`), one failure shape with its fingerprint and class
(:mod:`hf_neuron.vocabulary.failures`), the run's environment block, the one record reader
(:mod:`hf_neuron.vocabulary.jsonl`). They are appended as the tests finish, one line each, to ``*.jsonl`` files of
the results directory (:class:`~hf_neuron.matrix.results.store.RecordWriter`).

Fields (``schema`` 2; schema 1's failures lack their class, which reading gives them):

=====================  ===============================================================================
``schema``             2
``run_id``             identifies the run
``suite``              whose test suite: ``transformers``, ``peft``, ``accelerate``, ``diffusers``, ``trl``
``model_type``         the test's unit: for transformers the architecture, as given to ``--arch`` (its tests
                       are ``tests/models/<arch>/``); for the others the test module (``custom_models`` for
                       ``tests/test_custom_models.py``, ``transformer_flux`` for diffusers'
                       ``test_models_transformer_flux.py``)
``test``               the pytest node id, relative to the source tree
                       (``tests/models/llama/test_modeling_llama.py::LlamaModelTest::test_x``)
``device``             ``neuron`` or ``cpu``
``outcome``            one of :data:`~hf_neuron.vocabulary.outcomes.OUTCOMES`: ``failed`` the test failed, ``error``
                       its setup, teardown or collection did, ``timeout``, ``crashed`` (its process died),
                       ``skipped`` (upstream's reason; an expected failure ``xfail`` too), ``known-failure``
                       (fails on neuron as its ``compat/upstream_not_applicable.toml`` entry expects)
``reason``             why, for ``skipped`` and ``known-failure``; else null
``duration_s``         wall seconds of setup, call and teardown
``failure``            null, or a :class:`~hf_neuron.vocabulary.failures.Failure`
``not_applicable``     the entry of ``compat/upstream_not_applicable.toml`` naming this neuron test, or null
                       (with outcome ``passed``: the entry can be removed)
``env``                the environment block of the run
``started_at``         ISO-8601 UTC
``finished_at``        ISO-8601 UTC
``stand_ins``          the Hub ids whose locally built stand-ins the test read (optional: records written
                       before stand-ins existed have none)
``architecture``       the architecture (a model type of the catalog) the test's unit tests, where the suite
                       declares one (diffusers: ``FluxTransformer2DModel`` for ``transformer_flux``; optional)
=====================  ===============================================================================

The environment block of a run of upstream tests also says where the tests came from
(``env["upstream_source"]``, :class:`hf_neuron.upstream.source.SourceTree`'s provenance).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, TypedDict, cast, get_args

from hf_neuron.vocabulary.failures import FAILURE_CLASSES, FAILURE_FIELDS, Failure, classify, failure_text
from hf_neuron.vocabulary.jsonl import LineProblem, Lines, read_jsonl
from hf_neuron.vocabulary.outcomes import OUTCOMES, Outcome
from hf_neuron.vocabulary.records import Env, is_name, parse_time

__all__ = [
    "DEVICES",
    "SCHEMA_VERSION",
    "Device",
    "UpstreamRecord",
    "read_records",
    "short_name",
    "validate_record",
]

SCHEMA_VERSION = 2
#: The schemas this module reads.
_READABLE = (1, SCHEMA_VERSION)
Device = Literal["cpu", "neuron"]
#: The devices every test runs on: the CPU is the reference the neuron result is judged against.
DEVICES: tuple[Device, ...] = get_args(Device)


class _RecordFields(TypedDict):
    schema: int
    run_id: str
    suite: str
    model_type: str
    test: str
    device: Device
    outcome: Outcome
    reason: str | None
    duration_s: float
    failure: Failure | None
    not_applicable: dict[str, Any] | None
    env: Env
    started_at: str
    finished_at: str


class UpstreamRecord(_RecordFields, total=False):
    """One upstream test on one device (fields in the module docstring)."""

    stand_ins: list[str]
    architecture: str


def short_name(node_id: str) -> str:
    """The test's name without file and class: what ``compat/upstream_not_applicable.toml`` patterns match."""
    return node_id.rpartition("::")[2]


def _problems(obj: dict[str, Any]) -> list[str]:
    missing = [key for key in _RecordFields.__annotations__ if key not in obj]
    if missing:
        return [f"missing field(s) {', '.join(missing)}"]
    problems = []
    texts = ("run_id", "suite", "test", "started_at", "finished_at")
    problems += [f"'{key}' must be a non-empty string" for key in texts
                 if not isinstance(obj[key], str) or not obj[key]]
    if obj["schema"] not in _READABLE:
        problems.append(f"'schema' must be one of {', '.join(map(str, _READABLE))}")
    if not is_name(obj["model_type"]):
        problems.append("'model_type' must be a name of letters, digits, '_', '.' and '-'")
    if obj["device"] not in DEVICES:
        problems.append(f"'device' must be one of {', '.join(DEVICES)}")
    if obj["outcome"] not in OUTCOMES:
        problems.append(f"'outcome' must be one of {', '.join(OUTCOMES)}")
    elif obj["outcome"] in ("skipped", "known-failure") and not obj["reason"]:
        problems.append(f"outcome {obj['outcome']!r} needs a 'reason'")
    duration = obj["duration_s"]
    if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not duration >= 0:
        problems.append("'duration_s' must be a number >= 0")
    failure = obj["failure"]
    keys = [key for key in FAILURE_FIELDS if key != "failure_class" or obj["schema"] != 1]
    if failure is not None and not (isinstance(failure, dict) and all(isinstance(failure.get(key), str) for key in keys)
                                    and failure.get("failure_class", "other") in FAILURE_CLASSES):
        problems.append(f"'failure' must be null or an object with string fields {', '.join(keys)}")
    stand_ins = obj.get("stand_ins", [])
    if not isinstance(stand_ins, list) or not all(isinstance(hub_id, str) for hub_id in stand_ins):
        problems.append("'stand_ins' must be a list of Hub ids")
    if "architecture" in obj and not is_name(obj["architecture"]):
        problems.append("'architecture' must be a name of letters, digits, '_', '.' and '-'")
    for key in ("not_applicable", "env"):
        if not isinstance(obj[key], dict) and not (key == "not_applicable" and obj[key] is None):
            problems.append(f"'{key}' must be an object")
    for key in ("started_at", "finished_at"):
        try:
            parse_time(obj[key])
        except (TypeError, ValueError):
            problems.append(f"'{key}' must be an ISO-8601 timestamp")
    return problems


def validate_record(obj: Any) -> list[str]:
    """What is wrong with ``obj`` as an upstream record (empty when nothing is). Unknown fields are allowed."""
    return _problems(obj) if isinstance(obj, dict) else [f"expected a JSON object, got {type(obj).__name__}"]


def _upgraded(record: UpstreamRecord) -> UpstreamRecord:
    """A schema-1 record's failure with its class (the current shape)."""
    found = record["failure"]
    if found is None or "failure_class" in found:
        return record
    classified = {**found, "failure_class": classify(record["outcome"], failure_text(found))}
    return cast(UpstreamRecord, {**record, "failure": classified})


def read_records(paths: Iterable[Path]) -> tuple[list[UpstreamRecord], list[LineProblem]]:
    """The valid records in ``paths`` (directories are searched for ``*.jsonl`` and ``*.jsonl.gz``; one that does not
    exist yet holds none), in the current shape, and a problem per line that is not one (skipped, never fatal: a
    results directory may hold a line cut short by a kill)."""
    found: Lines[UpstreamRecord] = read_jsonl(paths, validate_record, strict=False, what="upstream record",
                                              missing_ok=True)
    return [_upgraded(record) for record in found.records], found.problems
