"""The C++ extension build: cached per torch version, Python, sources and compiler flags; a killed build cannot
hang the next."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hf_neuron.device import build


def test_build_directory_names_torch_python_and_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_NEURON_CACHE", str(tmp_path))
    directory = build.build_dir()
    assert directory.parent.parent == tmp_path
    assert directory.parent.name.startswith(f"torch-{torch.__version__}-py3")
    assert directory.name.startswith(f"{build.EXTENSION_NAME}-")


def test_other_compiler_flags_build_elsewhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_NEURON_CACHE", str(tmp_path))
    directory = build.build_dir()
    monkeypatch.setattr(build, "CFLAGS", (*build.CFLAGS, "-DOTHER"))
    assert build.build_dir() != directory, "a build with other flags is not this build"


def test_stale_lock_of_a_killed_build_is_removed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from torch.utils import cpp_extension

    monkeypatch.setenv("HF_NEURON_CACHE", str(tmp_path))
    directory = build.build_dir()
    directory.mkdir(parents=True)
    (directory / "lock").write_text("")  # what cpp_extension leaves behind when its build is killed
    (directory.parent / f"{build.EXTENSION_NAME}-0ld50urce5").mkdir()
    seen: dict[str, bool] = {}

    def fake_load(**kwargs: object) -> None:
        seen["lock present during build"] = (directory / "lock").exists()
        (directory / f"{build.EXTENSION_NAME}.so").write_text("")

    monkeypatch.setattr(cpp_extension, "load", fake_load)
    monkeypatch.setattr(build, "_import_built", lambda path: path)
    assert build.load() == directory / f"{build.EXTENSION_NAME}.so"
    assert seen == {"lock present during build": False}
    assert sorted(p.name for p in directory.parent.iterdir()) == sorted(
        [directory.name, f"{build.EXTENSION_NAME}-0ld50urce5"]), "another recent build is kept"


def test_only_the_most_recently_used_builds_are_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    monkeypatch.setenv("HF_NEURON_CACHE", str(tmp_path))
    current = build.build_dir()
    current.mkdir(parents=True)
    others = [current.parent / f"{build.EXTENSION_NAME}-other{i}" for i in range(4)]
    for age, other in enumerate(others):  # other0 used last, other3 longest ago
        other.mkdir()
        os.utime(other, (1e9 - age * 1000, 1e9 - age * 1000))
    build._remove_stale_builds(current)
    kept = sorted(p.name for p in current.parent.iterdir())
    assert kept == sorted([current.name, *(other.name for other in others[:build.KEPT_BUILDS - 1])])


def test_a_cached_build_is_loaded_without_building(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.utils import cpp_extension

    monkeypatch.setattr(cpp_extension, "load", lambda **kwargs: pytest.fail("rebuilt a cached extension"))
    assert build.load().configure is not None
