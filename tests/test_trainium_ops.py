"""hf_neuron/device/trainium_ops.toml: the operators native on Trainium, from TorchNeuron's source — its rules, its
names against the installed torch, its provenance, and what it predicts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from hf_neuron.device import trainium_ops
from hf_neuron.matrix.results import environment
from hf_neuron.vocabulary.datafiles import DataFileError

SOURCE_COMMIT = "98154b867aa24562a3213e520d9ad7fd41032291"


@pytest.fixture(scope="module")
def ops() -> trainium_ops.TrainiumOps:
    return trainium_ops.load()


@pytest.fixture(scope="module")
def torch_ops() -> set[str]:
    return set(torch._C._dispatch_get_all_op_names())


def test_the_file_is_in_its_canonical_form(ops: trainium_ops.TrainiumOps) -> None:
    text = trainium_ops.TRAINIUM_OPS_FILE.read_text(encoding="utf-8")
    assert trainium_ops.render(ops) == text, "write the file with trainium_ops.render (sorted lists, fixed order)"


def test_provenance_names_the_source_tree(ops: trainium_ops.TrainiumOps) -> None:
    assert ops.kind == "source"
    assert ops.provenance["repository"] == "parmoham-aws/test-repo-parmoham"
    assert ops.provenance["commit"] == SOURCE_COMMIT
    assert ops.provenance["date"] == "2026-04-21" and ops.provenance["torch_neuronx"] == "0.1.0"
    assert "pre-release" in ops.provenance["caveat"] and "2.13/2.14 may implement more" in ops.provenance["caveat"]


@pytest.mark.parametrize("lists", [("native", "cpu_explicit", "unlogged")])
def test_every_listed_name_exists_in_the_installed_torch(ops: trainium_ops.TrainiumOps, torch_ops: set[str],
                                                          lists: tuple[str, ...]) -> None:
    for key in lists:
        unknown = sorted(getattr(ops, key) - torch_ops)
        assert not unknown, f"{key} names operators torch {torch.__version__} does not define: {unknown[:5]}"


def test_the_names_the_source_registers_in_vain_do_not_exist(ops: trainium_ops.TrainiumOps,
                                                              torch_ops: set[str]) -> None:
    assert not sorted(ops.not_in_torch & torch_ops), "a name of not_in_torch exists now: move it to its list"
    assert {"aten::div", "aten::eq", "aten::pow"} <= ops.not_in_torch  # default overloads that do not exist


def test_what_the_source_says_about_well_known_operators(ops: trainium_ops.TrainiumOps) -> None:
    # native at that commit, though the list inferred from the documentation said they fall back
    assert {"aten::nonzero", "aten::repeat_interleave.Tensor", "aten::masked_select"} <= ops.native
    assert {"aten::mm", "aten::add.Tensor", "aten::_scaled_dot_product_fused_attention_overrideable",
            "aten::native_dropout", "aten::index.Tensor", "aten::view", "aten::_to_copy"} <= ops.native
    for name in ("aten::argmax.out", "aten::sort.values_stable", "aten::var.correction", "aten::native_group_norm",
                 "aten::logsumexp", "aten::normal_", "aten::bernoulli_.float", "aten::cumprod.out", "aten::roll",
                 "aten::_fft_r2c", "aten::_unique2", "aten::upsample_nearest2d.out", "aten::linalg_qr"):
        assert name not in ops.native and ops.falls_back(name), name
    assert not ops.falls_back("aten::view_as_real"), "a view the catch-all fallback does not report"
    assert {"aten::linalg_qr", "aten::_linalg_svd", "aten::_linalg_eigh"} <= ops.cpu_explicit


def _broken(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ('    "aten::abs",\n    "aten::abs.out",\n', '    "aten::abs.out",\n    "aten::abs",\n', "must be sorted"),
        ('    "aten::abs",\n', '    "aten::abs",\n    "aten::abs",\n', "twice"),
        ('    "aten::abs",\n', '    "abs",\n', "is not an operator name"),
        ('cpu_explicit = [\n', 'cpu_explicit = [\n    "aten::_copy_from_and_resize",\n', "is in both native and"),
        ('kind = "source"', 'kind = "guessed"', "is not one of"),
        ('kind = "source"', 'kind = "measured"', "exactly when the file has a [measured] table"),
        ('commit = "', 'commits = "', "unknown keys"),
        ('[operators]', '[operators]\nextra = []', "unknown keys"),
    ],
)
def test_the_reader_refuses_a_file_that_breaks_its_rules(old: str, new: str, problem: str) -> None:
    text = _broken(trainium_ops.TRAINIUM_OPS_FILE.read_text(encoding="utf-8"), old, new)
    with pytest.raises(DataFileError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        trainium_ops.parse(Path("trainium_ops.toml"), text)


def test_a_measured_file_predicts_what_was_measured(ops: trainium_ops.TrainiumOps, tmp_path: Path) -> None:
    measured = dataclasses.replace(
        ops, provenance={**ops.provenance, "kind": "measured"},
        measured={"run_id": "trn-1", "started_at": "a", "finished_at": "b", "torch_neuronx": "2.13.3", "cases": 3},
        measured_fallback={"aten::_unique2": 2, "aten::nonzero": 4})
    path = tmp_path / "trainium_ops.toml"
    path.write_text(trainium_ops.render(measured), encoding="utf-8")
    back = trainium_ops.load(path)
    assert back == measured and back.kind == "measured"
    assert back.falls_back("aten::nonzero"), "measured: it fell back on Trainium, though the source registers it"
    assert not back.falls_back("aten::argmax.out"), "measured: not seen falling back"
    assert trainium_ops.provenance(back)["kind"] == "measured"
    assert trainium_ops.provenance(back)["measured_run"] == "trn-1"
    text = path.read_text(encoding="utf-8")
    with pytest.raises(DataFileError, match="must be sorted"):
        trainium_ops.parse(path, _broken(text, '"aten::_unique2" = 2\n"aten::nonzero" = 4',
                                         '"aten::nonzero" = 4\n"aten::_unique2" = 2'))
    with pytest.raises(DataFileError, match="needs"):
        trainium_ops.parse(path, _broken(text, 'cases = 3\n', ''))


def test_the_list_cites_its_sources_and_releases(ops: trainium_ops.TrainiumOps, tmp_path: Path) -> None:
    assert ops.citation.sources[0] == "pre-release-tree" and "2.34" in ops.citation.releases
    assert "not readable from here" in ops.citation.unconfirmed
    path = tmp_path / "trainium_ops.toml"
    text = trainium_ops.TRAINIUM_OPS_FILE.read_text(encoding="utf-8")
    sources = 'sources = ["pre-release-tree", "supported-operators", "torchneuron-notes-2.34"]\n'
    with pytest.raises(DataFileError, match=r"\[provenance\] needs \['sources', 'releases'\]"):
        trainium_ops.parse(path, _broken(text, sources, ""))
    with pytest.raises(DataFileError, match=r"cites unknown source\(s\) \['a-guess'\]"):
        trainium_ops.parse(path, _broken(text, sources, 'sources = ["a-guess"]\n'))


def test_the_run_environment_carries_the_lists_provenance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_NEURON_EMULATOR", "1")
    env = environment.collect("trainium")
    assert env["predicts"] == "torch-neuronx 2.13.3.1 / 2.14.3.1 (Neuron 2.34.0, 2026-11-30)"
    assert environment.predicts("reference", "cpu-parity") is None  # plain parity predicts no release
    assert environment.predicts("real", "trainium") is None  # the real backend measures what it is
    assert env["fallback_list"] == {
        "file": "hf_neuron/device/trainium_ops.toml", "source": "parmoham-aws/test-repo-parmoham",
        "commit": SOURCE_COMMIT, "date": "2026-04-21", "torch_neuronx": "0.1.0", "kind": "source",
        "native": len(trainium_ops.load().native)}
    assert environment.fallback_list("real", "2.13.3.1")["kind"] == "backend"
    assert environment.fallback_list("none", None) is None
