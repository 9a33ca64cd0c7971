"""The checkpoint catalog (``compat/checkpoints.toml`` and ``compat/checkpoints/``): real configurations of public
checkpoints, with where each was copied from. The committed catalog covers the ranking and every group and loads with
the installed libraries; each rule of the reader is held by a malformed file it refuses."""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from hf_neuron.compat import preflight
from hf_neuron.compat.catalog import load_catalog
from hf_neuron.compat.checkpoints import CHECKPOINTS_DIR, CHECKPOINTS_PATH, CatalogCheckpoint, load_checkpoints
from hf_neuron.compat.ranking import load_ranking
from hf_neuron.vocabulary.datafiles import DataFileError

CATALOG = load_catalog()
CHECKPOINTS = load_checkpoints(architectures=CATALOG.by_type())
DIFFUSERS = "model_index.json"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _groups() -> dict[str, str]:
    return {entry.model_type: entry.group for entry in CATALOG.entries}


def test_the_committed_catalog_loads_and_its_files_are_where_it_says() -> None:
    assert CHECKPOINTS_PATH.parent / "checkpoints" == CHECKPOINTS_DIR
    assert all(checkpoint.directory == CHECKPOINTS_DIR / checkpoint.id for checkpoint in CHECKPOINTS)
    assert all(checkpoint.config_path.is_file() for checkpoint in CHECKPOINTS)


def test_the_catalog_holds_at_least_a_hundred_checkpoints() -> None:
    assert len(CHECKPOINTS) >= 100, len(CHECKPOINTS)


@pytest.mark.xfail(strict=True, reason=(
    "no verbatim public copy of a checkpoint's config was found for 7 ranked architectures (granite, olmo2, bloom, "
    "llama4, cohere2, phimoe, ministral); strict: remove this mark once each has one"))
def test_every_ranked_architecture_has_a_checkpoint() -> None:
    covered = {checkpoint.architecture for checkpoint in CHECKPOINTS}
    assert [entry.model_type for entry in load_ranking() if entry.model_type not in covered] == []


def test_every_group_of_the_catalog_has_a_checkpoint() -> None:
    groups = _groups()
    assert {groups[checkpoint.architecture] for checkpoint in CHECKPOINTS} == {entry.group for entry in CATALOG.entries}


@pytest.mark.parametrize("checkpoint", [checkpoint for checkpoint in CHECKPOINTS if DIFFUSERS not in checkpoint.files],
                         ids=lambda checkpoint: checkpoint.id)
def test_each_transformers_config_loads_with_the_installed_transformers(checkpoint: CatalogCheckpoint) -> None:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    document = json.loads(checkpoint.config_path.read_text(encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = CONFIG_MAPPING[document["model_type"]].from_dict(document)
    assert config.model_type == checkpoint.architecture


@pytest.mark.parametrize("checkpoint", [checkpoint for checkpoint in CHECKPOINTS if DIFFUSERS in checkpoint.files],
                         ids=lambda checkpoint: checkpoint.id)
def test_each_diffusers_checkpoint_names_an_installed_denoiser(checkpoint: CatalogCheckpoint) -> None:
    import diffusers

    index = json.loads(checkpoint.config_path.read_text(encoding="utf-8"))
    named = {name: value[1] for name, value in index.items() if isinstance(value, list) and len(value) == 2}
    assert checkpoint.architecture in named.values(), "model_index.json names the denoiser's class"
    assert hasattr(diffusers, checkpoint.architecture)


def test_published_parameter_counts_are_recorded_with_their_source() -> None:
    counted = [checkpoint for checkpoint in CHECKPOINTS if checkpoint.parameters is not None]
    assert len(counted) >= 6
    assert all(checkpoint.parameters_source for checkpoint in counted)
    moe = {checkpoint.id: checkpoint.active_parameters for checkpoint in counted}
    assert moe["mistralai/Mixtral-8x7B-v0.1"] == 12_900_000_000 and moe["deepseek-ai/DeepSeek-V3"] == 37_000_000_000


_HASH_CLAIM = re.compile(r"sha256 ([0-9a-f]{64})")


@pytest.mark.parametrize("checkpoint", [checkpoint for checkpoint in CHECKPOINTS
                                        if checkpoint.note and _HASH_CLAIM.search(checkpoint.note)],
                         ids=lambda checkpoint: checkpoint.id)
def test_a_file_checked_against_the_hubs_hash_still_has_it(checkpoint: CatalogCheckpoint) -> None:
    """A note that gives the Hub file's sha256 holds: the catalogued bytes have it, or (a copy that differs in
    whitespace only, as its note says) the file written with indent 2 and a final newline has it."""
    assert checkpoint.note is not None
    claimed = _HASH_CLAIM.search(checkpoint.note)
    assert claimed is not None
    raw = checkpoint.config_path.read_bytes()
    if "whitespace only" in checkpoint.note:
        raw = (json.dumps(json.loads(raw), indent=2) + "\n").encode()
    assert hashlib.sha256(raw).hexdigest() == claimed.group(1)


# The rules, each held by a malformed catalog the reader refuses.

def _config(model_type: str = "llama") -> dict[str, Any]:
    return {"architectures": ["LlamaForCausalLM"], "model_type": model_type, "hidden_size": 64}


def _source(path: str = "c/config.json") -> dict[str, str]:
    return {"repository": "owner/repo", "commit": COMMIT, "path": path}


def _quote(value: object) -> str:
    return json.dumps(value)


def _write(tmp_path: Path, entries: list[dict[str, Any]], files: dict[str, object] | None = None) -> Path:
    """A catalog of ``entries`` (dicts with their files' sources under ``files``) at ``tmp_path/checkpoints.toml``,
    with ``files`` (path under ``checkpoints/`` -> JSON value, or text) written beside it."""
    lines: list[str] = []
    for entry in entries:
        lines.append("[[checkpoint]]")
        lines += [f"{key} = {_quote(value)}" for key, value in entry.items() if key != "files"]
        for name, source in entry.get("files", {}).items():
            lines.append(f"[checkpoint.files.{_quote(name)}]")
            lines += [f"{key} = {_quote(value)}" for key, value in source.items()]
        lines.append("")
    path = tmp_path / "checkpoints.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    for name, content in (files or {}).items():
        target = tmp_path / "checkpoints" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def _llama(name: str = "org/llama", **fields: Any) -> dict[str, Any]:
    return {"id": name, "architecture": "llama", "files": {"config.json": _source()}, **fields}


def _unet(name: str = "org/sd", **fields: Any) -> dict[str, Any]:
    return {"id": name, "architecture": "UNet2DConditionModel",
            "files": {"model_index.json": _source(), "unet/config.json": _source()}, **fields}


INDEX = {"_class_name": "StableDiffusionPipeline", "unet": ["diffusers", "UNet2DConditionModel"],
         "vae": ["diffusers", "AutoencoderKL"]}
UNET = {"_class_name": "UNet2DConditionModel", "sample_size": 64}


def _valid(tmp_path: Path) -> Path:
    return _write(tmp_path, [_llama(parameters=8_030_000_000, parameters_source="https://huggingface.co/org/llama"),
                             _unet()],
                  {"org/llama/config.json": _config(), "org/sd/model_index.json": INDEX,
                   "org/sd/unet/config.json": UNET})


def test_a_well_formed_catalog_loads(tmp_path: Path) -> None:
    llama, unet = load_checkpoints(_valid(tmp_path), architectures=["llama", "UNet2DConditionModel"])
    assert (llama.config_path, unet.config_path) == (tmp_path / "checkpoints/org/llama/config.json",
                                                     tmp_path / "checkpoints/org/sd/model_index.json")
    assert llama.files["config.json"].commit == COMMIT and llama.parameters == 8_030_000_000
    assert set(unet.files) == {"model_index.json", "unet/config.json"}


def _second_entry_line(path: Path) -> int:
    return [number for number, line in enumerate(path.read_text().splitlines(), start=1)
            if line == "[[checkpoint]]"][1]


def _refused(path: Path, match: str, architectures: list[str] | None = None) -> DataFileError:
    with pytest.raises(DataFileError, match=match) as error:
        load_checkpoints(path, architectures=architectures)
    assert str(error.value).startswith(str(path)), "the error names the file"
    return error.value


def test_an_id_listed_twice_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [_llama("org/llama"), _llama("Org/Llama")], {"org/llama/config.json": _config(),
                                                                           "Org/Llama/config.json": _config()})
    error = _refused(path, r"Org/Llama: is listed twice \(as 'org/llama' before\): keep one entry per Hub id")
    assert error.line == _second_entry_line(path) and error.table == "[[checkpoint]] #2"


def test_an_id_that_is_not_org_slash_name_is_refused(tmp_path: Path) -> None:
    _refused(_write(tmp_path, [_llama("llama")]), r"id must be a Hub id org/name, got 'llama'")
    _refused(_write(tmp_path, [_llama("org/../x")]), r"id must be a Hub id org/name")


def test_entries_out_of_order_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [_llama("org/b"), _llama("Org/a")], {"org/b/config.json": _config(),
                                                                   "Org/a/config.json": _config()})
    _refused(path, r"Org/a: the entries must be sorted by id \(case-insensitive\): it comes after 'org/b'")


def test_an_architecture_the_catalog_does_not_know_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [_llama()], {"org/llama/config.json": _config()})
    _refused(path, r"architecture 'llama' is not in the catalog", architectures=["mistral"])
    load_checkpoints(path)  # without the catalog's names, any architecture goes


def test_a_listed_file_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    _refused(_write(tmp_path, [_llama()]), r"org/llama: .*org/llama/config.json does not exist: copy the file")


def test_a_file_that_is_not_json_or_not_an_object_is_refused(tmp_path: Path) -> None:
    _refused(_write(tmp_path, [_llama()], {"org/llama/config.json": "{'model_type': 'llama'}"}),
             r"config.json is not valid JSON")
    _refused(_write(tmp_path, [_llama()], {"org/llama/config.json": ["llama"]}),
             r"config.json must hold a JSON object, got list")


def test_a_config_whose_model_type_is_not_the_architecture_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [_llama()], {"org/llama/config.json": _config("mistral")})
    _refused(path, r"config.json's model_type is 'mistral', not its architecture 'llama'")


def test_an_entry_without_config_or_model_index_is_refused(tmp_path: Path) -> None:
    entry = _llama(files={"generation_config.json": _source()})
    path = _write(tmp_path, [entry], {"org/llama/generation_config.json": {"max_length": 20}})
    _refused(path, r"lists neither config.json \(a transformers checkpoint\) nor model_index.json")


def test_a_diffusers_entry_needs_exactly_one_denoiser_config(tmp_path: Path) -> None:
    index_only = _unet(files={"model_index.json": _source()})
    _refused(_write(tmp_path, [index_only], {"org/sd/model_index.json": INDEX}),
             r"exactly one component config whose _class_name is its architecture 'UNet2DConditionModel'; 0 of \[\]")
    two = _unet(files={"model_index.json": _source(), "unet/config.json": _source(), "vae/config.json": _source()})
    path = _write(tmp_path, [two], {"org/sd/model_index.json": INDEX, "org/sd/unet/config.json": UNET,
                                    "org/sd/vae/config.json": UNET})
    _refused(path, r"; 2 of \['unet/config.json', 'vae/config.json'\] have it")


def test_a_diffusers_denoiser_must_be_a_component_of_model_index(tmp_path: Path) -> None:
    moved = _unet(files={"model_index.json": _source(), "transformer/config.json": _source()})
    path = _write(tmp_path, [moved], {"org/sd/model_index.json": INDEX, "org/sd/transformer/config.json": UNET})
    _refused(path, r"transformer/config.json must be in the directory of a component that model_index.json names "
                   r"\(it names \['unet', 'vae'\]\)")


def test_a_diffusers_architecture_needs_its_model_index(tmp_path: Path) -> None:
    unet_only = _unet(files={"unet/config.json": _source()})
    _refused(_write(tmp_path, [unet_only], {"org/sd/unet/config.json": UNET}), r"lists neither config.json")


@pytest.mark.parametrize(("source", "match"), [
    ({"repository": "owner/repo", "path": "config.json"}, r"misses commit: a file copied from a repository names"),
    ({**_source(), "commit": "abc123"}, r"commit must be the 40 lowercase hex digits .* got 'abc123'"),
    ({**_source(), "repository": "https://github.com/o/r"}, r"repository must be a GitHub owner/name"),
    ({**_source(), "model_card": "https://huggingface.co/org/llama"}, r"names both a model_card and a repository"),
    ({"model_card": "https://example.com/org/llama"}, r"model_card must be a Hub page \(https://huggingface.co/"),
    ({**_source(), "license": "mit"}, r"has unknown keys \['license'\]"),
], ids=["no-commit", "short-commit", "repository-url", "both", "not-the-hub", "unknown-key"])
def test_each_file_says_where_it_was_copied_from(tmp_path: Path, source: dict[str, str], match: str) -> None:
    path = _write(tmp_path, [_llama(files={"config.json": source})], {"org/llama/config.json": _config()})
    error = _refused(path, match)
    assert error.key == 'files."config.json"'


def test_a_model_card_source_is_enough(tmp_path: Path) -> None:
    card = {"model_card": "https://huggingface.co/org/llama"}
    path = _write(tmp_path, [_llama(files={"config.json": card})], {"org/llama/config.json": _config()})
    (checkpoint,) = load_checkpoints(path)
    assert checkpoint.files["config.json"].model_card == card["model_card"]


def test_a_file_path_outside_the_checkpoint_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [_llama(files={"../other/config.json": _source()})])
    _refused(path, r"file '../other/config.json' must be a .json path relative to the checkpoint's directory")


def test_parameters_need_their_source_and_active_parameters_fit_in_them(tmp_path: Path) -> None:
    files = {"org/llama/config.json": _config()}
    _refused(_write(tmp_path, [_llama(parameters=7_000_000_000)], files),
             r"parameters and parameters_source go together")
    _refused(_write(tmp_path, [_llama(parameters_source="https://huggingface.co/org/llama")], files),
             r"parameters and parameters_source go together")
    source = "https://huggingface.co/org/llama"
    _refused(_write(tmp_path, [_llama(parameters=10, active_parameters=11, parameters_source=source)], files),
             r"active_parameters \(11\) needs parameters and cannot exceed them \(10\)")
    _refused(_write(tmp_path, [_llama(parameters=7.6, parameters_source=source)], files),
             r"must be a positive integer \(the published count")
    _refused(_write(tmp_path, [_llama(parameters=10, parameters_source="huggingface.co/org/llama")], files),
             r"parameters_source must be the https:// page")


def test_a_file_no_entry_lists_is_refused(tmp_path: Path) -> None:
    path = _valid(tmp_path)
    stray = tmp_path / "checkpoints" / "org" / "sd" / "vae" / "config.json"
    stray.parent.mkdir()
    stray.write_text("{}")
    _refused(path, rf"{stray} is listed by no \[\[checkpoint\]\] \(1 such files\): list it under its checkpoint's "
                   "files, or delete it")


def test_unknown_keys_and_tables_are_refused(tmp_path: Path) -> None:
    files = {"org/llama/config.json": _config()}
    _refused(_write(tmp_path, [_llama(downloads=1000)], files), r"org/llama: has unknown keys \['downloads'\]")
    path = _write(tmp_path, [_llama()], files)
    path.write_text(path.read_text() + '\n[extra]\nx = 1\n')
    _refused(path, r"has unknown tables \['extra'\]")


def test_a_malformed_checkpoint_catalog_stops_a_run_before_its_first_case(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, [_llama("org/b"), _llama("org/a")], {"org/b/config.json": _config(),
                                                                   "org/a/config.json": _config()})
    monkeypatch.setattr(preflight, "CHECKPOINTS_PATH", path)
    line = _second_entry_line(path)
    with pytest.raises(DataFileError, match=rf"^{path}:{line}: \[\[checkpoint\]\] #2 id: org/a: the entries must be "
                                            "sorted"):
        preflight.check_reviewed_data(catalog=None, known_failures=tmp_path / "none.toml",
                                      known_failures_required=False, scenario_names=())
