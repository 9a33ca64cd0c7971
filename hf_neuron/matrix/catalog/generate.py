"""Generate the catalog from the installed libraries: every architecture of every group, checked on the CPU.

The groups are the registry's (:data:`hf_neuron.vocabulary.groups.REGISTRY`), in its order: each group's package
(:func:`hf_neuron.tiny.groups.group_models`) says which model types it holds (a type two groups hold belongs to the
one declared first), builds each tiny model and runs it on the CPU as the scenarios will (``builds`` and ``runs``;
what the tiny model is, ``tiny``, where the package records it), and says which reviewed types cannot run, with the
harness's gap; a failing type nothing reviewed takes the harness's gap of its stage (:func:`unreviewed`), so no
failure is blamed on a model before someone has read it. :func:`hf_neuron.compat.catalog.write_catalog` writes
the result.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

from hf_neuron.compat.catalog import Catalog, CatalogEntry, catalog_order
from hf_neuron.tiny.groups import CatalogType, CpuCheck, Reviewed, group_models
from hf_neuron.vocabulary.gaps import Gap
from hf_neuron.vocabulary.groups import GROUPS, Group

__all__ = ["catalog_types", "describe_groups", "generate_catalog", "unexpected_runs", "unreviewed"]


def catalog_types() -> dict[str, tuple[Group, CatalogType]]:
    """Every model type of the installed libraries -> its group and classes, each type in the first group (in
    registry order) that holds it."""
    found: dict[str, tuple[Group, CatalogType]] = {}
    for group in GROUPS:
        for model_type, classes in group_models(group).catalog_types(group).items():
            found.setdefault(model_type, (group, classes))
    return found


_BUILD_STAGES = ("config", "build")


def _verdict(check: CpuCheck) -> tuple[bool, bool, str | None]:
    """``(builds, runs, reason)`` of an entry from its CPU check."""
    builds = check.stage not in _BUILD_STAGES
    return builds, check.ok, None if check.ok else f"{check.stage}: {check.error}"


def unreviewed(check: CpuCheck) -> Reviewed:
    """What an entry says of a CPU check that failed where no reviewed data speaks: the harness's failure until a
    reviewer says the model's own, with the gap of the stage that failed (no tiny model: ``tiny-build``; a tiny model
    the harness could not feed: ``inputs``)."""
    gap: Gap = "tiny-build" if check.stage in _BUILD_STAGES else "inputs"
    return Reviewed(f"CPU check failed (unreviewed, the harness's until reviewed): {check.stage}: {check.error}", gap)


def _entry(model_type: str, group: Group, classes: CatalogType, run_models: bool) -> CatalogEntry:
    models = group_models(group)
    builds: bool | None = None
    runs: bool | None = None
    reason = tiny = None
    gap = None
    if run_models:
        check = models.cpu_check(model_type)
        builds, runs, reason = _verdict(check)
        tiny = check.tiny
        if not check.ok:
            reviewed = models.reviewed(model_type) or unreviewed(check)
            reason, gap = reviewed.reason, reviewed.gap
    return CatalogEntry(model_type, group, classes.model_class, classes.config_class, builds, runs, reason, gap,
                        models.features(model_type), tiny, classes.load_class)


def generate_catalog(*, types: Iterable[str] | None = None, run_models: bool = True,
                     today: datetime.date | None = None) -> Catalog:
    """The catalog of the installed libraries (only ``types`` when given); ``run_models=False`` leaves ``builds``
    and ``runs`` unknown. A reviewed "cannot run" supplies the reason (and the harness's gap, if any) of a type that
    fails."""
    import diffusers
    import transformers

    known = catalog_types()
    wanted = sorted(known) if types is None else sorted(types)
    unknown = [model_type for model_type in wanted if model_type not in known]
    if unknown:
        raise KeyError(f"not model types of any group (transformers {transformers.__version__}, diffusers "
                       f"{diffusers.__version__}): {unknown}")
    entries = [_entry(model_type, *known[model_type], run_models) for model_type in wanted]
    return Catalog(
        transformers=transformers.__version__,
        diffusers=diffusers.__version__,
        generated=(today or datetime.date.today()).isoformat(),
        entries=tuple(sorted(entries, key=catalog_order)),
    )


def unexpected_runs(catalog: Catalog) -> list[str]:
    """Types the reviewed data says cannot run that ran after all: their entry should be removed."""
    return [entry.model_type for entry in catalog.entries
            if entry.runs and group_models(entry.group).reviewed(entry.model_type) is not None]


def describe_groups(catalog: Catalog) -> str:
    """How many types each group has, and how many of them build and run."""
    parts = []
    for group in GROUPS:
        entries = catalog.group(group)
        parts.append(f"{group}: {len(entries)} types, {sum(1 for entry in entries if entry.builds)} build, "
                     f"{sum(1 for entry in entries if entry.runs)} run")
    return "; ".join(parts)
