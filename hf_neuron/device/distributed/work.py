"""The ``Work`` of a neuron collective: gloo works in flight, finished into the caller's neuron tensors."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Sequence

import torch
import torch.distributed as dist

from hf_neuron.device.distributed.views import Staging

__all__ = ["NeuronWork"]


class NeuronWork(dist.Work):
    """Completes when its gloo works have, then finishes its :class:`Staging` exactly once.

    ``result`` is what the future holds: the caller's tensors, as DDP's communication hooks expect.
    """

    def __init__(self, inner: Sequence[dist.Work], result: list[torch.Tensor], staging: Staging) -> None:
        super().__init__()
        self._inner = tuple(inner)
        self._tensors = result
        self._staging = staging
        self._lock = threading.Lock()
        self._finished = False

    def _finish(self) -> list[torch.Tensor]:
        with self._lock:
            if not self._finished:
                self._staging.finish()
                self._finished = True
        return self._tensors

    def result(self) -> list[torch.Tensor]:
        """The caller's tensors (their values are final once :meth:`wait` has returned)."""
        return self._tensors

    def wait(self, timeout: datetime.timedelta = datetime.timedelta(0)) -> bool:
        """Block until the collective has completed and its results are in the caller's tensors."""
        for work in self._inner:
            work.wait(timeout)
        self._finish()
        return True

    def get_future(self) -> torch.futures.Future[list[torch.Tensor]]:
        """A future of the caller's tensors, completed on gloo's thread (point-to-point: completed by waiting)."""
        try:
            futures = [work.get_future() for work in self._inner]
        except RuntimeError:  # gloo's send/recv works have no future
            self.wait()
            future: torch.futures.Future[list[torch.Tensor]] = torch.futures.Future()
            future.set_result(self._tensors)
            return future

        def finish(done: torch.futures.Future[list[torch.futures.Future[object]]]) -> list[torch.Tensor]:
            for part in done.value():
                part.value()  # raises the collective's error, if any
            return self._finish()

        return torch.futures.collect_all(futures).then(finish)

    def is_completed(self) -> bool:
        """True once the collective has completed (its results are then in the caller's tensors): waited for, or
        reported complete by gloo (which its reduce-scatter works never report)."""
        if not self._finished and all(work.is_completed() for work in self._inner):
            self._finish()
        return self._finished

    def _source_rank(self) -> int:
        """The sender of a ``recv`` from any source."""
        return int(self._inner[0]._source_rank())
