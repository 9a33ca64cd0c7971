"""Rebuild the ranking from the Hugging Face Hub: the most-downloaded text-generation models, by ``model_type``.

:func:`refresh_ranking` asks the Hub for the most-downloaded text-generation models, maps each to its ``model_type``
(from the config the Hub indexes, else from the model's tags) and ranks the types by the downloads they gather.
Without a reachable Hub it raises :class:`HubUnreachableError`, and the committed ``compat/ranking.csv`` stays as it is.
"""

from __future__ import annotations

import collections
import datetime
from collections.abc import Callable, Iterable
from typing import Any

from hf_neuron.compat.ranking import RankEntry

__all__ = ["HubUnreachableError", "ListModels", "refresh_ranking"]

#: ``list_models``-like callable: keyword arguments as ``huggingface_hub.list_models``, yields ``ModelInfo``-likes.
ListModels = Callable[..., Iterable[Any]]


class HubUnreachableError(RuntimeError):
    """The Hub could not be asked (offline mode, no network, or an HTTP error)."""


def _model_type(info: Any, known: Iterable[str]) -> str | None:
    """The ``model_type`` of a Hub model: from its indexed config, else the first tag naming a known type."""
    config = getattr(info, "config", None) or {}
    if isinstance(config, dict) and isinstance(config.get("model_type"), str):
        return config["model_type"]
    known = set(known)
    return next((tag for tag in getattr(info, "tags", None) or () if tag in known), None)


def refresh_ranking(*, limit: int = 500, list_models: ListModels | None = None,
                    today: datetime.date | None = None) -> list[RankEntry]:
    """Rank the generative model types of the installed transformers by the downloads of their models among the
    ``limit`` most-downloaded text-generation models on the Hub. Raises :class:`HubUnreachableError` without a Hub."""
    from hf_neuron.tiny.transformers.model_types import generative_types

    if list_models is None:
        from huggingface_hub import list_models as hub_list_models

        list_models = hub_list_models
    known = generative_types()
    try:
        infos = list(list_models(pipeline_tag="text-generation", sort="downloads", limit=limit,
                                 expand=["config", "downloads", "tags"]))
    except Exception as error:
        raise HubUnreachableError(
            f"cannot list models on the Hugging Face Hub ({type(error).__name__}: {error})"
        ) from error
    downloads: collections.Counter[str] = collections.Counter()
    models: collections.Counter[str] = collections.Counter()
    for info in infos:
        model_type = _model_type(info, known)
        if model_type is not None and model_type in known:
            downloads[model_type] += int(getattr(info, "downloads", 0) or 0)
            models[model_type] += 1
    date = (today or datetime.date.today()).isoformat()
    ranked = sorted(downloads, key=lambda model_type: (-downloads[model_type], model_type))
    return [
        RankEntry(model_type, rank, f"hub {date}: {models[model_type]} of the top {limit} text-generation models, "
                                    f"{downloads[model_type]} downloads")
        for rank, model_type in enumerate(ranked, start=1)
    ]
