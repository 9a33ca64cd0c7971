"""The patch record, and the registry that applies, reverts and reports patches.

A :class:`Patch` is data: which attribute of which module it replaces, for which versions of its library, why, and
a factory that builds the replacement from the original. A :class:`Registry` applies patches in their declared
order when their target module has executed, at most once each (idempotent), skips them with a reason when the
library version is outside the declared range or the target is missing, and reverts them (restoring the original
and every copy of the replacement made since). Nothing here imports a patched library.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import logging
import sys
import threading
import types
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

from hf_neuron.patches import neuron_device
from hf_neuron.patches.bindings import modules_in, rebind

__all__ = ["STATUS_TEXT", "Patch", "PatchState", "Registry", "Status", "in_range", "installed_version"]

logger = logging.getLogger("hf_neuron.patches")

Status = Literal[
    "applied", "pending", "no-device", "not-installed", "version-out-of-range", "target-missing", "failed", "reverted"
]

#: How each status reads in ``hf-neuron doctor`` and the logs.
STATUS_TEXT: dict[Status, str] = {
    "applied": "applied",
    "pending": "pending: not imported yet",
    "no-device": "pending: no neuron device registered",
    "not-installed": "skipped: library not installed",
    "version-out-of-range": "skipped: version out of range",
    "target-missing": "skipped: target missing",
    "failed": "failed",
    "reverted": "reverted",
}

_WAITING: frozenset[Status] = frozenset({"pending", "no-device"})


@dataclasses.dataclass(frozen=True)
class Patch:
    """One replacement of one attribute of one library module.

    ``id`` is named for what the patch makes true and starts with the library name
    (``accelerate.detect-neuron-by-device``). ``module`` is the module that defines the target and ``attribute``
    its path inside it (``is_neuron_available`` or ``Accelerator.__init__``). ``versions`` are the PEP 440
    specifiers of the library versions whose code the patch was written against. ``reason`` names the upstream
    code it works around (file and function); ``upstream_fix`` the upstream change that would make it unnecessary.
    ``replace`` builds the replacement from the original object. A patch with ``needs_device`` applies only when a
    ``neuron`` device is registered. ``reference_device_gap`` marks a patch that works around a gap of the reference
    device itself (it runs the CPU's kernels), which Trainium may not have: the report flags it. A patch that
    ``adds`` targets an attribute absent from the versions it is for (a method a library's code calls that another
    library removed): ``replace`` receives ``None`` there (or the object a version that still has it provides), and
    reverting removes what it added.
    """

    id: str
    library: str
    module: str
    attribute: str
    versions: str
    reason: str
    replace: Callable[[Any], Any]
    upstream_fix: str = ""
    needs_device: bool = True
    reference_device_gap: bool = False
    adds: bool = False

    def __post_init__(self) -> None:
        if not self.id.startswith(f"{self.library}."):
            raise ValueError(f"patch id {self.id!r} must start with its library name {self.library!r}")
        if self.module.partition(".")[0] != self.library:
            raise ValueError(f"patch {self.id}: module {self.module!r} is not part of {self.library!r}")

    @property
    def target(self) -> str:
        """``module.attribute``, as the docs and doctor show it."""
        return f"{self.module}.{self.attribute}"


@dataclasses.dataclass(frozen=True)
class PatchState:
    """Where one patch stands: its status, the detail behind it, and the library version seen."""

    patch: Patch
    status: Status
    detail: str
    version: str | None

    @property
    def text(self) -> str:
        """The status as a sentence, e.g. ``skipped: version out of range``."""
        return STATUS_TEXT[self.status]


@dataclasses.dataclass
class _Entry:
    patch: Patch
    status: Status = "pending"
    detail: str = ""
    owner: Any = None
    original: Any = None
    replacement: Any = None
    owned: bool = True  # the original was in the owner's own namespace (not inherited)

    @property
    def name(self) -> str:
        return self.patch.attribute.rpartition(".")[2]

    def holds(self, module: types.ModuleType) -> bool:
        """True while ``module`` still exposes this entry's replacement (False after a reload re-created it)."""
        try:
            owner, name = _resolve(module, self.patch.attribute)
        except AttributeError:
            return False
        return owner is self.owner and getattr(owner, name) is self.replacement


def installed_version(library: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    try:
        return importlib.metadata.version(library)
    except importlib.metadata.PackageNotFoundError:
        return None


def in_range(version: str, specifiers: str) -> bool:
    """Whether ``version`` satisfies the PEP 440 ``specifiers``."""
    return _in_range(version, specifiers)


def _in_range(version: str, specifiers: str) -> bool:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(specifiers).contains(version, prereleases=True)


def _initialized(module: types.ModuleType) -> bool:
    return not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _add_swap(swaps: dict[int, tuple[Any, Any]], old: Any, new: Any) -> None:
    """Record ``old -> new``, following chains (two patches stacked on one target end on the last replacement)."""
    for key, (before, after) in swaps.items():
        if after is old:
            swaps[key] = (before, new)
    swaps[id(old)] = (old, new)


def _resolve(module: types.ModuleType, path: str, *, absent_ok: bool = False) -> tuple[Any, str]:
    """The object that holds the attribute at ``path`` and its name; AttributeError when a part is missing (the
    attribute itself may be, with ``absent_ok``)."""
    *owners, name = path.split(".")
    owner: Any = module
    for part in owners:
        owner = getattr(owner, part)
    if not absent_ok:
        getattr(owner, name)
    return owner, name


class Registry:
    """Applies, reverts and reports the patches of some libraries.

    ``sources`` maps each library to a loader of its patches, called the first time the library matters (so
    building a registry costs nothing). ``scope`` names the top-level packages searched for copies of a replaced
    object (default: the libraries). ``version_of`` and ``device_ready`` are injectable for tests.
    """

    def __init__(
        self,
        sources: Mapping[str, Callable[[], Sequence[Patch]]],
        *,
        scope: Collection[str] | None = None,
        version_of: Callable[[str], str | None] = installed_version,
        device_ready: Callable[[], bool] = neuron_device.neuron_registered,
    ) -> None:
        self._sources = dict(sources)
        self.libraries: tuple[str, ...] = tuple(self._sources)
        self.scope = frozenset(self.libraries if scope is None else scope)
        self._version_of = version_of
        self._device_ready = device_ready
        self._entries: dict[str, list[_Entry]] = {}
        self._versions: dict[str, str | None] = {}
        self._applied: list[_Entry] = []
        self._lock = threading.RLock()

    @classmethod
    def from_patches(cls, patches: Iterable[Patch], **options: Any) -> Registry:
        """A registry over a fixed list of patches, grouped by library in order of first appearance."""
        grouped: dict[str, list[Patch]] = {}
        for patch in patches:
            grouped.setdefault(patch.library, []).append(patch)
        return cls({library: functools.partial(tuple, group) for library, group in grouped.items()}, **options)

    # -- what is declared ------------------------------------------------------------------------------------------

    def _load(self, library: str) -> list[_Entry]:
        with self._lock:
            entries = self._entries.get(library)
            if entries is None:
                patches = list(self._sources[library]())
                ids = [patch.id for patch in patches]
                if len(set(ids)) != len(ids) or any(patch.library != library for patch in patches):
                    raise ValueError(f"the patches of {library} must have unique ids and belong to {library}")
                entries = self._entries[library] = [_Entry(patch) for patch in patches]
            return entries

    def patches(self) -> list[Patch]:
        """Every declared patch, in application order."""
        return [entry.patch for library in self.libraries for entry in self._load(library)]

    def watches(self, module_name: str) -> bool:
        """True when a patch targets ``module_name`` (loads that library's patches on first call)."""
        library = module_name.partition(".")[0]
        return library in self._sources and any(entry.patch.module == module_name for entry in self._load(library))

    # -- applying --------------------------------------------------------------------------------------------------

    def _version(self, library: str) -> str | None:
        if library not in self._versions:
            self._versions[library] = self._version_of(library)
        return self._versions[library]

    def _apply(self, entry: _Entry, module: types.ModuleType, swaps: dict[int, tuple[Any, Any]]) -> None:
        patch = entry.patch
        version = self._version(patch.library)
        if version is None or not _in_range(version, patch.versions):
            found = f"{patch.library} {version} is not in" if version else f"no {patch.library} installed; needs"
            entry.status, entry.detail = "version-out-of-range", f"{found} {patch.versions}"
            logger.info("patch %s skipped: %s", patch.id, entry.detail)
            return
        if patch.needs_device and not self._device_ready():
            entry.status, entry.detail = "no-device", "no neuron device is registered in torch"
            return
        try:
            owner, name = _resolve(module, patch.attribute, absent_ok=patch.adds)
        except AttributeError:
            entry.status, entry.detail = "target-missing", f"{patch.target} does not exist in {patch.library} {version}"
            logger.warning("patch %s skipped: %s", patch.id, entry.detail)
            return
        owned = name in vars(owner)
        original = vars(owner)[name] if owned else getattr(owner, name, None)
        try:
            replacement = patch.replace(original)
        except Exception as error:  # noqa: BLE001 - a patch must never break the import it runs in
            entry.status, entry.detail = "failed", f"{type(error).__name__}: {error}"
            logger.warning("patch %s failed: %s", patch.id, entry.detail)
            return
        setattr(owner, name, replacement)
        entry.owner, entry.original, entry.replacement, entry.owned = owner, original, replacement, owned
        entry.status, entry.detail = "applied", f"{patch.library} {version}"
        self._applied.append(entry)
        if isinstance(owner, types.ModuleType) and original is not None:  # copies exist of module attributes only
            _add_swap(swaps, original, replacement)

    def module_executed(self, module: types.ModuleType) -> None:
        """Apply the patches that target ``module``, which has just executed: only the module itself (its aliases
        and function defaults) can hold a copy of an original yet."""
        library = module.__name__.partition(".")[0]
        if library not in self._sources:
            return
        with self._lock:
            swaps: dict[int, tuple[Any, Any]] = {}
            for entry in self._load(library):
                if entry.patch.module != module.__name__:
                    continue
                if entry.status == "applied" and not entry.holds(module):
                    entry.status = "pending"  # the module was executed again (importlib.reload)
                    self._applied.remove(entry)
                if entry.status in _WAITING:
                    self._apply(entry, module, swaps)
            rebind(swaps, [module])

    def apply_ready(self) -> None:
        """Apply every waiting patch whose target module is already imported, and rebind the copies of originals."""
        with self._lock:
            swaps: dict[int, tuple[Any, Any]] = {}
            for library in self.libraries:
                if library not in sys.modules:
                    continue
                for entry in self._load(library):
                    module = sys.modules.get(entry.patch.module)
                    if entry.status in _WAITING and module is not None and _initialized(module):
                        self._apply(entry, module, swaps)
            rebind(swaps, modules_in(self.scope))

    # -- reverting -------------------------------------------------------------------------------------------------

    def revert(self, ids: Collection[str] | None = None) -> None:
        """Restore the originals of the applied patches (all, or those in ``ids``), newest first, everywhere."""
        with self._lock:
            swaps: dict[int, tuple[Any, Any]] = {}
            for entry in reversed(list(self._applied)):
                if ids is not None and entry.patch.id not in ids:
                    continue
                if entry.owned:
                    setattr(entry.owner, entry.name, entry.original)
                else:
                    delattr(entry.owner, entry.name)
                if entry.original is not None:  # what a patch added has no original to restore its copies to
                    _add_swap(swaps, entry.replacement, entry.original)
                entry.status, entry.detail = "reverted", "reverted by request"
                self._applied.remove(entry)
            rebind(swaps, modules_in(self.scope))

    # -- reporting -------------------------------------------------------------------------------------------------

    def objects(self, patch_id: str) -> tuple[Any, Any]:
        """``(original, replacement)`` of an applied patch; KeyError when it is not applied."""
        with self._lock:
            for entry in self._applied:
                if entry.patch.id == patch_id:
                    return entry.original, entry.replacement
        raise KeyError(f"patch {patch_id} is not applied")

    def state(self, patch_id: str) -> PatchState:
        """Where one patch stands; KeyError for an unknown id."""
        for state in self.states():
            if state.patch.id == patch_id:
                return state
        raise KeyError(f"no patch {patch_id}")

    def states(self) -> list[PatchState]:
        """Where every declared patch stands, in application order."""
        with self._lock:
            states = []
            for library in self.libraries:
                version = self._version(library)
                for entry in self._load(library):
                    status, detail = entry.status, entry.detail
                    if status == "pending" and version is None and library not in sys.modules:
                        status, detail = "not-installed", f"{library} is not installed"
                    elif status == "pending":
                        detail = f"{entry.patch.module} is not imported yet"
                    states.append(PatchState(entry.patch, status, detail, version))
            return states
