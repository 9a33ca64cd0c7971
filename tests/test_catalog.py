"""The architecture catalog and the ranking: generated from transformers, validated on load, diffed, refreshed."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hf_neuron.cli.matrix import catalog_generate as main_generate
from hf_neuron.cli.matrix import ranking_refresh as main_refresh
from hf_neuron.compat.catalog import Catalog, CatalogEntry, diff_catalogs, load_catalog, write_catalog
from hf_neuron.compat.ranking import RankEntry, load_ranking, write_ranking
from hf_neuron.compat.tiny_image_text import load_image_text
from hf_neuron.compat.tiny_overrides import load_overrides
from hf_neuron.matrix.catalog.generate import generate_catalog, unreviewed
from hf_neuron.matrix.catalog.hub_ranking import HubUnreachableError, refresh_ranking
from hf_neuron.tiny.groups import CpuCheck, group_models
from hf_neuron.tiny.transformers.model_types import generative_types, types_of
from hf_neuron.vocabulary.datafiles import DataFileError
from hf_neuron.vocabulary.groups import GroupDeclaration

FIXTURE = Path(__file__).parent / "fixtures" / "ranking" / "hub_list_models.json"
TODAY = datetime.date(2026, 1, 2)


def _entry(model_type: str, **changes: Any) -> CatalogEntry:
    entry = CatalogEntry(model_type, "decoder", f"{model_type.title()}ForCausalLM", f"{model_type.title()}Config",
                         True, True, None)
    return dataclasses.replace(entry, **changes)


def test_generated_entries_name_group_classes_and_probe_results() -> None:
    catalog = generate_catalog(types=["t5", "llama", "llava", "gpt2"], today=TODAY)
    assert catalog.generated == "2026-01-02"
    assert [(e.model_type, e.group) for e in catalog.entries] == [
        ("gpt2", "decoder"), ("llama", "decoder"), ("t5", "encoder-decoder"), ("llava", "image-text")]
    llama = catalog.by_type()["llama"]
    assert (llama.model_class, llama.config_class, llama.builds, llama.runs, llama.reason) == (
        "LlamaForCausalLM", "LlamaConfig", True, True, None)
    llava = catalog.by_type()["llava"]
    assert (llava.builds, llava.runs, llava.reason) == (True, True, None)  # run with images by the probe
    assert llava.tiny is not None and llava.tiny.startswith("text llama: layers 2, width 64")
    assert "vision clip_vision_model: layers 2, width 64, heads 4, image 32, patch 4" in llava.tiny
    assert llama.tiny is None  # the text groups do not record it


def test_reviewed_runs_false_supplies_the_reason() -> None:
    entry = generate_catalog(types=["gemma3n"]).entries[0]  # its timm vision tower does not build here
    assert (entry.group, entry.builds, entry.runs, entry.gap) == ("decoder", False, False, "tiny-build")
    assert entry.reason.startswith("The vision tower (MobileNetV5")  # the reviewed reason, not the ImportError


def test_a_reviewed_image_text_runs_false_supplies_the_reason_and_the_gap() -> None:
    entry = generate_catalog(types=["molmo2"]).entries[0]  # its image processor is built only on torchvision
    assert (entry.group, entry.runs, entry.gap) == ("image-text", False, "tiny-build")
    assert entry.reason is not None and entry.reason.startswith("transformers 5.24.0 ships Molmo2ImageProcessor")


def test_a_policy_s_catalog_check_holds_its_velocity_to_the_actions_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """pi0 runs (its drawn state, noise and timestep; logits of its actions' shape); held to a vocabulary's shape,
    as the check was before its labels were reviewed, its velocity fails."""
    from hf_neuron.tiny.image_text import cpu_check

    assert cpu_check.check_image_text_model("pi0").ok
    monkeypatch.setattr(cpu_check, "logits_shape", lambda config, recipe, inputs: (2, 36, 1024))
    check = cpu_check.check_image_text_model("pi0", until="forward")
    assert (check.stage, check.error) == ("forward", "AssertionError: logits shape (2, 16, 32) != (2, 36, 1024)")


@pytest.mark.parametrize(("stage", "gap"), [("config", "tiny-build"), ("build", "tiny-build"),
                                           ("forward", "inputs"), ("generate", "inputs")])
def test_an_unreviewed_cpu_failure_is_the_harness_s_with_the_gap_of_its_stage(stage: str, gap: str) -> None:
    reviewed = unreviewed(CpuCheck("x", stage, "ValueError: no"))
    assert reviewed.gap == gap
    assert reviewed.reason == f"CPU check failed (unreviewed, the harness's until reviewed): {stage}: ValueError: no"


def test_a_failing_type_nothing_reviewed_takes_the_harness_s_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    # fast_vlm's vision tower needs timm, which does not install here; its reviewed reason is taken away
    monkeypatch.setattr(group_models("image-text"), "reviewed", lambda name: None)
    entry = generate_catalog(types=["fast_vlm"]).entries[0]
    assert (entry.builds, entry.runs, entry.gap) == (False, False, "tiny-build")
    assert entry.reason is not None and entry.reason.startswith("CPU check failed (unreviewed")
    assert "timm" in entry.reason


def test_every_committed_cpu_failure_has_a_gap_or_a_reviewed_reason_that_it_is_the_model_s() -> None:
    unexplained = [entry.model_type for entry in load_catalog().entries
                   if entry.runs is False and entry.gap is None
                   and group_models(entry.group).reviewed(entry.model_type) is None]
    assert unexplained == [], "regenerate: hf-neuron matrix catalog --generate (unreviewed failures take a gap)"


def test_every_generative_type_loads_with_its_groups_auto_class() -> None:
    """transformers' own lookup decides: a type its mapping lists but its auto class refuses is in no group (evolla:
    transformers finds EvollaConfig's model type as 'EvollaModel', which no generative mapping lists)."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    types = generative_types()
    refused = [model_type for model_type, found in types.items()
               if CONFIG_MAPPING[model_type] not in getattr(transformers, found.auto_class)._model_mapping]
    assert refused == []
    assert "evolla" not in types and {"llava", "blip", "pi0"} <= set(types)


def test_a_group_leaves_the_types_of_the_mappings_it_names_to_the_groups_that_list_them() -> None:
    """transformers' multimodal-LM mapping lists every image-text-to-text type and the audio-text ones: a group declared
    first that reads it claims the image-text types, unless it leaves their mapping to the group that lists it."""
    multimodal = GroupDeclaration("decoder", "reads the multimodal-LM mapping", "transformers", "m",
                                  (("MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES", "AutoModelForMultimodalLM"),))
    image_text = GroupDeclaration("image-text", "image-text", "transformers", "m",
                                  (("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "AutoModelForImageTextToText"),))
    claimed = types_of((multimodal, image_text))
    assert claimed["llava"].group == "decoder" and claimed["qwen2_audio"].group == "decoder"
    leaving = dataclasses.replace(multimodal, leaves=("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",))
    left = types_of((leaving, image_text))
    assert left["llava"] == ("image-text", "LlavaForConditionalGeneration", "AutoModelForImageTextToText")
    assert left["qwen2_audio"] == ("decoder", "Qwen2AudioForConditionalGeneration", "AutoModelForMultimodalLM")
    assert set(left) == set(claimed)


def test_every_causal_lm_type_is_in_the_decoder_group_but_the_audio_groups_and_decoder_comes_after_audio() -> None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    catalog = generate_catalog(run_models=False)
    audio = [entry.model_type for entry in catalog.group("audio")]
    decoder = [entry.model_type for entry in catalog.group("decoder")]
    assert decoder == sorted(set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) - set(audio))
    assert {"whisper", "musicgen"} <= set(audio) & set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    assert [entry.model_type for entry in catalog.entries[: len(audio) + len(decoder)]] == audio + decoder
    with pytest.raises(KeyError, match=r"not model types of any group \(transformers .*\): \['bert_tokenizer'\]"):
        generate_catalog(types=["bert_tokenizer"], run_models=False)


def test_committed_catalog_matches_the_installed_libraries() -> None:
    import diffusers
    import transformers

    catalog = load_catalog()
    assert catalog.transformers == transformers.__version__, "regenerate: hf-neuron matrix catalog --generate"
    assert catalog.diffusers == diffusers.__version__, "regenerate: hf-neuron matrix catalog --generate"
    assert {e.model_type for e in catalog.entries if e.group != "diffusion"} == set(generative_types())
    assert all(entry.builds and entry.runs for entry in catalog.group("decoder") if entry.reason is None)
    by_type = catalog.by_type()
    stale = [table.model_type for table in (*load_overrides().values(), *load_image_text().values())
             if not table.runs and table.model_type in by_type and by_type[table.model_type].runs is False
             and (by_type[table.model_type].gap, by_type[table.model_type].reason) != (table.gap, table.reason)]
    assert stale == [], "regenerate: hf-neuron matrix catalog --generate (the reviewed reasons and gaps changed)"


def test_the_diffusion_group_is_every_denoiser_backbone_diffusers_exports() -> None:
    from hf_neuron.tiny.diffusion.backbones import backbone_names

    catalog = generate_catalog(run_models=False)
    diffusion = catalog.group("diffusion")
    assert [entry.model_type for entry in diffusion] == list(backbone_names())
    assert catalog.entries[-len(diffusion):] == tuple(diffusion)  # after the transformers groups
    assert {"UNet2DConditionModel", "UNet2DModel", "SD3Transformer2DModel", "FluxTransformer2DModel",
            "PixArtTransformer2DModel", "DiTTransformer2DModel"} <= set(backbone_names())
    assert not {"AutoencoderKL", "ControlNetModel", "MotionAdapter"} & set(backbone_names())
    committed = load_catalog()
    assert [e.model_type for e in committed.group("diffusion")] == list(backbone_names())


def test_catalog_file_round_trips_one_architecture_per_line(tmp_path: Path) -> None:
    catalog = Catalog("5.24.0", "0.42.1", "2026-01-02", (_entry("alpha"), _entry("beta", runs=False, reason="why")))
    path = write_catalog(catalog, tmp_path / "catalog.json")
    assert load_catalog(path) == catalog
    lines = path.read_text().splitlines()
    assert lines[:4] == ["{", '  "schema": 1,', '  "transformers": "5.24.0",', '  "diffusers": "0.42.1",']
    assert sum('"model_type"' in line for line in lines) == 2
    assert lines[-4].startswith('    {"model_type": "alpha"') and lines[-3].startswith('    {"model_type": "beta"')


def test_diff_names_new_removed_and_changed_types() -> None:
    before = Catalog("5.23.0", "0.42.1", "2026-01-01", (_entry("alpha"), _entry("beta")))
    after = Catalog("5.24.0", "0.42.1", "2026-01-02", (_entry("beta", runs=False, reason="broke"), _entry("gamma")))
    diff = diff_catalogs(before, after)
    assert (diff.added, diff.removed) == (("gamma",), ("alpha",))
    assert diff.describe() == (
        "transformers 5.23.0 -> 5.24.0\n+ gamma\n- alpha\n~ beta: runs True -> False\n~ beta: reason None -> 'broke'")
    assert diff_catalogs(before, dataclasses.replace(before, diffusers="0.43.0")).describe() == \
        "diffusers 0.42.1 -> 0.43.0"
    same = dataclasses.replace(before, generated="2030-01-01")
    assert not diff_catalogs(before, same) and diff_catalogs(before, same).describe() == "catalog unchanged"


def _catalog_text(rows: Any, **header: Any) -> str:
    return json.dumps({"schema": 1, "transformers": "5.24.0", "diffusers": "0.42.1", "generated": "2026-01-02",
                       **header, "architectures": rows})


def test_the_tiny_summary_is_written_only_where_known_and_read_back(tmp_path: Path) -> None:
    summary = "text llama: layers 2; vision clip_vision_model: image 32"
    entries = (_entry("llama"), dataclasses.replace(_entry("llava"), group="image-text", tiny=summary))
    path = write_catalog(Catalog("5.24.0", "0.42.1", "2026-01-01", entries), tmp_path / "catalog.json")
    lines = path.read_text().splitlines()
    assert '"tiny"' not in next(line for line in lines if '"llama"' in line)  # text rows keep their shape
    assert load_catalog(path).by_type()["llava"].tiny == summary and load_catalog(path).by_type()["llama"].tiny is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        (_catalog_text([], schema=2), "schema must be 1, got 2"),
        (_catalog_text({}), "'architectures' must be a list"),
        (_catalog_text([{"model_type": "a", "group": "decoder"}]),
         "architectures[0] misses ['model_class', 'config_class', 'builds', 'runs']"),
        (_catalog_text([{**dataclasses.asdict(_entry("a")), "group": "vision"}]),
         "architectures[0] (a) has unknown group 'vision'; groups are audio, decoder, encoder-decoder, image-text, "
         "diffusion"),
        (_catalog_text([{**dataclasses.asdict(_entry("a")), "runs": "yes"}]),
         "architectures[0].runs must be true, false or null, got 'yes'"),
        (_catalog_text([dataclasses.asdict(_entry("a")), dataclasses.asdict(_entry("a"))]),
         "duplicate model_type 'a' (architectures[0] and [1])"),
        (_catalog_text([{**dataclasses.asdict(_entry("a")), "tiny": 3}]),
         "architectures[0].tiny must be a string or null"),
    ],
)
def test_malformed_catalog_names_the_file_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(text)
    with pytest.raises(DataFileError) as error:
        load_catalog(path)
    assert str(error.value) == f"{path}: {problem}"


def test_main_generate_checks_then_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "catalog.json"
    write_catalog(Catalog("5.0.0", "0.42.1", "2026-01-01", (_entry("llama"), _entry("gone"))), path)
    assert main_generate(path, check=True, run_models=False) == 1
    assert load_catalog(path).transformers == "5.0.0"  # --check writes nothing
    out = capsys.readouterr().out
    assert "- gone\n" in out and "+ gpt2\n" in out
    assert main_generate(path, run_models=False) == 0
    assert main_generate(path, check=True, run_models=False) == 0
    path.write_text("[")
    with pytest.raises(DataFileError, match=f"^{path}: not valid JSON"):
        main_generate(path, check=True, run_models=False)


def test_regenerating_a_group_takes_the_types_that_moved_into_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A type another group held before (whisper was a decoder before the audio group claimed it) is regenerated in
    the group that holds it now, once: the catalog diff says its group changed."""
    from hf_neuron.matrix.catalog import generate

    path = tmp_path / "catalog.json"
    write_catalog(Catalog("5.0.0", "0.42.1", "2026-01-01", (_entry("llama"), _entry("gpt2"))), path)
    found = generate.catalog_types()
    moved = {**found, "llama": ("encoder-decoder", found["llama"][1])}
    monkeypatch.setattr(generate, "catalog_types", lambda: moved)
    assert main_generate(path, run_models=False, groups=["encoder-decoder"]) == 0
    entries = load_catalog(path).by_type()
    assert entries["llama"].group == "encoder-decoder" and entries["gpt2"].group == "decoder"
    assert "~ llama: group 'decoder' -> 'encoder-decoder'" in capsys.readouterr().out


def test_committed_ranking_loads_and_names_known_types() -> None:
    ranking = load_ranking()
    assert [entry.rank for entry in ranking] == list(range(1, len(ranking) + 1))
    assert {entry.model_type for entry in ranking} <= set(generative_types())
    assert ranking[0].source.startswith(("seed: hand-assembled", "hub "))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("model_type,rank\nllama,1\n", "the header must be model_type,rank,source, got 'model_type,rank'"),
        ("model_type,rank,source\nllama,first,x\n", "line 2: rank must be a positive integer, got 'first'"),
        ("model_type,rank,source\nllama,1,x\nllama,2,x\n", "line 3: model_type 'llama' is empty or listed twice"),
        ("model_type,rank,source\nllama,1\n", "line 2: expected 3 fields, got 2"),
        ("model_type,rank,source\nllama,1, \n", "line 2: source must say where the rank comes from"),
    ],
)
def test_malformed_ranking_names_the_file_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "ranking.csv"
    path.write_text(text)
    with pytest.raises(DataFileError) as error:
        load_ranking(path)
    assert str(error.value) == f"{path}: {problem}"


def _recorded_hub(calls: list[dict[str, Any]]):
    from huggingface_hub.hf_api import ModelInfo

    def list_models(**kwargs: Any) -> Iterator[ModelInfo]:
        calls.append(kwargs)
        rows = json.loads(FIXTURE.read_text())["response"]
        return iter(ModelInfo(**row) for row in rows[: kwargs["limit"]])

    return list_models


def test_refresh_ranks_types_by_downloads_from_a_recorded_hub_answer() -> None:
    calls: list[dict[str, Any]] = []
    ranking = refresh_ranking(limit=8, list_models=_recorded_hub(calls), today=TODAY)
    assert calls == [{"pipeline_tag": "text-generation", "sort": "downloads", "limit": 8,
                      "expand": ["config", "downloads", "tags"]}]
    # qwen2 14M > llama 11M > gpt2 6M > mistral 3M (type from tags: no config); chatglm (remote code) and the
    # GGUF-only repo map to no known type and are left out.
    assert [(e.model_type, e.rank) for e in ranking] == [("qwen2", 1), ("llama", 2), ("gpt2", 3), ("mistral", 4)]
    assert ranking[0].source == "hub 2026-01-02: 2 of the top 8 text-generation models, 14000000 downloads"


def test_refresh_writes_the_file_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "ranking.csv"
    assert main_refresh(path, limit=8, list_models=_recorded_hub([])) == 0
    assert [e.model_type for e in load_ranking(path)] == ["qwen2", "llama", "gpt2", "mistral"]
    entries = [RankEntry("llama", 1, "seed, with a comma")]
    assert load_ranking(write_ranking(entries, path)) == entries


def test_refresh_offline_fails_cleanly_and_keeps_the_file(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ranking.csv"
    path.write_text("model_type,rank,source\nllama,1,seed\n")
    with pytest.raises(HubUnreachableError, match="cannot list models on the Hugging Face Hub"):
        refresh_ranking(limit=3)  # the real client: HF_HUB_OFFLINE=1 in the tests
    assert main_refresh(path, limit=3) == 2
    assert capsys.readouterr().err.startswith("error: cannot list models on the Hugging Face Hub (")
    assert path.read_text() == "model_type,rank,source\nllama,1,seed\n"
