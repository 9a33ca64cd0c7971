"""Shared helpers of the report tests: a catalog in memory."""

from __future__ import annotations

from hf_neuron.compat.catalog import Catalog, CatalogEntry

__all__ = ["a_catalog"]


def a_catalog(**groups: str) -> Catalog:
    """A catalog of ``model_type=group`` entries whose tiny models build and run, with transformers-like classes."""
    entries = tuple(
        CatalogEntry(model_type, group, f"{model_type.capitalize()}ForCausalLM", f"{model_type.capitalize()}Config",
                     True, True)
        for model_type, group in groups.items()
    )
    return Catalog("5.24.0", "0.42.1", "2026-01-01", entries)
