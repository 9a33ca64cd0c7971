"""Post-import hooks: patches land before `from x import f` copies, loaders stay transparent, install is cheap."""

from __future__ import annotations

import builtins
import importlib
import importlib.machinery
import importlib.resources
import inspect
import itertools
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _helpers_patches import fake_library, run

from hf_neuron.patches import hook
from hf_neuron.patches.registry import Patch, Registry

_names = itertools.count()


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], str]]:
    """Writes a fresh fake library `hfnhookN` 1.0 with the given files; cleans sys.path and sys.modules after."""
    made: list[str] = []

    def make(files: dict[str, str]) -> str:
        name = f"hfnhook{next(_names)}"
        fake_library(tmp_path, name, "1.0", {path: source.replace("LIB", name) for path, source in files.items()})
        made.append(name)
        return name

    sys.path.insert(0, str(tmp_path))
    yield make
    sys.path.remove(str(tmp_path))
    for module in [m for m in sys.modules if m.partition(".")[0] in made]:
        del sys.modules[module]


def _loud(name: str) -> Registry:
    def make(original: Callable[[], str]) -> Callable[[], str]:
        return lambda: original().upper()

    patch = Patch(id=f"{name}.loud", library=name, module=f"{name}.core", attribute="word", versions="==1.0",
                  reason="fake.py `word()`", replace=make)
    return Registry.from_patches([patch], version_of=lambda library: "1.0", device_ready=lambda: True)


def test_patch_lands_before_other_modules_copy_the_name(library: Callable[[dict[str, str]], str]) -> None:
    name = library({
        "__init__.py": "from LIB.core import word\nfrom LIB.user import COPIED_AT_IMPORT\n",
        "core.py": "def word():\n    return 'quiet'\n",
        "user.py": "from LIB.core import word\nCOPIED_AT_IMPORT = word()\n",
    })
    with hook(_loud(name)):
        package = importlib.import_module(name)
        assert package.COPIED_AT_IMPORT == "QUIET"  # computed while the package was still importing
        assert package.word() == sys.modules[f"{name}.user"].word() == "QUIET"


def test_wrapped_loader_is_invisible_to_the_module(library: Callable[[dict[str, str]], str]) -> None:
    name = library({
        "core.py": "LOADER = __loader__\ndef word():\n    return 'quiet'\n",
        "data.txt": "payload",
    })
    with hook(_loud(name)):
        core = importlib.import_module(f"{name}.core")
        assert type(core.LOADER) is importlib.machinery.SourceFileLoader
        assert type(core.__loader__) is type(core.__spec__.loader) is importlib.machinery.SourceFileLoader
        assert "def word" in inspect.getsource(core)
        assert importlib.resources.files(name).joinpath("data.txt").read_text() == "payload"


def test_reloaded_module_is_patched_again(library: Callable[[dict[str, str]], str]) -> None:
    name = library({"core.py": """
        def word():
            return 'quiet'

        class Speaker:
            def word(self):
                return 'quiet'
    """})
    method = Patch(id=f"{name}.loud-method", library=name, module=f"{name}.core", attribute="Speaker.word",
                   versions="==1.0", reason="fake.py `Speaker.word()`",
                   replace=lambda original: lambda self: original(self).upper())
    registry = Registry.from_patches([*_loud(name).patches(), method], version_of=lambda library: "1.0",
                                     device_ready=lambda: True)
    with hook(registry):
        core = importlib.reload(importlib.import_module(f"{name}.core"))
        assert core.word() == core.Speaker().word() == "QUIET"
        assert registry.state(f"{name}.loud-method").status == "applied"


def test_module_that_was_mid_import_when_hooked_is_patched_on_the_next_import(
    library: Callable[[dict[str, str]], str],
) -> None:
    # As when `accelerate.utils.imports` runs `import torch`, whose autoload installs the hooks halfway through.
    name = library({
        "core.py": "import LIB.trigger\ndef word():\n    return 'quiet'\n",
        "trigger.py": "import builtins\nbuiltins.HFN_HOOK()\n",
        "later.py": "from LIB.core import word\n",
    })
    installed: list[object] = []
    builtins.HFN_HOOK = lambda: installed.append(hook(_loud(name)))  # type: ignore[attr-defined]
    try:
        core = importlib.import_module(f"{name}.core")
        assert core.word() == "quiet"  # the hook arrived while core was executing
        assert importlib.import_module(f"{name}.later").word() == core.word() == "QUIET"
    finally:
        del builtins.HFN_HOOK  # type: ignore[attr-defined]
        installed[0].revert()  # type: ignore[attr-defined]


def test_modules_outside_the_libraries_are_not_touched(library: Callable[[dict[str, str]], str]) -> None:
    name = library({"core.py": "def word():\n    return 'quiet'\n"})
    with hook(_loud(name)) as installed:
        assert installed.finder.find_spec("json.decoder", None) is None
        assert installed.finder.find_spec(f"{name}.unrelated", None) is None
        assert isinstance(importlib.import_module(f"{name}.core"), types.ModuleType)


def test_install_is_cheap_and_imports_no_library() -> None:
    result = run(
        """
        import sys, time
        import torch
        from hf_neuron import patches
        from hf_neuron.patches.libraries import HOOKED
        start = time.perf_counter()
        patches.install()
        elapsed = time.perf_counter() - start
        assert patches.installation() is not None
        assert not [name for name in HOOKED if name in sys.modules], sys.modules.keys()
        assert "hf_neuron.patches.registry" not in sys.modules
        print(f"{elapsed * 1e3:.3f}")
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},  # this install() is the first one
    )
    assert float(result.stdout) < 2.0
