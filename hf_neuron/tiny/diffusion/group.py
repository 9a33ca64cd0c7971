"""The ``diffusion`` group's package: what :class:`hf_neuron.tiny.groups.GroupModels` asks of a group, for diffusers'
denoiser backbones."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hf_neuron.tiny.groups import CatalogType, CpuCheck, Reviewed
from hf_neuron.tiny.transformers.config import DIMS, TinyDims

__all__ = ["catalog_types", "config_kwargs", "cpu_check", "features", "materialize", "reviewed"]


def catalog_types(group: str) -> dict[str, CatalogType]:
    """Every denoiser backbone class diffusers exports, by class name (loaded through that class itself)."""
    from hf_neuron.tiny.diffusion.backbones import backbone_names

    return {name: CatalogType(name, name, name) for name in backbone_names()}


def materialize(name: str, out_dir: Path, /, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                dims: TinyDims = DIMS) -> Path:
    """The tiny checkpoint of backbone ``name``."""
    from hf_neuron.tiny.diffusion.backbones import materialize as build

    return build(name, out_dir, seed=seed, base=base, dims=dims)


def config_kwargs(name: str, /, *, base: Mapping[str, Any] | None = None, dims: TinyDims = DIMS) -> dict[str, Any]:
    """The arguments :func:`materialize` builds backbone ``name`` from."""
    from hf_neuron.tiny.diffusion.backbones import tiny_config

    return tiny_config(name, base=base, dims=dims)


def cpu_check(name: str) -> CpuCheck:
    """Build the tiny backbone and call it once on its generic inputs."""
    from hf_neuron.tiny.diffusion.cpu_check import check_diffusion_backbone

    return check_diffusion_backbone(name)


def reviewed(name: str) -> Reviewed | None:
    """Nothing: the diffusion group's reviewed data says how to build and feed a backbone, not that one cannot run."""
    return None


def features(name: str) -> tuple[str, ...]:
    """None: no scenario variant of the transformers groups applies to a backbone."""
    return ()
