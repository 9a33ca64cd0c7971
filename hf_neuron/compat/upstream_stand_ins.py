"""Stand-ins for the Hub models and datasets the libraries' own tests load (``compat/upstream_stand_ins.toml``).

A library's suite loads some tiny models and datasets by Hub id (``hf-internal-testing/...``,
``peft-internal-testing/...``, ``trl-internal-testing/...``); offline, those tests fail on both devices. Each entry
names such an id and what ``hf-neuron upstream`` builds locally to place under it (a tiny model of the same
architecture from :mod:`hf_neuron.tiny`, a diffusers model built from the configuration its tests expect, or a
dataset from a recipe), and the suites whose runs place it. ::

    [[model]]
    id = "trl-internal-testing/tiny-random-LlamaForCausalLM"
    model_type = "llama"
    suites = ["peft", "trl"]
    config = { tie_word_embeddings = false }      # optional: merged into the tiny config

    [[diffusers_model]]
    id = "hf-internal-testing/unet2d-sharded-dummy-subfolder"
    class = "UNet2DConditionModel"                # a model class diffusers exports
    suites = ["diffusers"]
    subfolder = "unet"                            # optional: saved in this folder of the repository
    variant = "fp16"                              # optional: its weight files carry this variant in their names
    max_shard_size = "20KB"                       # optional: saved in shards of at most this size
    [diffusers_model.config]                      # the constructor's arguments (its defaults for the others)
    block_out_channels = [4, 8]

    [[dataset]]
    id = "trl-internal-testing/zen"
    recipe = "trl-formats"
    suites = ["trl"]

The reader checks the file's own rules (a malformed file raises :class:`~hf_neuron.vocabulary.datafiles.DataFileError`
naming the file, the entry and the key): every key known, ids of the form ``owner/name``, the suites known, each
array sorted by id (:func:`~hf_neuron.vocabulary.datafiles.check_sorted`, as the file's header says), and no id listed
twice in the whole file (an id stands for one thing). Whether a model type or a class builds or a recipe exists is
checked where they are built
(:mod:`hf_neuron.upstream.stand_ins`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from hf_neuron.compat.files import COMPAT_DIR, read_toml
from hf_neuron.compat.upstream_not_applicable import SUITES
from hf_neuron.vocabulary.datafiles import DataFileError, check_sorted

__all__ = ["STAND_INS_PATH", "StandIn", "StandInKind", "load_stand_ins"]

STAND_INS_PATH = COMPAT_DIR / "upstream_stand_ins.toml"
StandInKind = Literal["model", "diffusers_model", "dataset"]
_KINDS: tuple[StandInKind, ...] = get_args(StandInKind)
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_KEYS: dict[StandInKind, tuple[tuple[str, ...], tuple[str, ...]]] = {  # required, optional
    "model": (("id", "model_type", "suites"), ("config",)),
    "diffusers_model": (("id", "class", "suites", "config"), ("subfolder", "variant", "max_shard_size")),
    "dataset": (("id", "recipe", "suites"), ()),
}
#: The keys whose values are tables; every other one is a non-empty string (``suites`` a list of them).
_TABLES = ("config",)


@dataclasses.dataclass(frozen=True)
class StandIn:
    """One Hub id and what stands in for it, placed by the runs of ``suites``: a tiny ``model_type`` (with ``config``
    overrides), a diffusers ``model_class`` built from ``config`` (saved in ``subfolder``, under ``variant``, in
    shards of ``max_shard_size``), or a dataset ``recipe``."""

    kind: StandInKind
    id: str
    suites: tuple[str, ...]
    model_type: str | None = None
    recipe: str | None = None
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    model_class: str | None = None
    subfolder: str | None = None
    variant: str | None = None
    max_shard_size: str | None = None


def _entry(path: Path, kind: StandInKind, index: int, raw: Any) -> StandIn:
    where = f"[[{kind}]] #{index + 1}"
    if not isinstance(raw, dict):
        raise DataFileError(path, "is not a table", table=where)
    required, optional = _KEYS[kind]
    if unknown := sorted(set(raw) - set(required) - set(optional)):
        raise DataFileError(path, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(required + optional)}",
                            table=where)
    if missing := [key for key in required if key not in raw]:
        raise DataFileError(path, f"missing {', '.join(missing)} (every entry needs {', '.join(required)})",
                            table=where)
    for key in (*required, *optional):
        if key in raw and key not in ("suites", *_TABLES) and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise DataFileError(path, "must be a non-empty string", table=where, key=key)
    if not _ID.match(raw["id"]):
        raise DataFileError(path, f"{raw['id']!r} is not a Hub id 'owner/name'", table=where, key="id")
    suites = raw["suites"]
    if (not isinstance(suites, list) or not suites or len(set(suites)) != len(suites)
            or not all(suite in SUITES for suite in suites)):
        raise DataFileError(path, f"must be a non-empty list of distinct names from {', '.join(SUITES)}",
                            table=where, key="suites")
    config = raw.get("config", {})
    if not isinstance(config, dict):
        raise DataFileError(path, "must be a table", table=where, key="config")
    return StandIn(kind, raw["id"], tuple(suites), raw.get("model_type"), raw.get("recipe"), config,
                   raw.get("class"), raw.get("subfolder"), raw.get("variant"), raw.get("max_shard_size"))


def load_stand_ins(path: Path = STAND_INS_PATH) -> tuple[StandIn, ...]:
    """Read and check ``path``; a missing file holds no stand-in."""
    document = read_toml(path, required=False)
    if extra := sorted(set(document) - set(_KINDS)):
        raise DataFileError(path, f"unknown top-level key(s) {', '.join(extra)}; entries are "
                                  f"{' or '.join(f'[[{kind}]]' for kind in _KINDS)} tables")
    entries: list[StandIn] = []
    for kind in _KINDS:
        raw_entries = document.get(kind, [])
        if not isinstance(raw_entries, list):
            raise DataFileError(path, f"{kind} must be an array of tables: write each entry as [[{kind}]]")
        table = [_entry(path, kind, index, raw) for index, raw in enumerate(raw_entries)]
        for entry in table:
            if (first := next((seen for seen in entries if seen.id == entry.id), None)) is not None:
                raise DataFileError(path, f"[[{kind}]] id {entry.id!r} is listed twice (also as a [[{first.kind}]]): "
                                          "an id stands for one thing")
            entries.append(entry)
        check_sorted(path, [entry.id for entry in table], f"the [[{kind}]] tables (by id)")
    return tuple(entries)
