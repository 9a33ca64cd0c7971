"""CPU tensors over neuron memory for gloo, and the copies back that a result may need.

The reference device keeps device tensors in host memory, so gloo can read and write them through CPU views
that share that memory (no copy). gloo ignores strides: a non-contiguous tensor goes through a contiguous
temporary, which is copied back into the caller's tensor when the collective completes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from hf_neuron.device import runtime

__all__ = ["Staging", "host_view"]


def host_view(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU tensor sharing ``tensor``'s memory (``tensor`` itself when it is not a neuron tensor)."""
    if tensor.device.type != "neuron":
        return tensor
    return runtime.cpu_alias(tensor)


class Staging:
    """The CPU tensors handed to gloo for one collective, and what to do once it has completed.

    :meth:`source` gives a tensor gloo only reads, :meth:`sink` one it writes (or reads and writes). :meth:`finish`
    runs the registered post-processing (e.g. the division of an average) and then copies the contiguous
    temporaries back into non-contiguous destinations.
    """

    def __init__(self) -> None:
        self._copies: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._after: list[Callable[[], object]] = []

    def source(self, tensor: torch.Tensor) -> torch.Tensor:
        """A contiguous CPU tensor with ``tensor``'s values, for gloo to read."""
        return host_view(tensor).contiguous()

    def sources(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [self.source(tensor) for tensor in tensors]

    def sink(self, tensor: torch.Tensor) -> torch.Tensor:
        """A contiguous CPU tensor that gloo may write, whose values reach ``tensor`` by :meth:`finish`."""
        view = host_view(tensor)
        if view.is_contiguous():
            return view
        staged = view.contiguous()
        self._copies.append((view, staged))
        return staged

    def sinks(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [self.sink(tensor) for tensor in tensors]

    def then(self, step: Callable[[], object]) -> None:
        """Run ``step`` on completion, before the copies back (it sees the staged results)."""
        self._after.append(step)

    def finish(self) -> None:
        """Post-process the results and copy them into the caller's tensors."""
        for step in self._after:
            step()
        for view, staged in self._copies:
            view.copy_(staged)
