"""Helpers of the patch tests: commands with one reference device, fake libraries, re-installing the patches."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import _helpers

__all__ = ["SCRIPTS", "fake_distribution", "fake_library", "reinstalled", "run", "sliding_window_decoding", "without"]

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


def sliding_window_decoding(steps: int = 6) -> tuple[int, int, list[float]]:
    """Compiled decoding of one static sliding-window cache layer on neuron (window 4, a 3-token prompt, ``steps``
    decoding steps that fill and roll it): each step's mask sizes, padding mask, update and length in one function,
    compiled as transformers compiles decoding on neuron. The graphs Dynamo compiled, its graph breaks, and what each
    step computed (the same with the patches or without)."""
    import torch
    from transformers import masking_utils
    from transformers.cache_utils import StaticSlidingWindowLayer

    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    generator = torch.Generator().manual_seed(0)
    states = torch.randn(steps + 3, 1, 2, 1, 8, generator=generator).to("neuron")
    layer = StaticSlidingWindowLayer(max_cache_len=3 + steps, sliding_window=4)
    layer.update(states[:3].squeeze(3).permute(1, 2, 0, 3), states[:3].squeeze(3).permute(1, 2, 0, 3))  # the prompt
    mask = torch.ones(1, 3 + steps, dtype=torch.bool, device="neuron")
    mask[0, 0] = False  # a padded first token, which the window leaves behind

    @torch.compile(backend="neuron", dynamic=False)  # as transformers compiles decoding on neuron
    def step(key: torch.Tensor) -> torch.Tensor:
        length, offset = layer.get_mask_sizes(1)
        padding = masking_utils.prepare_padding_mask(mask, length, offset)
        keys, values = layer.update(key, key * 2)
        visible = padding[:, torch.arange(length, device=key.device) + offset]
        return (keys.sum(dim=(0, 1, 3)) * visible).sum() + values.sum() + layer.get_seq_length()

    results = [float(step(states[3 + index])) for index in range(steps)]
    return int(counters["stats"]["unique_graphs"]), sum(counters["graph_break"].values()), results
