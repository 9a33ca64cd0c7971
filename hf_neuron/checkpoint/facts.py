"""A case's checkpoint prepared once per process: read, planned at full size, its slice sized to the budget; and the
facts of it that records and ``hf-neuron check --json`` carry (:class:`~hf_neuron.vocabulary.records.CheckpointFacts`).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from hf_neuron.checkpoint.plan import Plan, plan
from hf_neuron.checkpoint.quantization import Quantization, quantization
from hf_neuron.checkpoint.slice import CheckpointSlice, SliceRequest, materialize, plan_slice
from hf_neuron.checkpoint.source import CheckpointSource, resolve
from hf_neuron.tiny import UnbuildableInputError
from hf_neuron.vocabulary.records import CheckpointFacts, CostFacts

__all__ = ["SLICES", "Prepared", "checkpoint_facts", "prepare", "remember", "slice_directory"]

#: The folder of a run's scratch directory where checkpoints' slices are written.
SLICES = "slices"


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A checkpoint read (``source``), planned at full size (``plan``), with its ``slice`` and ``quantization``."""

    request: SliceRequest
    source: CheckpointSource
    plan: Plan
    slice: CheckpointSlice
    quantization: Quantization | None

    def materialize(self, directory: Path, seed: int = 0) -> Path:
        """The slice's checkpoint under ``directory`` (built on first use); a slice over its budget raises
        :class:`~hf_neuron.tiny.UnbuildableInputError` with gap ``memory-budget``."""
        if not self.slice.fits:
            gib = 1 << 30
            raise UnbuildableInputError(
                f"the real-width slice of {self.request.id} needs about {self.slice.bytes / gib:.1f} GiB "
                f"({self.slice.parameters:,} parameters after {', '.join(self.slice.reductions) or 'no cut'}), over "
                f"the memory budget of {self.slice.budget / gib:.1f} GiB: run it where more memory is free "
                "(--max-gb)", gap="memory-budget")
        return materialize(self.source, self.slice, slice_directory(directory, self.request.id), seed=seed)


def slice_directory(directory: Path, checkpoint: str) -> Path:
    """Where the slice of ``checkpoint`` is written under ``directory`` (one folder a checkpoint)."""
    return directory / re.sub(r"[^\w.-]", "--", checkpoint)


#: The checkpoints this process has prepared, by request.
_PREPARED: dict[SliceRequest, Prepared] = {}


def prepare(request: SliceRequest) -> Prepared:
    """``request``'s checkpoint read, planned (at the plan's default sequence and batch) and sliced, once per process
    (nothing allocated)."""
    if request not in _PREPARED:
        source = resolve(str(request.config))
        if source.name != request.id:
            source = dataclasses.replace(source, name=request.id)
        remember(Prepared(request, source, plan(source), plan_slice(source, budget=request.budget,
                                                                     layers=request.layers, trains=request.trains),
                          quantization(source.quantization)))
    return _PREPARED[request]


def remember(prepared: Prepared) -> None:
    """Make ``prepared`` what :func:`prepare` gives for its request in this process (``hf-neuron check`` plans at the
    sequence and batch its user asked for)."""
    _PREPARED[prepared.request] = prepared


def checkpoint_facts(prepared: Prepared) -> CheckpointFacts:
    """What a record says of ``prepared``'s checkpoint."""
    from hf_neuron.checkpoint.cost import estimates

    found = prepared.plan
    quantized = prepared.quantization
    return CheckpointFacts(
        id=prepared.request.id,
        dtype=prepared.source.dtype,
        weights_dtype=found.dtype,
        parameters=found.parameters,
        active_parameters=found.active_parameters,
        memory=found.memory.by_use(),
        neuron_cores={family: {use: spot.cores for use, spot in uses.items()}
                      for family, uses in found.neuron_cores.items()},
        cost={family: CostFacts(decode_tokens_per_s=estimated.decode_tokens_per_s,
                                usd_per_million_output_tokens=estimated.usd_per_million_output_tokens)
              for family, estimated in estimates(found).items()},
        quantization=None if quantized is None else {"method": quantized.method, "verdict": quantized.verdict,
                                                     "why": quantized.why},
        slice={"layers": prepared.slice.layers, "parameters": prepared.slice.parameters,
               "bytes": prepared.slice.bytes, "budget": prepared.slice.budget,
               "reductions": list(prepared.slice.reductions)},
    )
