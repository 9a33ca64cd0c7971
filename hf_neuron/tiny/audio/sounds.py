"""Deterministic synthetic sounds: plain float arrays at a given sampling rate, no audio library, no file.

Each sound is a few harmonic tones with a slow amplitude envelope and a little noise, drawn from a seed, so that a
feature extractor sees something like speech energy (not silence, not white noise) and every process makes the same
samples. ``datasets``' ``Audio`` feature is not used: decoding needs torchcodec and FFmpeg; a dataset of sounds holds
the arrays themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["synthetic_sound", "synthetic_sounds"]


def synthetic_sound(seconds: float, sampling_rate: int, *, seed: int = 0) -> np.ndarray:
    """``seconds`` of sound at ``sampling_rate`` (float32, within [-1, 1]), drawn from ``seed``."""
    import numpy as np

    generator = np.random.default_rng(seed)
    time = np.arange(round(seconds * sampling_rate)) / sampling_rate
    pitch = generator.uniform(110.0, 330.0)
    tones = sum(np.sin(2 * np.pi * pitch * harmonic * time + generator.uniform(0, 2 * np.pi)) / harmonic
                for harmonic in (1, 2, 3))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * generator.uniform(2.0, 5.0) * time)
    sound = 0.3 * envelope * tones + 0.01 * generator.standard_normal(time.shape)
    return np.clip(sound, -1.0, 1.0).astype(np.float32)


def synthetic_sounds(lengths: Sequence[float], sampling_rate: int, *, seed: int = 0) -> list[np.ndarray]:
    """One sound per length in seconds, each from its own seed (``seed`` + its index)."""
    return [synthetic_sound(seconds, sampling_rate, seed=seed + index) for index, seconds in enumerate(lengths)]
