"""Where a library's tests come from: a directory in place, a git repository's commit exported, a source
distribution or a tag fetched into the cache, each with its provenance; laid out without writing into the tree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _helpers import ROOT, run_cli

from hf_neuron.errors import InputError
from hf_neuron.upstream import source
from hf_neuron.upstream.runner import NoSourceError, UpstreamOptions, configured_source
from hf_neuron.upstream.suites import suite


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repository(tmp_path: Path) -> tuple[Path, str, str]:
    """A git repository with two commits: the first holds tests/test_sft_trainer.py, the second removes it."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_sft_trainer.py").write_text("def test_a():\n    pass\n")
    (repo / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (repo / "trl").mkdir()
    (repo / "trl" / "__init__.py").write_text("")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tests")
    first = _git(repo, "rev-parse", "HEAD")
    _git(repo, "rm", "-q", "tests/test_sft_trainer.py")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "no tests")
    return repo, first, _git(repo, "rev-parse", "HEAD")


def test_a_commit_s_tests_are_exported_with_their_provenance(repository: tuple[Path, str, str],
                                                              tmp_path: Path) -> None:
    repo, first, _ = repository
    tree = source.export_git(repo, first[:8], tmp_path / "cache", name="trl",
                             paths=("tests", "pyproject.toml", "conftest.py"), needs="tests/test_sft_trainer.py")
    assert tree.root == tmp_path / "cache" / f"trl-{first[:12]}"
    assert sorted(p.name for p in tree.root.iterdir()) == [source.PROVENANCE_FILE, "pyproject.toml", "tests"]
    assert tree.provenance["kind"] == "git" and tree.provenance["commit"] == first
    assert tree.provenance["subject"] == "tests" and tree.provenance["paths"] == "tests pyproject.toml"
    again = source.export_git(repo, first, tmp_path / "cache", name="trl", paths=("tests",), needs="tests")
    assert again == tree  # kept, with the provenance it was exported with


def test_a_commit_without_the_tests_or_an_unknown_one_is_bad_input(repository: tuple[Path, str, str],
                                                                   tmp_path: Path) -> None:
    repo, _, second = repository
    with pytest.raises(InputError, match=f"commit {second[:12]} has no tests/test_sft_trainer.py"):
        source.export_git(repo, "HEAD", tmp_path / "cache", name="trl", paths=("tests",),
                          needs="tests/test_sft_trainer.py")
    with pytest.raises(InputError, match="no commit 'v99' in that git repository"):
        source.export_git(repo, "v99", tmp_path / "cache", name="trl", paths=("tests",), needs="tests")
    assert not list((tmp_path / "cache").glob("trl-*"))


def test_a_directory_is_used_in_place_and_names_its_kept_copy(tmp_path: Path) -> None:
    (tmp_path / "tests" / "models").mkdir(parents=True)
    (tmp_path / "SOURCE.txt").write_text("Origin: github.com/huggingface/diffusers, commit 58eb52c\n")
    tree = source.from_directory(tmp_path, what="diffusers", needs="tests/models")
    assert tree.root == tmp_path and tree.provenance["kind"] == "directory"
    assert tree.provenance["source_txt"].startswith("Origin: github.com/huggingface/diffusers")
    assert source.is_git_repository(tmp_path) is False
    with pytest.raises(InputError, match=r"no tests/test_sft_trainer\.py in it: is it a trl checkout"):
        source.from_directory(tmp_path, what="trl", needs="tests/test_sft_trainer.py")


def test_an_sdist_in_the_cache_is_reused_without_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = tmp_path / "peft-0.21.2"
    (kept / "tests").mkdir(parents=True)
    (kept / "tests" / "test_custom_models.py").write_text("")
    (kept / source.PROVENANCE_FILE).write_text(json.dumps({"kind": "sdist", "package": "peft", "sha256": "ab"}))

    def no_pip(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("pip was called")

    monkeypatch.setattr(source.subprocess, "run", no_pip)
    tree = source.fetch_sdist("peft", "0.21.2", tmp_path, needs="tests/test_custom_models.py")
    assert tree.root == kept and tree.provenance["sha256"] == "ab"


def test_an_sdist_pip_cannot_get_says_to_pass_a_source_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert command[1:5] == ["-m", "pip", "download", "--quiet"] and "peft==0.21.2" in command
        assert command[command.index("--no-binary") + 1] == ":all:" and "--no-deps" in command
        return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution found for peft==0.21.2")

    monkeypatch.setattr(source.subprocess, "run", failing_pip)
    with pytest.raises(InputError, match=r"pip could not download the peft 0\.21\.2 source distribution: ERROR: "
                                         r"No matching distribution.*pass --source DIR"):
        source.fetch_sdist("peft", "0.21.2", tmp_path, needs="tests/test_custom_models.py")
    assert list(tmp_path.iterdir()) == []  # nothing half-downloaded is kept


def test_the_working_tree_links_the_source_and_adds_only_a_missing_package_init(tmp_path: Path) -> None:
    tree = tmp_path / "sdist"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_custom_models.py").write_text("")
    (tree / "src" / "peft").mkdir(parents=True)
    (tree / "pyproject.toml").write_text("")
    work = source.prepare_worktree(tree, tmp_path / "work", packages=("tests",))
    assert sorted(p.name for p in work.iterdir()) == ["pyproject.toml", "tests"]  # never src/
    assert (work / "tests" / "test_custom_models.py").resolve() == (tree / "tests" / "test_custom_models.py")
    assert (work / "tests" / "__init__.py").is_file() and not (tree / "tests" / "__init__.py").exists()


# --configured: the source the settings give each suite, the one home of what the nightly and CI run.

def _configured(name: str, environ: dict[str, str], shared: Path, **given: Any) -> Any:
    options = UpstreamOptions(results=shared / "results", suite=name, configured=True, **given)
    return configured_source(suite(name), options, environ, shared=shared)


def test_configured_takes_the_tree_a_setting_names_then_the_kept_copy_then_the_sdist(tmp_path: Path) -> None:
    named = _configured("trl", {"HF_NEURON_TRL_SOURCE": "/src/trl", "HF_NEURON_TRL_REVISION": "abc123"}, tmp_path)
    assert (named.source, named.revision, named.fetch, named.configured) == (Path("/src/trl"), "abc123", False, False)
    assert _configured("trl", {"HF_NEURON_TRL_SOURCE": "/src/trl"}, tmp_path).revision is None  # HEAD
    (tmp_path / "diffusers-tests").mkdir()
    kept = _configured("diffusers", {}, tmp_path)
    assert (kept.source, kept.fetch) == (tmp_path / "diffusers-tests", False)
    assert _configured("diffusers", {"HF_NEURON_DIFFUSERS_SOURCE": "/d"}, tmp_path).source == Path("/d")
    for name in ("peft", "accelerate"):  # their sdist carries the tests: fetched once, then from the cache
        sdist = _configured(name, {}, tmp_path)
        assert (sdist.source, sdist.fetch) == (None, True)


@pytest.mark.parametrize("name", ["transformers", "diffusers", "trl"])
def test_configured_clones_a_tag_only_when_the_settings_allow_the_network(tmp_path: Path, name: str) -> None:
    assert _configured(name, {"HF_NEURON_UPSTREAM_FETCH": "1"}, tmp_path).fetch is True
    setting = {"transformers": "HF_NEURON_TRANSFORMERS_SOURCE", "diffusers": "HF_NEURON_DIFFUSERS_SOURCE",
               "trl": "HF_NEURON_TRL_SOURCE"}[name]
    with pytest.raises(NoSourceError, match=rf"{name}: its own tests skipped, no source configured: set {setting}"):
        _configured(name, {}, tmp_path)


def test_configured_with_a_source_of_its_own_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--configured takes the source from the settings"):
        _configured("peft", {}, tmp_path, revision="HEAD")
    with pytest.raises(InputError, match="--configured takes the source from the settings"):
        _configured("trl", {}, tmp_path, against="1.9.0")


def test_configured_takes_the_release_a_trees_tests_run_against(tmp_path: Path) -> None:
    environ = {"HF_NEURON_TRL_SOURCE": "/src/trl", "HF_NEURON_TRL_AGAINST": "1.9.0"}
    assert _configured("trl", environ, tmp_path).against == "1.9.0"
    assert _configured("trl", {"HF_NEURON_TRL_SOURCE": "/src/trl"}, tmp_path).against is None  # the installed TRL


# --against: a release installed beside the installed one, first on the tests' PYTHONPATH.

def test_a_release_beside_the_installed_one_is_installed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from _helpers_patches import fake_distribution

    calls: list[list[str]] = []

    def pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        fake_distribution(Path(command[command.index("--target") + 1]), "trl", "1.9.0")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(source.subprocess, "run", pip)
    beside = source.install_beside("trl", "1.9.0", tmp_path)
    assert beside == tmp_path / "beside" / "trl-1.9.0" and source.installed_in(beside, "trl") == "1.9.0"
    assert calls[0][1:] == ["-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target",
                            calls[0][-2], "trl==1.9.0"], "the release alone: its dependencies are the environment's"
    assert source.install_beside("trl", "1.9.0", tmp_path) == beside and len(calls) == 1, "kept in the cache"
    assert [p.name for p in (tmp_path / "beside").iterdir()] == ["trl-1.9.0"], "no staging left behind"


def test_a_release_pip_cannot_install_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def pip(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution found for trl==0.0.1")

    monkeypatch.setattr(source.subprocess, "run", pip)
    with pytest.raises(InputError, match=r"--against 0.0.1: pip could not install trl 0.0.1 beside the installed one: "
                                         r"ERROR: No matching distribution found for trl==0.0.1"):
        source.install_beside("trl", "0.0.1", tmp_path)
    assert list((tmp_path / "beside").iterdir()) == []


def test_the_tests_import_the_release_beside_before_the_installed_one(tmp_path: Path) -> None:
    from _helpers_patches import fake_distribution

    from hf_neuron.upstream.runner import Job, _environment
    from hf_neuron.upstream.stand_ins import StandInCache

    beside = fake_distribution(tmp_path / "beside", "trl", "1.9.0")
    options = UpstreamOptions(results=tmp_path / "results", suite="trl", against="1.9.0")
    env = _environment(suite("trl"), Job("1-device", ("tests",)), "neuron", options, "reference",
                       StandInCache(tmp_path / "home", {}), tmp_path / "pycache", beside)
    assert env["PYTHONPATH"].split(":")[0] == str(beside)
    code = "import importlib.metadata as m; print(m.version('trl'))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "1.9.0", done.stderr


def test_a_library_with_no_source_configured_exits_4_and_writes_nothing(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = run_cli(["upstream", "trl", "--configured", "--group", "ci", "--results", str(results)],
                   {"HF_NEURON_TRL_SOURCE": None, "HF_NEURON_UPSTREAM_FETCH": None})
    assert done.returncode == 4, done.stderr
    assert "trl: its own tests skipped, no source configured: set HF_NEURON_TRL_SOURCE" in done.stderr
    assert not results.exists()


def test_the_nightly_and_ci_take_every_library_s_source_from_the_command() -> None:
    for script in ("nightly.sh", "ci_upstream.sh"):
        text = (ROOT / "scripts" / script).read_text(encoding="utf-8")
        assert "upstream \"$library\" --configured" in text, script
        for setting in ("HF_NEURON_DIFFUSERS_SOURCE", "HF_NEURON_TRL_SOURCE", "HF_NEURON_TRANSFORMERS_SOURCE"):
            assert f"setting {setting}" not in text, f"{script} reads {setting} itself: the command's job"
        assert "--fetch" not in text and "--source" not in text, script
