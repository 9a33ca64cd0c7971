"""Generate the catalog from the installed libraries: every generative architecture, checked on the CPU.

transformers' auto mappings give the text and image-text groups
(:mod:`hf_neuron.tiny.transformers.model_types`), diffusers'
exported denoisers the diffusion group (:func:`~hf_neuron.tiny.diffusion.backbones.backbone_names`). Each is
checked with a tiny model on the CPU (:mod:`~hf_neuron.matrix.catalog.cpu_check`): ``builds`` and ``runs``; an
image-text entry also records what its tiny model is (``tiny``), for the report.
:func:`hf_neuron.compat.catalog.write_catalog` writes the result.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

from hf_neuron.compat.catalog import (
    GROUPS,
    IMAGE_TEXT_GROUP,
    TEXT_GROUPS,
    Catalog,
    CatalogEntry,
    catalog_order,
)
from hf_neuron.compat.tiny_image_text import load_image_text
from hf_neuron.compat.tiny_overrides import load_overrides
from hf_neuron.matrix.catalog.cpu_check import (
    CpuCheck,
    Stage,
    check_diffusion_backbone,
    check_image_text_model,
    check_text_model,
)

__all__ = ["RUN_GROUPS", "describe_groups", "generate_catalog", "unexpected_runs"]

#: Groups whose entries say whether the tiny model runs (every group).
RUN_GROUPS = (*TEXT_GROUPS, IMAGE_TEXT_GROUP, "diffusion")


def _verdict(check: CpuCheck, runs_checked: bool) -> tuple[bool, bool | None, str | None]:
    """``(builds, runs, reason)`` of an entry from its CPU check."""
    builds = check.stage not in ("config", "build")
    if not runs_checked:
        return builds, None, None if builds else f"{check.stage}: {check.error}"
    return builds, check.ok, None if check.ok else f"{check.stage}: {check.error}"


def _features(model_type: str) -> tuple[str, ...]:
    """What decides which scenario variants apply: the config's ``output_router_logits`` (a mixture of experts with
    an auxiliary loss), and the attention implementations the model class supports."""
    import dataclasses

    from hf_neuron.tiny.transformers.config import config_class
    from hf_neuron.tiny.transformers.model_types import model_class

    features = []
    if "output_router_logits" in {field.name for field in dataclasses.fields(config_class(model_type))}:
        features.append("router-logits")
    cls = model_class(model_type)
    features += [name for name, flag in (("sdpa", "_supports_sdpa"), ("flex-attention", "_supports_flex_attn"))
                 if getattr(cls, flag, False)]
    return tuple(features)


def _transformers_entries(types: Iterable[str] | None, run_models: bool) -> list[CatalogEntry]:
    import transformers

    from hf_neuron.tiny.transformers.config import config_class
    from hf_neuron.tiny.transformers.model_types import generative_types

    known = generative_types()
    wanted = sorted(known) if types is None else sorted(types)
    unknown = [model_type for model_type in wanted if model_type not in known]
    if unknown:
        raise KeyError(f"not generative model types of transformers {transformers.__version__}: {unknown}")
    overrides, image_text = load_overrides(), load_image_text()
    entries = []
    for model_type in wanted:
        group, class_name = known[model_type]
        builds, runs, reason, tiny = (None, None, None, None)
        if run_models:
            runs_checked = group in RUN_GROUPS
            until: Stage = "generate" if runs_checked else "build"
            result = (check_image_text_model(model_type, until=until) if group == IMAGE_TEXT_GROUP
                      else check_text_model(model_type, until=until))
            builds, runs, reason = _verdict(result, runs_checked)
            tiny = result.tiny
        gap = None
        for reviewed in (overrides.get(model_type), image_text.get(model_type)):
            if reviewed is not None and not reviewed.runs and reason is not None:
                reason, gap = reviewed.reason, reviewed.gap
        entries.append(CatalogEntry(model_type, group, class_name, config_class(model_type).__name__,
                                    builds, runs, reason, gap, _features(model_type), tiny))
    return entries


def _diffusion_entries(run_models: bool) -> list[CatalogEntry]:
    from hf_neuron.tiny.diffusion.backbones import backbone_names

    entries = []
    for name in backbone_names():
        builds, runs, reason = _verdict(check_diffusion_backbone(name), True) if run_models else (None, None, None)
        entries.append(CatalogEntry(name, "diffusion", name, name, builds, runs, reason))
    return entries


def generate_catalog(*, types: Iterable[str] | None = None, run_models: bool = True,
                     today: datetime.date | None = None) -> Catalog:
    """The catalog of the installed libraries (only the transformers ``types`` when given); ``run_models=False`` leaves
    ``builds`` and ``runs`` unknown.

    A reviewed ``runs = false`` in ``compat/tiny_overrides.toml`` or ``compat/tiny_image_text.toml`` supplies the
    reason (and the harness's gap, if any) of a type that fails.
    """
    import diffusers
    import transformers

    entries = _transformers_entries(types, run_models)
    if types is None:
        entries += _diffusion_entries(run_models)
    return Catalog(
        transformers=transformers.__version__,
        diffusers=diffusers.__version__,
        generated=(today or datetime.date.today()).isoformat(),
        entries=tuple(sorted(entries, key=catalog_order)),
    )


def unexpected_runs(catalog: Catalog) -> list[str]:
    """Types reviewed as ``runs = false`` that ran after all: their override should be removed."""
    reviewed = {**{t: o.runs for t, o in load_overrides().items()}, **{t: m.runs for t, m in load_image_text().items()
                                                                        if not m.runs}}
    return [entry.model_type for entry in catalog.entries if entry.runs and reviewed.get(entry.model_type) is False]


def describe_groups(catalog: Catalog) -> str:
    """How many types each group has, and how many of them build and run."""
    parts = []
    for group in GROUPS:
        entries = catalog.group(group)
        part = f"{group}: {len(entries)} types, {sum(1 for entry in entries if entry.builds)} build"
        if group in RUN_GROUPS:
            part += f", {sum(1 for entry in entries if entry.runs)} run"
        parts.append(part)
    return "; ".join(parts)
