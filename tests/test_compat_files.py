"""The reviewed data of ``compat/``: one TOML loader and one error naming file, line, table and key; the rules each
file's header states, checked; and every file read before a matrix run's first case, so a malformed one stops it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _helpers import ROOT
from _helpers_matrix import FAKE, cli

from hf_neuron.compat.files import read_toml
from hf_neuron.compat.reviewed_tables import check_table, load_tables
from hf_neuron.compat.tiny_image_text import IMAGE_TEXT_PATH
from hf_neuron.compat.tiny_overrides import OVERRIDES_PATH
from hf_neuron.vocabulary.datafiles import DataFileError, check_sorted


def test_a_toml_syntax_error_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('[a]\nreason = "fine"\n\n[b\nreason = "x"\n', encoding="utf-8")
    with pytest.raises(DataFileError, match=rf"^{path}:4: not valid TOML") as error:
        read_toml(path)
    assert error.value.line == 4


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_bytes('reason = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(DataFileError, match="not UTF-8 text"):
        read_toml(path)


def test_an_error_in_a_table_names_its_line_table_and_key(tmp_path: Path) -> None:
    path = tmp_path / "tiny_overrides.toml"
    path.write_text('# header\n\n[aria]\nreason = "r"\n\n[mamba]\nreason = "r"\nruns = false\ngap = "audio"\n')
    with pytest.raises(DataFileError) as error:
        load_tables(path, lambda p, name, table: check_table(p, name, table, ()))
    assert str(error.value) == (f"{path}:6: [mamba] gap: 'audio' is not a gap; gaps are inputs, pipeline-recipe, "
                                "lora-targets, tiny-build, devices, checks, memory-budget")


def test_tables_out_of_order_are_refused_as_the_headers_say(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('[zamba]\nreason = "r"\n\n[aria]\nreason = "r"\n')
    with pytest.raises(DataFileError, match=r":4: \[aria\]: the tables .* must be sorted: 'aria' comes after"):
        load_tables(path, lambda p, name, table: check_table(p, name, table, ()))
    check_sorted(path, ["aria", "mamba"], "tables")  # sorted: nothing to say


@pytest.mark.parametrize("path", [OVERRIDES_PATH, IMAGE_TEXT_PATH], ids=lambda path: path.name)
def test_the_projects_per_architecture_files_keep_their_tables_sorted(path: Path) -> None:
    assert "Keep the tables sorted" in path.read_text() or "sorted" in path.read_text(), "the header states the rule"
    check_sorted(path, list(read_toml(path)), "tables")


def test_a_malformed_compat_file_stops_a_run_before_its_first_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    """A run in which nothing would read the broken file still refuses to start: exit 2, the file and line named,
    no record written."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "compat", checkout / "compat")
    broken = checkout / "compat" / "known_failures.toml"
    broken.write_text(broken.read_text() + "\n[[known_failure]\n")
    results = tmp_path / "results"
    run = cli("run", *FAKE, "--arch", "alpha", "--results", str(results), "--known-failures", str(broken))
    assert run.returncode == 2, run.stderr
    assert f"{broken}:" in run.stderr and "not valid TOML" in run.stderr
    assert not list(results.glob("*.jsonl")), "no case ran"


def test_every_reviewed_file_is_read_before_a_run_even_one_it_would_not_need(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_neuron.compat import tiny_overrides
    from hf_neuron.matrix.options import MatrixConfig

    broken = tmp_path / "tiny_overrides.toml"
    broken.write_text('[zamba]\nreason = "r"\nruns = "no"\n')
    monkeypatch.setattr(tiny_overrides, "OVERRIDES_PATH", broken)
    config = MatrixConfig.from_values({"matrix_catalog": ROOT / "tests" / "fixtures" / "matrix" / "catalog.json",
                                       "matrix_scenario_module": str(ROOT / "tests" / "fixtures" / "matrix" /
                                                                     "fake_scenarios.py")})
    assert [case.model_type for case in config.cases()][:1] == ["alpha"], "the fake catalog needs no override"
    with pytest.raises(DataFileError, match=rf"^{broken}:1: \[zamba\] runs: must be true or false"):
        config.read_data_files()


def test_the_diffusion_recipes_keep_their_backbones_sorted(tmp_path: Path) -> None:
    from hf_neuron.compat.tiny_diffusion import RECIPES_FILE, load_recipes

    assert "sorted by name" in RECIPES_FILE.read_text() and load_recipes(RECIPES_FILE)
    path = tmp_path / "tiny_diffusion.toml"
    path.write_text('[backbones.ZModel]\nreason = "r"\n\n[backbones.AModel]\nreason = "r"\n')
    with pytest.raises(DataFileError, match=r":4: \[backbones.AModel\]: the \[backbones.\*\] tables must be sorted"):
        load_recipes(path)
