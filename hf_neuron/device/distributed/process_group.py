"""``NeuronProcessGroup``: the process group of the ``neuron`` c10d backend on the reference device.

A Python subclass of ``torch.distributed.ProcessGroup`` (a ``Backend`` has no Python constructor) that owns a gloo
group and runs every collective on CPU views of the neuron tensors' host memory
(:mod:`hf_neuron.device.distributed.views`).
CPU tensors pass straight through, so object collectives work too. What gloo lacks is filled in here:
``ReduceOp.AVG`` and ``PREMUL_SUM`` (which FSDP2 uses) run as a sum scaled on completion, the coalesced variants run
one collective per tensor, and the single-tensor gathers and scatters flatten their buffers (gloo wants the output
of ``all_gather_into_tensor`` shaped ``(world * n, ...)``, accelerate passes a flat one).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import (
    AllgatherOptions,
    AllreduceCoalescedOptions,
    AllreduceOptions,
    AllToAllOptions,
    BarrierOptions,
    BroadcastOptions,
    GatherOptions,
    ReduceOptions,
    ReduceScatterOptions,
    ScatterOptions,
)

from hf_neuron.device.distributed.views import Staging
from hf_neuron.device.distributed.work import NeuronWork

__all__ = ["NeuronProcessGroup"]

_RedOp: Any = dist.ReduceOp.RedOpType
Tensors = list[torch.Tensor]


def _reduce_options(kind: Callable[[], Any], opts: Any) -> Any:
    """A fresh options object of ``kind`` with the reduction and timeout of ``opts`` (one per collective)."""
    single = kind()
    single.reduceOp, single.timeout = opts.reduceOp, opts.timeout
    return single


def _divide(tensors: Sequence[torch.Tensor], divisor: int) -> None:
    for tensor in tensors:
        tensor.div_(divisor, rounding_mode=None if tensor.is_floating_point() or tensor.is_complex() else "trunc")


class NeuronProcessGroup(dist.ProcessGroup):
    """A process group whose collectives run on gloo over CPU views of neuron tensors (zero copy); ``backend_name`` is
    the name c10d registered it under."""

    def __init__(
        self, store: dist.Store, rank: int, size: int, timeout: datetime.timedelta, group_name: str = "", *,
        backend_name: str,
    ) -> None:
        super().__init__(rank, size)  # type: ignore[call-arg]  # the binding takes (rank, size); the stub lists more
        self._backend_name = backend_name
        # Any: gloo's collectives are bindings that torch's stubs do not declare.
        self._gloo: Any = dist.ProcessGroupGloo(dist.PrefixStore("gloo/", store), rank, size, timeout)
        self._group_name = group_name
        self._group_desc = ""
        self._coalescing: list[NeuronWork] | None = None
        self._in_flight: list[NeuronWork] = []

    # ---- identity (DeviceMesh and functional collectives look groups up by name) ------------------------
    def getBackendName(self) -> str:  # noqa: N802 - names of the C++ virtuals this overrides
        return self._backend_name

    def getGroupName(self) -> str:  # noqa: N802
        return self._group_name

    def setGroupName(self, name: str) -> None:  # noqa: N802
        self._group_name = name

    def getGroupDesc(self) -> str:  # noqa: N802
        return self._group_desc

    def setGroupDesc(self, desc: str) -> None:  # noqa: N802
        self._group_desc = desc

    def _get_backend(self, device: torch.device) -> dist.ProcessGroupGloo:
        """The gloo backend that carries this group's collectives, for every device type."""
        return self._gloo

    @property
    def _device_types(self) -> list[torch.device]:
        """The device type the group serves, as a group c10d builds for a backend registered with ``devices=``
        reports it (c10d returns a ``ProcessGroup`` subclass as it is, without registering its devices):
        ``_get_pg_default_device`` (FSDP's sharded state dicts) and ``_device_capability`` read it."""
        return [torch.device(self._backend_name)]

    def __repr__(self) -> str:
        return f"NeuronProcessGroup(rank={self.rank()}, size={self.size()}, name={self._group_name!r})"

    # ---- plumbing ---------------------------------------------------------------------------------------
    def _issue(self, result: Tensors, staging: Staging, *inner: dist.Work, collective: bool = True) -> NeuronWork:
        """Wrap gloo's works; a collective stays counted by :meth:`in_flight` until it completes."""
        work = NeuronWork(inner, result, staging)
        if collective:
            self.in_flight()
            self._in_flight.append(work)
        if self._coalescing is not None:
            self._coalescing.append(work)
        return work

    def in_flight(self) -> int:
        """How many collectives of this group have not completed (point-to-point operations are not counted)."""
        self._in_flight = [work for work in self._in_flight if not work.is_completed()]
        return len(self._in_flight)

    def _reduction(self, opts: Any, outputs: Callable[[], Sequence[torch.Tensor]], staging: Staging) -> Any:
        """``opts`` with a reduction gloo knows: AVG and PREMUL_SUM become SUM, scaled on completion."""
        op: Any = opts.reduceOp
        kind = op.op if isinstance(op, dist.ReduceOp) else op  # type: ignore[attr-defined]  # stubs omit .op
        if kind == _RedOp.AVG:
            size = self.size()
            staging.then(lambda: _divide(outputs(), size))
        elif kind == _RedOp.PREMUL_SUM:
            factor = op.factor
            factor = factor.item() if isinstance(factor, torch.Tensor) else float(factor)
            staging.then(lambda: [tensor.mul_(factor) for tensor in outputs()])
        else:
            return opts
        opts.reduceOp = dist.ReduceOp.SUM  # c10d builds an options object per call
        return opts

    # ---- reductions -------------------------------------------------------------------------------------
    def allreduce(self, tensors: Tensors, opts: Any = None) -> NeuronWork:
        opts = opts or AllreduceOptions()
        staging = Staging()
        views = staging.sinks(tensors)
        opts = self._reduction(opts, lambda: views, staging)
        return self._issue(tensors, staging, self._gloo.allreduce(views, opts))

    def allreduce_coalesced(self, tensors: Tensors, opts: Any = None) -> NeuronWork:
        opts = opts or AllreduceCoalescedOptions()
        works = [self.allreduce([tensor], _reduce_options(AllreduceOptions, opts)) for tensor in tensors]
        return self._combine(tensors, works)

    def reduce(self, tensors: Tensors, opts: Any = None) -> NeuronWork:
        opts = opts or ReduceOptions()
        staging = Staging()
        views = staging.sinks(tensors)
        root = self.rank() == opts.rootRank
        opts = self._reduction(opts, lambda: views if root else [], staging)
        return self._issue(tensors, staging, self._gloo.reduce(views, opts))

    def reduce_scatter(self, outputs: Tensors, inputs: list[Tensors], opts: Any = None) -> NeuronWork:
        opts = opts or ReduceScatterOptions()
        staging = Staging()
        views = staging.sinks(outputs)
        sources = [staging.sources(chunks) for chunks in inputs]
        opts = self._reduction(opts, lambda: views, staging)
        return self._issue(outputs, staging, self._gloo.reduce_scatter(views, sources, opts))

    def reduce_scatter_single(self, output: torch.Tensor, source: torch.Tensor, opts: Any = None) -> NeuronWork:
        opts = opts or ReduceScatterOptions()
        staging = Staging()
        view = staging.sink(output)
        opts = self._reduction(opts, lambda: [view], staging)
        work = self._gloo._reduce_scatter_base(view.view(-1), staging.source(source).view(-1), opts)
        return self._issue([output], staging, work)

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(self, outputs: Tensors, inputs: Tensors, opts: Any = None) -> NeuronWork:
        opts = opts or ReduceScatterOptions()
        works = [
            self.reduce_scatter_single(output, tensor, _reduce_options(ReduceScatterOptions, opts))
            for output, tensor in zip(outputs, inputs, strict=True)
        ]
        return self._combine(outputs, works)

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    # ---- gathers and scatters ---------------------------------------------------------------------------
    def broadcast(self, tensors: Tensors, opts: Any = None) -> NeuronWork:
        staging = Staging()
        views = staging.sinks(tensors)
        return self._issue(tensors, staging, self._gloo.broadcast(views, opts or BroadcastOptions()))

    def allgather(self, outputs: list[Tensors], inputs: Tensors, opts: Any = None) -> NeuronWork:
        staging = Staging()
        views = [staging.sinks(chunks) for chunks in outputs]
        work = self._gloo.allgather(views, staging.sources(inputs), opts or AllgatherOptions())
        return self._issue([tensor for chunks in outputs for tensor in chunks], staging, work)

    def all_gather_single(self, output: torch.Tensor, source: torch.Tensor, opts: Any = None) -> NeuronWork:
        staging = Staging()
        view = staging.sink(output)
        work = self._gloo._allgather_base(
            view.view(-1), staging.source(source).view(-1), opts or AllgatherOptions()
        )
        return self._issue([output], staging, work)

    _allgather_base = all_gather_single

    def allgather_coalesced(self, outputs: list[Tensors], inputs: Tensors, opts: Any = None) -> NeuronWork:
        works = [self.allgather([chunks], [tensor], opts) for chunks, tensor in zip(outputs, inputs, strict=True)]
        return self._combine([tensor for chunks in outputs for tensor in chunks], works)

    def all_gather_single_coalesced(self, outputs: Tensors, inputs: Tensors, opts: Any = None) -> NeuronWork:
        works = [self.all_gather_single(output, tensor, opts) for output, tensor in zip(outputs, inputs, strict=True)]
        return self._combine(outputs, works)

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def gather(self, outputs: list[Tensors], inputs: Tensors, opts: Any = None) -> NeuronWork:
        staging = Staging()
        views = [staging.sinks(chunks) for chunks in outputs]
        work = self._gloo.gather(views, staging.sources(inputs), opts or GatherOptions())
        return self._issue([tensor for chunks in outputs for tensor in chunks], staging, work)

    def scatter(self, outputs: Tensors, inputs: list[Tensors], opts: Any = None) -> NeuronWork:
        staging = Staging()
        views = staging.sinks(outputs)
        sources = [staging.sources(chunks) for chunks in inputs]
        return self._issue(outputs, staging, self._gloo.scatter(views, sources, opts or ScatterOptions()))

    def alltoall(self, outputs: Tensors, inputs: Tensors, opts: Any = None) -> NeuronWork:
        staging = Staging()
        views = staging.sinks(outputs)
        work = self._gloo.alltoall(views, staging.sources(inputs), opts or AllToAllOptions())
        return self._issue(outputs, staging, work)

    def all_to_all_single(
        self, output: torch.Tensor, source: torch.Tensor, output_splits: list[int], input_splits: list[int],
        opts: Any = None,
    ) -> NeuronWork:
        staging = Staging()
        view = staging.sink(output)
        work = self._gloo.alltoall_base(
            view, staging.source(source), output_splits, input_splits, opts or AllToAllOptions()
        )
        return self._issue([output], staging, work)

    alltoall_base = all_to_all_single

    # ---- point to point and synchronisation -------------------------------------------------------------
    def send(self, tensors: Tensors, dst: int, tag: int) -> NeuronWork:
        staging = Staging()
        return self._issue(tensors, staging, self._gloo.send(staging.sources(tensors), dst, tag), collective=False)

    def recv(self, tensors: Tensors, src: int, tag: int) -> NeuronWork:
        staging = Staging()
        return self._issue(tensors, staging, self._gloo.recv(staging.sinks(tensors), src, tag), collective=False)

    def recv_anysource(self, tensors: Tensors, tag: int) -> NeuronWork:
        staging = Staging()
        work = self._gloo.recv_anysource(staging.sinks(tensors), tag)
        return self._issue(tensors, staging, work, collective=False)

    def barrier(self, opts: Any = None) -> NeuronWork:
        return self._issue([], Staging(), self._gloo.barrier(opts or BarrierOptions()))

    # ---- coalescing (``_coalescing_manager(device=...)``): collectives run as issued, end waits for them --
    def _start_coalescing(self, device: torch.device) -> None:
        self._coalescing = []

    def _end_coalescing(self, device: torch.device) -> NeuronWork:
        works, self._coalescing = self._coalescing or [], None
        return self._combine([tensor for work in works for tensor in work.result()], works)

    def _combine(self, result: Tensors, works: Sequence[NeuronWork]) -> NeuronWork:
        """One work for several already issued: it waits for each (which finishes each)."""
        return NeuronWork(works, result, Staging())

    # ---- lifetime (``destroy_process_group``, the failure handling) ---------------------------------------
    def abort(self) -> None:
        self._gloo.abort()

    def shutdown(self) -> None:
        self._gloo.shutdown()

    def release_at_exit(self) -> None:
        """Drop the gloo backend, which joins its threads with the GIL released (torch destroys c10d objects so).

        Called at a normal exit once no collective is in flight: a gloo thread still alive while the interpreter
        finalizes may take the GIL to drop a future's Python callback, and a thread that does so then is ended
        mid-C++ and aborts the process ("terminate called without an active exception")."""
        del self._gloo
