"""A content guardrail that lets everything through, for the pipelines that refuse to run without one.

diffusers' Cosmos pipelines build NVIDIA's ``CosmosSafetyChecker`` (the ``cosmos_guardrail`` package, whose guard
models load from the Hub) when they are given none, and refuse to run with ``safety_checker=None``. Offline, and for a
tiny model of random weights, the matrix gives them :class:`PassThroughGuardrail` instead: every prompt is safe and
every video comes back unchanged, so what ``generate`` compares with the CPU is the pipeline's own work (text encoder,
denoiser, VAE), with no filter that could hide or add a difference. It checks nothing: it is not a guardrail for a real
model.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PassThroughGuardrail"]


class PassThroughGuardrail:
    """The methods the Cosmos pipelines call on their safety checker, each leaving its input as it is."""

    def to(self, *args: Any, **kwargs: Any) -> PassThroughGuardrail:
        """Nothing to move: no weights."""
        return self

    def check_text_safety(self, prompt: str) -> bool:
        """Every prompt passes."""
        return True

    def check_video_safety(self, frames: Any) -> Any:
        """The frames, unchanged."""
        return frames
