"""Deterministic synthetic images: smooth colour gradients with seeded noise, as PIL images of any size.

The same ``(size, seed)`` gives the same pixels in every process. The pictures mean nothing; they only need to be
images a real image processor accepts, with enough structure that different patches embed differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["synthetic_image", "synthetic_images"]


def synthetic_image(height: int, width: int, *, seed: int = 0) -> Image.Image:
    """An RGB image of ``height`` x ``width`` pixels: a gradient per channel, with noise drawn from ``seed``."""
    import numpy as np
    from PIL import Image

    if height < 1 or width < 1:
        raise ValueError(f"an image needs at least one pixel on each side, got {height} x {width}")
    rows = np.linspace(0.0, 1.0, height)[:, None]
    columns = np.linspace(0.0, 1.0, width)[None, :]
    phase = seed % 3
    channels = [rows * columns, rows, columns]
    gradient = np.stack([channels[(phase + i) % 3] * np.ones((height, width)) for i in range(3)], axis=-1)
    noise = np.random.default_rng(seed).uniform(0.0, 0.25, size=(height, width, 3))
    pixels = np.clip((0.75 * gradient + noise) * 255.0, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels, mode="RGB")


def synthetic_images(sizes: Sequence[tuple[int, int]], *, seed: int = 0) -> list[Image.Image]:
    """One :func:`synthetic_image` per ``(height, width)`` of ``sizes``, the i-th drawn from ``seed + i``."""
    return [synthetic_image(height, width, seed=seed + index) for index, (height, width) in enumerate(sizes)]
