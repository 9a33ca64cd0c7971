"""The patch registry: declared order, idempotence, version guard, missing targets, failures, device wait, revert."""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers_patches import fake_library

from hf_neuron.patches import default_registry, hook
from hf_neuron.patches.libraries import LIBRARIES
from hf_neuron.patches.registry import STATUS_TEXT, Patch, Registry
from hf_neuron.patches.table import markdown_table

_names = itertools.count()

CORE = """
def greet():
    return "hello"

def call(fn=greet, *, also=greet):
    return fn(), also()
"""


@pytest.fixture
def fakelib(tmp_path: Path) -> Iterator[str]:
    """A fresh fake library `hfnfakeN` 1.0 on sys.path, with `core.greet` copied into `user` by `from x import`."""
    name = f"hfnfake{next(_names)}"
    fake_library(tmp_path, name, "1.0", {"core.py": CORE, "user.py": f"from {name}.core import greet\n"})
    sys.path.insert(0, str(tmp_path))
    yield name
    sys.path.remove(str(tmp_path))
    for module in [m for m in sys.modules if m.partition(".")[0] == name]:
        del sys.modules[module]


def _patch(library: str, make: Callable[[Any], Any], *, attribute: str = "greet", versions: str = ">=1,<2",
           suffix: str = "shout", needs_device: bool = True) -> Patch:
    return Patch(id=f"{library}.{suffix}", library=library, module=f"{library}.core", attribute=attribute,
                 versions=versions, reason="fake.py `greet()` is too quiet", replace=make, needs_device=needs_device)


def _shout(original: Callable[[], str]) -> Callable[[], str]:
    def greet() -> str:
        return original().upper()

    return greet


def _registry(*patches: Patch, device: Callable[[], bool] = lambda: True) -> Registry:
    return Registry.from_patches(patches, version_of=lambda library: "1.0", device_ready=device)


def _state(registry: Registry, patch_id: str) -> tuple[str, str]:
    state = registry.state(patch_id)
    return state.status, state.detail


def test_patches_apply_in_declared_order(fakelib: str) -> None:
    calls: list[str] = []

    def tag(label: str) -> Callable[[Any], Any]:
        def make(original: Callable[[], str]) -> Callable[[], str]:
            calls.append(label)
            return lambda: f"{label}({original()})"

        return make

    registry = _registry(_patch(fakelib, tag("first"), suffix="a"), _patch(fakelib, tag("second"), suffix="b"))
    with hook(registry):
        core = importlib.import_module(f"{fakelib}.core")
        assert calls == ["first", "second"]
        assert core.greet() == "second(first(hello))"


def test_application_is_idempotent(fakelib: str) -> None:
    made: list[object] = []
    registry = _registry(_patch(fakelib, lambda original: made.append(original) or _shout(original)))
    with hook(registry):
        importlib.import_module(f"{fakelib}.core")
        registry.apply_ready()
        registry.apply_ready()
        importlib.import_module(f"{fakelib}.user")
        assert len(made) == 1
        assert _state(registry, f"{fakelib}.shout") == ("applied", f"{fakelib} 1.0")


def test_version_out_of_range_is_skipped_with_reason_and_import_works(fakelib: str) -> None:
    registry = _registry(_patch(fakelib, _shout, versions=">=2,<3"))
    with hook(registry):
        core = importlib.import_module(f"{fakelib}.core")
        assert core.greet() == "hello"
        assert _state(registry, f"{fakelib}.shout") == ("version-out-of-range", f"{fakelib} 1.0 is not in >=2,<3")
        assert STATUS_TEXT["version-out-of-range"] == "skipped: version out of range"


def test_missing_target_is_skipped(fakelib: str) -> None:
    registry = _registry(_patch(fakelib, _shout, attribute="Greeter.greet"))
    with hook(registry):
        importlib.import_module(f"{fakelib}.core")
        assert _state(registry, f"{fakelib}.shout") == (
            "target-missing", f"{fakelib}.core.Greeter.greet does not exist in {fakelib} 1.0")


def test_a_patch_that_adds_a_missing_attribute_adds_it_and_revert_removes_it(fakelib: str) -> None:
    core = importlib.import_module(f"{fakelib}.core")
    given: list[object] = []

    def wave(original: object) -> Callable[[], str]:
        given.append(original)
        return lambda: "wave"

    adds = dataclasses.replace(_patch(fakelib, wave, attribute="wave", suffix="wave"), adds=True)
    kept = dataclasses.replace(_patch(fakelib, lambda original: given.append(original) or original,
                                      suffix="kept"), adds=True)
    registry = _registry(adds, kept)
    installed = hook(registry)
    assert core.wave() == "wave" and given == [None, core.greet]  # an attribute that exists is handed over
    assert core.__doc__ is None  # nothing else that is None became the added function
    assert _state(registry, f"{fakelib}.wave")[0] == "applied"
    installed.revert()
    assert not hasattr(core, "wave") and core.greet() == "hello"
    absent = _registry(_patch(fakelib, wave, attribute="wave", suffix="wave"))  # without `adds`: missing
    with hook(absent):
        assert _state(absent, f"{fakelib}.wave")[0] == "target-missing"


def test_failing_replacement_is_reported_and_import_still_works(fakelib: str) -> None:
    def broken(original: object) -> object:
        raise LookupError("upstream code changed")

    registry = _registry(_patch(fakelib, broken))
    with hook(registry):
        assert importlib.import_module(f"{fakelib}.user").greet() == "hello"
        assert _state(registry, f"{fakelib}.shout") == ("failed", "LookupError: upstream code changed")


def test_patch_waits_for_a_device_and_applies_once_there_is_one(fakelib: str) -> None:
    device = [False]
    registry = _registry(_patch(fakelib, _shout), _patch(fakelib, _shout, suffix="always", needs_device=False),
                         device=lambda: device[0])
    with hook(registry):
        core = importlib.import_module(f"{fakelib}.core")
        assert _state(registry, f"{fakelib}.shout")[0] == "no-device"
        assert _state(registry, f"{fakelib}.always")[0] == "applied"
        device[0] = True
        importlib.import_module(f"{fakelib}.user")  # any import of the library retries waiting patches
        assert _state(registry, f"{fakelib}.shout")[0] == "applied"
        assert core.greet() == "HELLO"


def test_revert_restores_the_original_and_every_copy(fakelib: str) -> None:
    registry = _registry(_patch(fakelib, _shout))
    installed = hook(registry)
    core = importlib.import_module(f"{fakelib}.core")
    original = core.greet.__closure__[0].cell_contents
    user = importlib.import_module(f"{fakelib}.user")
    assert user.greet is core.greet and core.call() == ("HELLO", "HELLO")
    installed.revert()
    assert core.greet is original and user.greet is original
    assert core.call() == ("hello", "hello")  # the defaults captured by `def call(fn=greet)` too
    assert _state(registry, f"{fakelib}.shout")[0] == "reverted"
    assert importlib.import_module(f"{fakelib}.core") is core  # the hook is gone, imports still work


def test_patches_of_an_already_imported_library_apply_and_rebind_copies(fakelib: str) -> None:
    core = importlib.import_module(f"{fakelib}.core")
    user = importlib.import_module(f"{fakelib}.user")
    original = core.greet
    with hook(_registry(_patch(fakelib, _shout))):
        assert user.greet is core.greet is not original
        assert core.call() == ("HELLO", "HELLO")
    assert user.greet is core.greet is original


def test_stacked_patches_on_an_imported_library_rebind_copies_to_the_last_and_back(fakelib: str) -> None:
    core = importlib.import_module(f"{fakelib}.core")
    user = importlib.import_module(f"{fakelib}.user")
    original = core.greet
    exclaim = _patch(fakelib, lambda inner: (lambda: inner() + "!"), suffix="exclaim")
    with hook(_registry(_patch(fakelib, _shout), exclaim)):
        assert user.greet is core.greet and user.greet() == "HELLO!" and core.call() == ("HELLO!", "HELLO!")
    assert user.greet is core.greet is original and core.call() == ("hello", "hello")


def test_patch_records_are_validated() -> None:
    with pytest.raises(ValueError, match="must start with its library name"):
        Patch(id="other.x", library="lib", module="lib.core", attribute="f", versions=">=1", reason="r",
              replace=lambda o: o)
    with pytest.raises(ValueError, match="is not part of"):
        Patch(id="lib.x", library="lib", module="other.core", attribute="f", versions=">=1", reason="r",
              replace=lambda o: o)


def test_declared_patches_are_well_formed() -> None:
    from packaging.specifiers import SpecifierSet

    patches = default_registry().patches()
    assert [p.library for p in patches] == sorted((p.library for p in patches), key=LIBRARIES.index)
    assert len({p.id for p in patches}) == len(patches)
    for patch in patches:
        SpecifierSet(patch.versions)
        assert re.search(r"\w\.(py|rs)\b", patch.reason) and patch.upstream_fix, patch.id
        assert patch.module.partition(".")[0] == patch.library


def test_markdown_table_lists_every_patch() -> None:
    table = markdown_table()
    lines = table.splitlines()
    assert lines[0] == "| id | library | versions | reason |"
    assert len(lines) == 2 + len(default_registry().patches())
    assert "| `accelerate.detect-neuron-by-device` | accelerate | >=1.15,<1.16 |" in table
