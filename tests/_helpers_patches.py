"""Helpers of the patch tests: commands with one reference device, fake libraries, re-installing the patches."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import _helpers

from hf_neuron.patches.transformers import PATCHES

__all__ = ["SCRIPTS", "SLIDING_WINDOW_LENGTH_PATCHES", "fake_distribution", "fake_library", "placeholder_mask",
           "reinstalled", "run", "sliding_window_decoding", "without"]

#: The patches that keep a static sliding-window layer's length in a tensor (they apply together), from the registry.
SLIDING_WINDOW_LENGTH_PATCHES = [patch.id for patch in PATCHES
                                 if patch.attribute.startswith("StaticSlidingWindowLayer.")]

#: The directory of the console scripts (accelerate, trl, hf-neuron) of this Python environment.
SCRIPTS = Path(sys.executable).parent


def run(
    args: list[str] | str, *, env: Mapping[str, str] | None = None, cwd: Path | None = None, check: bool = True,
    timeout: float = 900,
) -> subprocess.CompletedProcess[str]:
    """:func:`_helpers.run` with one reference device by default (so that `accelerate launch` and `trl` start one
    process), failing with the output when the command fails and ``check`` is set."""
    result = _helpers.run(args, {"HF_NEURON_EMULATOR_DEVICES": "1", "HF_HUB_DISABLE_TELEMETRY": "1", **(env or {})},
                          cwd=cwd, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{args} exited {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    return result


def fake_distribution(root: Path, name: str, version: str) -> Path:
    """Write a ``<name>-<version>.dist-info`` under ``root``: first on ``sys.path``, it fakes the installed version."""
    info = root / f"{name}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return root


def fake_library(root: Path, name: str, version: str, files: Mapping[str, str]) -> Path:
    """Write package ``name`` under ``root`` (``files`` maps paths inside the package to source) and its version."""
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "__init__.py").touch()
    for relative, source in files.items():
        path = root / name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return fake_distribution(root, name, version)


@contextlib.contextmanager
def reinstalled() -> Iterator[None]:
    """Revert the process's patches for the duration of the block, then install them again (fresh registry)."""
    from hf_neuron import patches

    current = patches.installation()
    assert current is not None, "the patches are not installed"
    current.revert()
    try:
        yield
    finally:
        patches.install()


@contextlib.contextmanager
def without(patch_id: str) -> Iterator[None]:
    """Revert one patch of the process's for the duration of the block, then install them all again."""
    from hf_neuron import patches

    current = patches.installation()
    assert current is not None, "the patches are not installed"
    current.finder.registry.revert([patch_id])
    try:
        yield
    finally:
        current.revert()
        patches.install()


@contextlib.contextmanager
def pre_release_flex_attention() -> Iterator[None]:
    """FlexAttention as the pre-release TorchNeuron tree left it, where the two patches explain it: torch's device
    check refuses neuron tensors, and torch.compile's default backend stays Inductor (on 2.33 and later both change,
    FlexAttention runs, and the patches call transformers' own)."""
    import pytest
    from torch.nn.attention import flex_attention as torch_flex

    check = torch_flex._validate_device
    torch_flex._validate_device = getattr(check, "__wrapped__", check)
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("HF_NEURON_EMULATOR_COMPILE_BACKEND", "explicit")
            yield
    finally:
        torch_flex._validate_device = check


def sliding_window_decoding(steps: int = 6, prompt: int = 3) -> tuple[int, int, list[float]]:
    """Compiled decoding of one static sliding-window cache layer on neuron (window 4, a ``prompt``-token prompt,
    ``steps`` decoding steps that fill and roll it): each step's mask sizes, padding mask, update and length in one
    function, compiled as transformers compiles decoding on neuron. The graphs Dynamo compiled, its graph breaks, and
    what each step computed with transformers' ``cumulative_length`` after it (the same with the patches or
    without)."""
    import torch
    from transformers import masking_utils
    from transformers.cache_utils import StaticSlidingWindowLayer

    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    generator = torch.Generator().manual_seed(0)
    states = torch.randn(steps + prompt, 1, 2, 1, 8, generator=generator).to("neuron")
    layer = StaticSlidingWindowLayer(max_cache_len=prompt + steps, sliding_window=4)
    prefill = states[:prompt].squeeze(3).permute(1, 2, 0, 3)
    layer.update(prefill, prefill)  # the prompt
    mask = torch.ones(1, prompt + steps, dtype=torch.bool, device="neuron")
    mask[0, 0] = False  # a padded first token, which the window leaves behind

    @torch.compile(backend="neuron", dynamic=False)  # as transformers compiles decoding on neuron
    def step(key: torch.Tensor) -> torch.Tensor:
        length, offset = layer.get_mask_sizes(1)
        padding = masking_utils.prepare_padding_mask(mask, length, offset)
        keys, values = layer.update(key, key * 2)
        visible = padding[:, torch.arange(length, device=key.device) + offset]
        return (keys.sum(dim=(0, 1, 3)) * visible).sum() + values.sum() + layer.get_seq_length()

    results = [value for index in range(steps)
               for value in (float(step(states[prompt + index])), float(layer.cumulative_length))]
    return int(counters["stats"]["unique_graphs"]), sum(counters["graph_break"].values()), results


def placeholder_mask(module: str, name: str, *, features: int = 2, compiled: bool = True) -> tuple[int, Any]:
    """``<name>.get_placeholder_mask`` of ``transformers.models.<module>`` on neuron, as its model calls it: two
    placeholder tokens (id 3) among four, embeddings of width 8 and ``features`` feature rows (2 match them), with a
    stand-in model whose config answers every ``*_token_id`` with 3. Compiled (``compiled``, Dynamo's graph breaks
    counted, as transformers compiles on neuron) or eagerly; the graph breaks and the mask it returned."""
    import importlib
    import inspect
    import types

    import torch

    owner = getattr(importlib.import_module(f"transformers.models.{module}.modeling_{module}"), name)
    parameters = inspect.signature(owner.get_placeholder_mask).parameters
    stand_in = types.SimpleNamespace(config=types.SimpleNamespace(audio_token_id=3, image_token_id=3,
                                                                  video_token_id=3))
    extra = {"token_id": 3} if "token_id" in parameters else {}
    input_ids = torch.tensor([[1, 3, 3, 2]], device="neuron")
    inputs_embeds = torch.randn(1, 4, 8).to("neuron")
    rows = torch.randn(features, 8).to("neuron")

    def call(ids: torch.Tensor, embeds: torch.Tensor, found: torch.Tensor) -> Any:
        return owner.get_placeholder_mask(stand_in, ids, embeds, found, **extra)

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    run = torch.compile(call, backend="neuron", dynamic=False) if compiled else call
    mask = run(input_ids, inputs_embeds, rows)
    return sum(torch._dynamo.utils.counters["graph_break"].values()), mask
