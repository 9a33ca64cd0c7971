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


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stand_ins.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_the_reviewed_list_is_valid_and_every_model_type_builds_here() -> None:
    from hf_neuron.tiny.transformers.model_types import generative_types

    entries = load_stand_ins(STAND_INS_PATH)
    assert {entry.kind for entry in entries} == {"model", "dataset"}
    assert [e.model_type for e in entries if e.kind == "model" and e.model_type not in generative_types()] == []


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
