"""``trainium_ops.toml``: which ATen operators the real backend runs on the device — its one reader (no torch needed).

The file lists the operator overloads TorchNeuron implements natively for its ``neuron`` (PrivateUse1) device, read
from its own source (see the file's ``[provenance]``); every other operator a model dispatches on the device runs on
the CPU through TorchNeuron's catch-all fallback, and ``get_fallback_ops()`` names it, unless it is one of the view
operators that fallback does not report (``unlogged``). When a Trainium run has measured which operators fell back
(``scripts/fallback_ops_from_run.py --write``), the file's ``kind`` is ``measured`` and its ``[measured]`` table
replaces the prediction; the native list still says which operators the device takes the real backend's routes for.

The reference device predicts fallbacks from it (``torch.neuron.get_fallback_ops()``, the
``HF_NEURON_EMULATOR_WARN_FALLBACK`` warning) and the run's environment block carries its provenance
(:func:`provenance`). :func:`load` checks the rules the file states; :func:`render` writes it in the same form, so
``render(load())`` is the file itself.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from hf_neuron.vocabulary import trainium_sources
from hf_neuron.vocabulary.datafiles import DataFileError, check_sorted, toml_document
from hf_neuron.vocabulary.records import FallbackList
from hf_neuron.vocabulary.trainium_sources import Citation

__all__ = [
    "KINDS", "OPERATOR_LISTS", "TRAINIUM_OPS_FILE", "TrainiumOps", "load", "provenance", "render",
]

TRAINIUM_OPS_FILE = Path(__file__).with_name("trainium_ops.toml")

Kind = Literal["source", "measured"]
#: ``source``: the fallbacks are predicted from the native list; ``measured``: a Trainium run's ``get_fallback_ops()``.
KINDS: tuple[Kind, ...] = ("source", "measured")
#: The lists of ``[operators]``, in file order, each with what it holds (the file's comment).
OPERATOR_LISTS: dict[str, str] = {
    "native": "overloads registered for PrivateUse1 by code reachable from register_python_operations(), or by a C++ "
              "TORCH_LIBRARY_IMPL(aten, PrivateUse1) m.impl",
    "cpu_explicit": "overloads python_ops/cpu_fallback_registrations.py sends to the CPU (linear algebra); nothing "
                    "calls it at that commit, so they reach the catch-all fallback: on the CPU either way",
    "unlogged": "the catch-all fallback's view-operator whitelist (exact names): it runs them on the CPU without "
                "reporting them in get_fallback_ops()",
    "not_in_torch": "names the source registers or whitelists that the installed torch does not define (e.g. a "
                    "default overload such as aten::div): registering them has no effect",
}
_PROVENANCE_KEYS = ("kind", "repository", "description", "commit", "date", "torch_neuronx", "caveat", "derived",
                    "checked_against_torch", "unconfirmed")
#: The ``[provenance]`` lists that cite ``trainium_sources.toml``: every entry's sources, the releases they hold for.
_CITATION_KEYS = ("sources", "releases")
_MEASURED_KEYS = ("run_id", "started_at", "finished_at", "torch_neuronx", "cases")
#: An operator as the dispatcher names it (the form ``get_fallback_ops()`` prints): ``aten::name[.overload]``.
_NAME = re.compile(r"^aten::[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?$")

_HEADER = """\
# The ATen operators TorchNeuron runs on its `neuron` device, read from its own source. Every other operator a
# model dispatches on the device runs on the CPU through TorchNeuron's catch-all fallback (TORCH_LIBRARY_IMPL(_,
# PrivateUse1) -> cpu_fallback), and get_fallback_ops() names it unless it is `unlogged`. The reference device
# predicts fallbacks from this file; docs/trainium-prediction.md says how it was derived and how a Trainium run
# replaces the prediction (scripts/fallback_ops_from_run.py --write adds a [measured] table, kind = "measured").
#
# Reviewed data; one reader: hf_neuron/device/trainium_ops.py, which checks these rules: every list is sorted and has
# no duplicates; every name is `aten::name` or `aten::name.overload` as the dispatcher spells it; no name is in two
# lists; [provenance] cites the sources of every entry and the releases they hold for (ids of trainium_sources.toml,
# refused when missing or unknown), and says what no released source confirms. tests/test_trainium_ops.py checks that
# every name of native, cpu_explicit and unlogged exists in the installed torch and that no name of not_in_torch does.
"""


@dataclasses.dataclass(frozen=True)
class TrainiumOps:
    """The file's content: its provenance, the operator lists and, once a Trainium run measured them, its fallbacks."""

    provenance: Mapping[str, str]
    #: where every entry of the lists comes from, and the releases they hold for
    citation: Citation
    native: frozenset[str]
    cpu_explicit: frozenset[str]
    unlogged: frozenset[str]
    not_in_torch: frozenset[str]
    measured: Mapping[str, str | int] | None = None
    measured_fallback: Mapping[str, int] | None = None

    @property
    def kind(self) -> Kind:
        """``source`` or ``measured``."""
        return "measured" if self.measured_fallback is not None else "source"

    def falls_back(self, name: str) -> bool:
        """Whether operator ``name`` (``aten::name[.overload]``), dispatched on the device, is reported as a fallback
        on Trainium: measured, or predicted (neither native nor unlogged)."""
        if self.measured_fallback is not None:
            return name in self.measured_fallback
        return name not in self.native and name not in self.unlogged


def _names(path: Path, key: str, value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise DataFileError(path, f"[operators] {key} must be a list of operator names")
    bad = [name for name in value if not _NAME.match(name)]
    if bad:
        raise DataFileError(path, f"[operators] {key}: {bad[0]!r} is not an operator name (aten::name or "
                                         "aten::name.overload)")
    check_sorted(path, value, f"[operators] {key}")
    if len(set(value)) != len(value):
        duplicate = next(name for name in value if value.count(name) > 1)
        raise DataFileError(path, f"[operators] {key} lists {duplicate!r} twice")
    return frozenset(value)


def _table(path: Path, document: Mapping[str, Any], name: str, keys: Iterable[str], required: bool) -> dict[str, Any]:
    table = document.get(name)
    if table is None and not required:
        return {}
    if not isinstance(table, dict):
        raise DataFileError(path, f"needs a [{name}] table")
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise DataFileError(path, f"[{name}] has unknown keys {unknown}; allowed: {list(keys)}")
    return table


def parse(path: Path, text: str) -> TrainiumOps:
    """The content of ``text`` (the file at ``path``), after checking every rule it states."""
    document = toml_document(path, text, ("provenance", "operators", "measured"))
    provenance = _table(path, document, "provenance", (*_PROVENANCE_KEYS, *_CITATION_KEYS), True)
    missing = [key for key in _PROVENANCE_KEYS if not isinstance(provenance.get(key), str) or not provenance[key]]
    if missing:
        raise DataFileError(path, f"[provenance] needs a non-empty string for {missing}")
    cited = {key: provenance.pop(key, None) for key in _CITATION_KEYS}
    if not all(isinstance(value, list) and value and all(isinstance(v, str) for v in value)
               for value in cited.values()):
        raise DataFileError(path, f"[provenance] needs {list(_CITATION_KEYS)}: the ids of the sources of its entries "
                                  "and of the releases they hold for (hf_neuron/device/trainium_sources.toml)")
    citation = Citation(tuple(cited["sources"]), tuple(cited["releases"]), provenance["unconfirmed"])
    if problem := trainium_sources.load().problem(citation):
        raise DataFileError(path, f"[provenance] {problem}")
    if provenance["kind"] not in KINDS:
        raise DataFileError(path, f"[provenance] kind {provenance['kind']!r} is not one of {list(KINDS)}")
    operators = _table(path, document, "operators", OPERATOR_LISTS, True)
    lists = {key: _names(path, key, operators.get(key, [])) for key in OPERATOR_LISTS}
    for i, first in enumerate(OPERATOR_LISTS):
        for second in list(OPERATOR_LISTS)[i + 1:]:
            both = sorted(lists[first] & lists[second])
            if both:
                raise DataFileError(path, f"{both[0]!r} is in both {first} and {second}")
    if not lists["native"]:
        raise DataFileError(path, "[operators] native is empty")
    measured = _table(path, document, "measured", (*_MEASURED_KEYS, "fallback"), False)
    fallback = None
    if measured:
        fallback = measured.pop("fallback", None)
        if not isinstance(fallback, dict) or not all(
                _NAME.match(name) and isinstance(calls, int) and not isinstance(calls, bool) and calls >= 0
                for name, calls in fallback.items()):
            raise DataFileError(
                path, "[measured.fallback] must map operator names to their calls (0: not counted by the backend)")
        check_sorted(path, fallback, "[measured.fallback]")
        missing = [key for key in _MEASURED_KEYS if key not in measured]
        if missing:
            raise DataFileError(path, f"[measured] needs {missing}")
    if (provenance["kind"] == "measured") != (fallback is not None):
        raise DataFileError(path, "[provenance] kind is \"measured\" exactly when the file has a [measured] "
                                         "table with its fallback operators")
    return TrainiumOps(provenance=provenance, citation=citation, **lists, measured=measured or None,
                       measured_fallback=fallback)


@functools.lru_cache(maxsize=4)
def _load(path: Path, mtime_ns: int) -> TrainiumOps:
    return parse(path, path.read_text(encoding="utf-8"))


def load(path: Path = TRAINIUM_OPS_FILE) -> TrainiumOps:
    """The checked content of ``path`` (read once per modification)."""
    return _load(path, path.stat().st_mtime_ns)


def provenance(ops: TrainiumOps | None = None) -> FallbackList:
    """Where the list of ``ops`` (default: the package's file) comes from, as a run's records carry it: the source
    repository and commit, the kind (``source`` or ``measured``) and, when measured, the run."""
    ops = ops or load()
    block: FallbackList = {
        "source": ops.provenance["repository"], "commit": ops.provenance["commit"], "date": ops.provenance["date"],
        "torch_neuronx": ops.provenance["torch_neuronx"], "kind": ops.kind, "native": len(ops.native),
    }
    if ops.measured is not None:
        block["measured_run"] = str(ops.measured["run_id"])
        block["measured_torch_neuronx"] = str(ops.measured["torch_neuronx"])
    return block


def _string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(ops: TrainiumOps) -> str:
    """The file's text for ``ops``: header, ``[provenance]``, ``[operators]`` and, when measured, ``[measured]``."""
    lines = [_HEADER, "[provenance]"]
    lines += [f"{key} = {_string(ops.provenance[key])}" for key in _PROVENANCE_KEYS]
    lines += [f"{key} = [{', '.join(map(_string, getattr(ops.citation, key)))}]" for key in _CITATION_KEYS]
    lines += ["", "[operators]"]
    for key, meaning in OPERATOR_LISTS.items():
        names: frozenset[str] = getattr(ops, key)
        lines.append(f"# {key}: {meaning}")
        lines.append(f"{key} = [" + "".join(f"\n    {_string(name)}," for name in sorted(names)) + "\n]")
    if ops.measured is not None and ops.measured_fallback is not None:
        lines += ["", "[measured]"]
        for key in _MEASURED_KEYS:
            value = ops.measured[key]
            lines.append(f"{key} = {value}" if isinstance(value, int) else f"{key} = {_string(str(value))}")
        lines += ["", "[measured.fallback]  # operator = calls in that run (0: the backend did not count them)"]
        lines += [f"{_string(name)} = {calls}" for name, calls in sorted(ops.measured_fallback.items())]
    return "\n".join(lines) + "\n"
