"""The ``diffusion`` group of the catalog: every denoiser backbone of the installed diffusers, probed on the CPU.

:func:`diffusion_entries` gives one :class:`~hf_neuron.matrix.catalog.CatalogEntry` per backbone
(:func:`~hf_neuron.matrix.diffusion_models.backbone_names`), with ``builds`` (the tiny backbone instantiates) and
``runs`` (one denoiser call on its generic inputs gives a finite prediction), and the first error as the reason.
:func:`hf_neuron.matrix.catalog.generate_catalog` adds them after the transformers groups.
"""

from __future__ import annotations

from hf_neuron.matrix.catalog import CatalogEntry

__all__ = ["GROUP", "diffusion_entries", "probe"]

GROUP = "diffusion"


def _describe(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0].strip() if lines else ''}"[:300]


def probe(name: str) -> tuple[bool, bool, str | None]:
    """``(builds, runs, reason)`` of the tiny ``name`` backbone on the CPU; never raises."""
    import torch

    from hf_neuron.matrix.diffusion_models import build_backbone, denoise, forward_inputs

    try:
        model = build_backbone(name)
    except Exception as error:  # noqa: BLE001 - a probe reports, it does not raise
        return False, False, f"build: {_describe(error)}"
    try:
        prediction = denoise(model, forward_inputs(model))
        if not torch.isfinite(prediction).all():
            raise AssertionError("the prediction is not finite")
    except Exception as error:  # noqa: BLE001
        return True, False, f"forward: {_describe(error)}"
    return True, True, None


def diffusion_entries(*, probe_models: bool = True) -> list[CatalogEntry]:
    """One catalog entry per denoiser backbone; ``probe_models=False`` leaves builds/runs unknown."""
    from hf_neuron.matrix.diffusion_models import backbone_names

    entries = []
    for name in backbone_names():
        builds, runs, reason = probe(name) if probe_models else (None, None, None)
        entries.append(CatalogEntry(name, GROUP, name, name, builds, runs, reason))
    return entries
