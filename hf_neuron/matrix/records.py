"""The matrix's unit of output: one JSON record per (architecture, scenario) case.

A record is written as one line of a ``*.jsonl`` file the moment its case finishes, so an interrupted run loses
nothing that finished. The report reads records, never the runner. Everything a record holds is plain JSON.

Fields (``schema`` 1):

======================  =============================================================================
``schema``              1
``run_id``              identifies the run (shards of one run share it)
``case_id``             ``"<model_type>::<scenario>"``, unique within a run
``model_type``          transformers ``model_type`` (or a diffusers class name in the diffusion group)
``group``               catalog group, e.g. ``decoder``, ``encoder-decoder``, ``multimodal``, ``diffusion``
``scenario``            ``load``, ``forward``, ``generate``, ``train``, ``lora``, ``bf16``, ``compile``, ``save``, ``ddp``
``outcome``             one of :data:`OUTCOMES`
``reason``              why, for ``skipped`` and ``known-failure``; else null
``duration_s``          wall seconds of the case
``peak_memory_bytes``   peak device memory during the case (null when the backend cannot tell)
``parity``              ``{"metric": "max_abs_diff", "value": float, "tolerance": float}`` or null
``cpu_outcome``         outcome of the same scenario run on the CPU alone (``passed``/``failed``/...), or null
``cpu_failure``         null, or ``{"type", "message", "frame", "fingerprint"}`` of the CPU re-run's failure: the
                        same ``fingerprint`` as ``failure`` says the CPU fails the same way (records written
                        before this field existed lack it; readers take it as null)
``failure``             null, or ``{"type", "message", "frame", "fingerprint", "traceback", "failure_class"}``
``known_failure``       the matching entry of ``compat/known_failures.toml`` (dict; its ``model_type`` and
                        ``scenario`` may be lists) or null
``env``                 ``{"backend": "reference"|"real"|"none", "backend_version", "device_count", "python",
                        "torch", "transformers", "accelerate", "peft", "diffusers", "hf_neuron", "host",
                        "patches"}`` (``none`` only in a ``--device cpu`` baseline run: a neuron run refuses to
                        start without a backend)
``started_at``          ISO-8601 UTC
``finished_at``         ISO-8601 UTC
======================  =============================================================================
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = ["OUTCOMES", "Outcome", "SCHEMA_VERSION", "CpuFailure", "Failure", "Parity", "Record"]

SCHEMA_VERSION = 1

Outcome = Literal["passed", "failed", "error", "timeout", "crashed", "skipped", "known-failure"]

#: The closed set of outcomes. ``failed``: the scenario ran and its check did not hold (parity, device, loss);
#: ``error``: it raised; ``timeout``: it exceeded the per-case limit; ``crashed``: its process died;
#: ``skipped``: not applicable, with a reason; ``known-failure``: failed as ``compat/known_failures`` expects.
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "error", "timeout", "crashed", "skipped", "known-failure")


class Parity(TypedDict):
    metric: str
    value: float
    tolerance: float


class CpuFailure(TypedDict):
    type: str
    message: str
    frame: str
    fingerprint: str


class Failure(CpuFailure):
    traceback: str
    failure_class: str


class Record(TypedDict):
    schema: int
    run_id: str
    case_id: str
    model_type: str
    group: str
    scenario: str
    outcome: Outcome
    reason: str | None
    duration_s: float
    peak_memory_bytes: int | None
    parity: Parity | None
    cpu_outcome: str | None
    cpu_failure: CpuFailure | None
    failure: Failure | None
    known_failure: dict[str, Any] | None
    env: dict[str, Any]
    started_at: str
    finished_at: str
