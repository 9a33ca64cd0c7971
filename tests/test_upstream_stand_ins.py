"""Hub stand-ins: the reviewed list (``compat/upstream_stand_ins.toml``) and the offline cache built from it, which
``from_pretrained`` and ``load_dataset`` read by Hub id with nothing downloaded."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from _helpers import run

from hf_neuron.compat.upstream_stand_ins import STAND_INS_PATH, StandIn, load_stand_ins
from hf_neuron.errors import InputError
from hf_neuron.upstream.stand_ins import prepare, trl_formats
from hf_neuron.vocabulary.datafiles import DataFileError

MODEL = '[[model]]\nid = "{id}"\nmodel_type = "llama"\nsuites = ["peft"]\n'
UNET = '[[diffusers_model]]\nid = "{id}"\nclass = "UNet2DModel"\nsuites = ["diffusers"]\n'
#: A UNet2DConditionModel small enough to build in a test (diffusers' own tests' configuration of it).
TINY_UNET = {"block_out_channels": [4, 8], "norm_num_groups": 4, "cross_attention_dim": 8, "attention_head_dim": 2,
             "down_block_types": ["CrossAttnDownBlock2D", "DownBlock2D"], "layers_per_block": 1, "sample_size": 16,
             "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D"], "in_channels": 4, "out_channels": 4}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stand_ins.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_the_reviewed_list_is_valid_and_every_model_type_builds_here() -> None:
    from hf_neuron.tiny.transformers.model_types import generative_types

    entries = load_stand_ins(STAND_INS_PATH)
    assert {entry.kind for entry in entries} == {"model", "diffusers_model", "dataset"}
    assert [e.model_type for e in entries if e.kind == "model" and e.model_type not in generative_types()] == []


def test_every_diffusers_stand_in_names_a_model_class_and_its_constructor_arguments() -> None:
    import inspect

    import diffusers

    for entry in load_stand_ins(STAND_INS_PATH):
        if entry.kind == "diffusers_model":
            cls = getattr(diffusers, entry.model_class or "")
            assert issubclass(cls, diffusers.ModelMixin), entry.id
            assert set(entry.config) <= set(inspect.signature(cls.__init__).parameters), entry.id


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[[model]\n", ":1: not valid TOML"),
        ('[[weights]]\nid = "a/b"\n', r"unknown top-level key\(s\) weights"),
        (MODEL.format(id="a/b") + 'owner = "me"\n', r":1: \[\[model\]\] #1: unknown key\(s\) owner"),
        (MODEL.format(id="no-owner"), r"#1 id: 'no-owner' is not a Hub id 'owner/name'"),
        (MODEL.format(id="a/b").replace('["peft"]', '["vllm"]'), "#1 suites: must be a non-empty list of distinct"),
        (MODEL.format(id="a/b").replace('model_type = "llama"\n', ""), "#1: missing model_type"),
        (MODEL.format(id="b/b") + MODEL.format(id="a/b"), r"\[\[model\]\] tables \(by id\) must be sorted: 'a/b' comes "
                                                          "after 'b/b'"),
        (MODEL.format(id="a/b") + MODEL.format(id="a/b"), "id 'a/b' is listed twice"),
        ('[[dataset]]\nid = "a/b"\nsuites = ["trl"]\nmodel_type = "x"\n', "unknown key.*model_type"),
        (UNET.format(id="a/b"), r"\[\[diffusers_model\]\] #1: missing config"),
        (UNET.format(id="a/b") + 'subfolder = 16\n[diffusers_model.config]\n',
         "#1 subfolder: must be a non-empty string"),
        (UNET.format(id="a/b") + 'variant = ""\n[diffusers_model.config]\n', "#1 variant: must be a non-empty string"),
        (UNET.format(id="a/b") + 'config = 3\n', "#1 config: must be a table"),
        (MODEL.format(id="a/b") + UNET.format(id="a/b") + 'config = {}\n',
         r"\[\[diffusers_model\]\] id 'a/b' is listed twice \(also as a \[\[model\]\]\)"),
    ],
)
def test_a_malformed_list_names_the_file_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(DataFileError, match=problem) as error:
        load_stand_ins(path)
    assert str(error.value).startswith(str(path))


def test_a_missing_list_has_no_stand_in(tmp_path: Path) -> None:
    assert load_stand_ins(tmp_path / "none.toml") == ()


def test_an_unknown_model_type_or_recipe_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="model_type 'llama-9000' is not a generative model type"):
        prepare([StandIn("model", "a/b", ("peft",), model_type="llama-9000")], "peft", tmp_path / "b", tmp_path / "h")
    with pytest.raises(InputError, match="no dataset recipe 'imagenet'"):
        prepare([StandIn("dataset", "a/c", ("trl",), recipe="imagenet")], "trl", tmp_path / "b", tmp_path / "h2")


def test_a_diffusers_class_that_is_not_a_model_or_a_config_it_refuses_stops_the_run(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="class 'DDPMScheduler' is not a model class of the installed diffusers"):
        prepare([StandIn("diffusers_model", "a/b", ("diffusers",), model_class="DDPMScheduler")], "diffusers",
                tmp_path / "b", tmp_path / "h", progress=lambda line: None)
    with pytest.raises(InputError, match="UNet2DModel does not build from its config"):
        prepare([StandIn("diffusers_model", "a/c", ("diffusers",), model_class="UNet2DModel",
                         config={"no_such_argument": 1})], "diffusers", tmp_path / "b", tmp_path / "h2",
                progress=lambda line: None)


def test_a_diffusers_stand_in_is_served_in_its_subfolder_shards_and_variant(tmp_path: Path) -> None:
    entries = [StandIn("diffusers_model", "hf-internal-testing/unet-sharded", ("diffusers",),
                       model_class="UNet2DConditionModel", config=TINY_UNET, subfolder="unet", max_shard_size="20KB"),
               StandIn("diffusers_model", "hf-internal-testing/unet-fp16", ("diffusers",),
                       model_class="UNet2DConditionModel", config=TINY_UNET, variant="fp16")]
    cache = prepare(entries, "diffusers", tmp_path / "build", tmp_path / "home", progress=lambda line: None)
    code = """
        import os
        from diffusers import UNet2DConditionModel
        from huggingface_hub import snapshot_download
        path = snapshot_download("hf-internal-testing/unet-sharded")
        model, info = UNet2DConditionModel.from_pretrained(path, subfolder="unet", local_files_only=True,
                                                           output_loading_info=True)
        files = os.listdir(os.path.join(path, "unet"))
        print(model.config.block_out_channels, info["missing_keys"],
              "diffusion_pytorch_model.safetensors.index.json" in files,
              sum(name.endswith(".safetensors") for name in files) > 1)
        try:
            UNet2DConditionModel.from_pretrained(path, local_files_only=True)
        except OSError:
            print("not outside its subfolder")
        UNet2DConditionModel.from_pretrained("hf-internal-testing/unet-fp16", variant="fp16")
        try:
            UNet2DConditionModel.from_pretrained("hf-internal-testing/unet-fp16")
        except OSError:
            print("its weights carry the variant's name")
    """
    done = run(textwrap.dedent(code), env=cache.environment())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["[4, 8] [] True True", "not outside its subfolder",
                                            "its weights carry the variant's name"]
    again = prepare(entries, "diffusers", tmp_path / "build", tmp_path / "home2", progress=lambda line: None)
    assert again.ids == cache.ids
    assert len(list((tmp_path / "build" / "diffusers").iterdir())) == 2  # built once, placed twice


def test_every_trl_format_has_train_and_test_rows_of_its_columns() -> None:
    formats = trl_formats()
    assert formats["standard_preference"]["train"][0].keys() == {"prompt", "chosen", "rejected"}
    assert formats["conversational_language_modeling"]["test"][0]["messages"][0]["role"] == "user"
    assert {len(splits["train"]) for splits in formats.values()} == {17}
    assert {len(splits["test"]) for splits in formats.values()} == {2}
    rows = formats["standard_unpaired_preference"]["train"]
    assert {row["label"] for row in rows} == {True, False}


def test_the_offline_cache_serves_a_model_and_a_dataset_by_hub_id(tmp_path: Path) -> None:
    entries = [StandIn("model", "trl-internal-testing/tiny-random-LlamaForCausalLM", ("trl",), model_type="llama"),
               StandIn("model", "peft-internal-testing/only-for-peft", ("peft",), model_type="opt"),
               StandIn("dataset", "trl-internal-testing/zen", ("trl",), recipe="trl-formats")]
    cache = prepare(entries, "trl", tmp_path / "build", tmp_path / "home", progress=lambda line: None)
    assert set(cache.ids.values()) == {"trl-internal-testing/tiny-random-LlamaForCausalLM", "trl-internal-testing/zen"}
    code = """
        from datasets import load_dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer
        model = AutoModelForCausalLM.from_pretrained("trl-internal-testing/tiny-random-LlamaForCausalLM")
        tokenizer = AutoTokenizer.from_pretrained("trl-internal-testing/tiny-random-LlamaForCausalLM")
        rows = load_dataset("trl-internal-testing/zen", "conversational_prompt_completion", split="train")
        print(type(model).__name__, len(tokenizer) == model.config.vocab_size, rows.num_rows,
              sorted(rows.column_names))
        try:
            AutoModelForCausalLM.from_pretrained("peft-internal-testing/only-for-peft")
        except OSError:
            print("not placed for trl")
    """
    done = run(textwrap.dedent(code), env=cache.environment())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["LlamaForCausalLM True 17 ['completion', 'prompt']", "not placed for trl"]
    built = sorted(path.name for path in (tmp_path / "build").rglob("*") if path.parent.parent == tmp_path / "build")
    again = prepare(entries, "trl", tmp_path / "build", tmp_path / "home2", progress=lambda line: None)
    assert again.ids == cache.ids
    assert sorted(path.name for path in (tmp_path / "build").rglob("*")
                  if path.parent.parent == tmp_path / "build") == built  # built once, placed twice
