"""Tiny local models, tokenizer, checkpoints and dataset: built from configs, offline, on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hf_neuron.compat import checkpoints
from hf_neuron.compat.tiny_overrides import load_overrides
from hf_neuron.tiny.dataset import examples, tiny_dataset
from hf_neuron.tiny.dataset import materialize as materialize_dataset
from hf_neuron.tiny.tokenizer import (
    BOS_TOKEN_ID,
    EOS_TOKEN_ID,
    PAD_TOKEN_ID,
    RESERVED_TOKEN_IDS,
    VOCAB_SIZE,
    tiny_tokenizer,
)
from hf_neuron.tiny.transformers.checkpoint import STAMP, materialize
from hf_neuron.tiny.transformers.config import checkpoint_base, model_fields, tiny_config, tiny_config_kwargs
from hf_neuron.tiny.transformers.cpu_check import check_text_model as probe
from hf_neuron.tiny.transformers.model_types import generative_type_of, generative_types
from hf_neuron.tiny.transformers.models import build_model
from hf_neuron.vocabulary.datafiles import DataFileError

#: Families the fast suite covers: dense rotary decoders, learned positions, GQA/MQA, MoE, sliding/hybrid
#: attention, MLA, state-space models and an attention/mamba hybrid.
SLICE = [
    "llama", "gpt2", "mistral", "qwen2", "qwen3_moe", "mixtral", "gemma2", "gemma3_text", "phi3",
    "falcon_mamba", "mamba", "jamba", "gpt_neox", "olmo2", "deepseek_v3", "granitemoe",
]
MAX_BYTES = 50 * 2**20


def _text(config):
    return config.get_text_config(decoder=True)


@pytest.mark.parametrize("model_type", SLICE)
def test_tiny_config_dimensions_agree(model_type: str) -> None:
    config = _text(tiny_config(model_type))
    assert config.vocab_size == VOCAB_SIZE
    assert config.hidden_size == 64
    assert 2 <= config.num_hidden_layers <= 4
    assert config._attn_implementation == "eager"
    for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
        value = getattr(config, name, None)  # a checkpoint's EOS may be a list (gemma-3-1b-it's [1, 106])
        assert all(0 <= token < VOCAB_SIZE for token in ([] if value is None else [value]
                                                         if isinstance(value, int) else value)), (name, value)
    heads = getattr(config, "num_attention_heads", None)
    if heads and model_type not in ("mamba", "falcon_mamba"):
        assert heads == 4
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        assert heads % kv_heads == 0
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None:
        assert len(layer_types) == config.num_hidden_layers
    if getattr(config, "max_position_embeddings", None) is not None:
        assert config.max_position_embeddings >= 256


@pytest.mark.parametrize("model_type", SLICE)
def test_tiny_model_forward_and_generate(model_type: str) -> None:
    model = build_model(model_type, seed=0)
    assert sum(p.numel() * p.element_size() for p in model.parameters()) < MAX_BYTES
    input_ids = torch.randint(8, VOCAB_SIZE, (2, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = model(input_ids=input_ids).logits
        generated = model.generate(input_ids=input_ids, max_new_tokens=4, min_new_tokens=4, do_sample=False)
    assert logits.shape == (2, 8, VOCAB_SIZE)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()
    assert generated.shape == (2, 12)
    assert torch.equal(generated[:, :8], input_ids)
    assert int(generated.max()) < VOCAB_SIZE


def test_weights_are_fixed_by_the_seed() -> None:
    first, again, other = (build_model("llama", seed=s).state_dict() for s in (0, 0, 1))
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not torch.equal(first["model.embed_tokens.weight"], other["model.embed_tokens.weight"])


def test_representative_layers_keep_every_layer_kind() -> None:
    assert tiny_config("gemma3_text").layer_types == ["sliding_attention", "full_attention"]
    assert set(tiny_config("jamba").layers_block_type) == {"mamba", "attention"}
    deepseek = tiny_config("deepseek_v3")
    assert (deepseek.num_hidden_layers, deepseek.first_k_dense_replace) == (2, 1)  # one dense, one MoE layer
    assert tiny_config("qwen3_next").layer_types == ["linear_attention", "full_attention"]
    assert tiny_config("recurrent_gemma").block_types == ["recurrent", "attention"]  # a cyclic pattern


@pytest.fixture
def class_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny models from their config classes' defaults: no catalogued checkpoint to start from."""
    monkeypatch.setattr(checkpoints, "tiny_base", lambda *args, **kwargs: None)


@pytest.mark.usefixtures("class_defaults")
def test_attention_kind_and_moe_sizes_are_kept() -> None:
    mistral, llama, mixtral = tiny_config("mistral"), tiny_config("llama"), tiny_config("mixtral")
    assert (mistral.num_attention_heads, mistral.num_key_value_heads) == (4, 2)  # GQA stays GQA
    assert llama.num_key_value_heads == llama.num_attention_heads == 4  # MHA stays MHA
    assert (mixtral.num_local_experts, mixtral.num_experts_per_tok) == (4, 2)
    deepseek = tiny_config("deepseek_v3")
    assert deepseek.qk_head_dim == deepseek.qk_nope_head_dim + deepseek.qk_rope_head_dim


def test_a_table_of_learned_positions_keeps_its_grid() -> None:
    vision = tiny_config("muse_glimmer").vision_config
    # a grid of positions, not a hidden width: the width rule made pos_emb_width 64 beside a height of 32, and the
    # model resamples the table as a square grid
    assert (vision.pos_emb_height, vision.pos_emb_width, vision.hidden_size) == (32, 32, 64)
    assert tiny_config("recurrent_gemma").lru_width == 64  # a width named "width" still shrinks (2560 in full)


def test_the_largest_image_a_tower_takes_is_the_tiny_processors_largest() -> None:
    radio = tiny_config("nemotron_h_omni").vision_config
    assert radio.max_img_size == 64  # 2048 made a 262144-position table: 16.8M of a 17.7M-parameter tiny model
    assert tiny_config("nemotron_h_omni").vision_config.image_size == 32  # the tower's own image size is not a maximum


def test_special_token_ids_move_inside_the_vocabulary() -> None:
    gpt2 = tiny_config("gpt2")
    assert (gpt2.bos_token_id, gpt2.eos_token_id) == (BOS_TOKEN_ID, EOS_TOKEN_ID)
    gemma3 = tiny_config("gemma3")
    assert gemma3.image_token_id in RESERVED_TOKEN_IDS
    assert gemma3.boi_token_index in RESERVED_TOKEN_IDS and gemma3.boi_token_index != gemma3.image_token_id


@pytest.mark.usefixtures("class_defaults")
def test_only_changed_fields_are_passed() -> None:
    kwargs = tiny_config_kwargs("gpt2")
    assert kwargs == {"vocab_size": VOCAB_SIZE, "n_positions": 512, "n_embd": 64, "n_layer": 2, "n_head": 4,
                      "bos_token_id": BOS_TOKEN_ID, "eos_token_id": EOS_TOKEN_ID, "pad_token_id": PAD_TOKEN_ID}


def test_a_tiny_model_starts_from_its_architectures_catalogued_checkpoint() -> None:
    """Llama's tiny model keeps what Llama 3.1's config.json sets and its class defaults leave out."""
    base = checkpoint_base("llama")
    first = checkpoints.tiny_base("llama")
    assert first is not None
    assert base == checkpoints.model_config(first) and base["rope_scaling"]["rope_type"] == "llama3"
    llama = tiny_config("llama")
    assert llama.rope_parameters["rope_type"] == "llama3" and llama.rope_parameters["factor"] == 8.0
    assert (llama.num_attention_heads, llama.num_key_value_heads) == (4, 2)  # Llama 3's GQA (32 / 8), shrunk
    assert (llama.hidden_size, llama.vocab_size, llama.tie_word_embeddings) == (64, VOCAB_SIZE, False)


def test_a_checkpoint_states_its_storage_the_model_is_built_without_it() -> None:
    stated = {"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8"}, "hidden_size": 8,
              "vision_config": {"dtype": "bfloat16", "depth": 2}}
    assert model_fields(stated) == {"hidden_size": 8, "vision_config": {"depth": 2}}
    config = tiny_config("qwen2_5_vl")  # its checkpoint's vision config states bfloat16, its rope is the legacy key
    assert config.vision_config.dtype in (None, "float32", torch.float32)
    text = config.text_config
    assert sum(text.rope_parameters["mrope_section"]) * 2 == text.hidden_size // text.num_attention_heads


def test_a_checkpoint_that_says_use_mtp_or_no_cache_still_decodes_as_its_generation_config_would() -> None:
    model = build_model("minimax_m2")
    assert model.config.use_mtp and not model.generation_config.use_mtp
    smollm3 = build_model("smollm3")  # its config.json was saved with use_cache false
    assert not smollm3.config.use_cache and smollm3.generation_config.use_cache


def test_a_generation_config_that_declares_no_cache_setting_is_given_none(tmp_path: Path) -> None:
    """DiffusionGemma's generation config declares no use_cache and refuses unknown keys when it loads: given one,
    the saved tiny model did not load ('Unexpected kwargs: use_cache')."""
    from transformers import AutoModelForImageTextToText

    from hf_neuron.tiny.image_text.config import tiny_image_text_config

    model = build_model("diffusion_gemma", config=tiny_image_text_config("diffusion_gemma"))
    assert "use_cache" not in vars(model.generation_config)
    model.save_pretrained(tmp_path)
    assert AutoModelForImageTextToText.from_pretrained(tmp_path).generation_config.pad_token_id == PAD_TOKEN_ID


def test_reviewed_and_explicit_overrides_apply() -> None:
    assert load_overrides()["dory"].config["n_input_layers"] == 1
    assert tiny_config("dory").n_input_layers == 1
    assert tiny_config("llama", {"num_hidden_layers": 3}).num_hidden_layers == 3


def test_a_draft_model_reads_its_target_s_outputs_one_position_a_row() -> None:
    from hf_neuron.tiny.transformers.drafter import draft
    from hf_neuron.tiny.transformers.inputs import model_inputs
    from hf_neuron.tiny.transformers.outputs import no_training_loss

    assistant = build_model("gemma4_assistant")
    ids = torch.randint(8, 512, (2, 12), generator=torch.Generator().manual_seed(0))
    inputs = model_inputs(assistant, ids)
    assert "input_ids" not in inputs  # its forward refuses to run without the target's outputs
    assert inputs["inputs_embeds"].shape == (2, 1, 2 * assistant.config.backbone_hidden_size)  # embedding + state
    assert inputs["position_ids"].tolist() == [[11], [11]]  # the last seen token's position
    assert {kind: keys.shape[2] for kind, (keys, _) in inputs["shared_kv_states"].items()} == {
        "sliding_attention": 12, "full_attention": 12}  # the target's keys of the whole prompt
    with torch.no_grad():
        assert assistant(**inputs).logits.shape == (2, 1, VOCAB_SIZE)
    drafted = draft(assistant, inputs, 3)
    assert drafted.tokens is not None and drafted.scores is not None
    assert drafted.tokens.shape == (2, 3) and drafted.scores.shape == (3, 2, VOCAB_SIZE)
    assert drafted.tokens[:, 0].tolist() == drafted.scores[0].argmax(-1).tolist()  # greedy at every step
    assert "takes no labels" in (no_training_loss(assistant) or "")
    llama = build_model("llama")  # a model that names no target reads the ids themselves
    assert set(model_inputs(llama, ids)) == {"input_ids"} and no_training_loss(llama) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[llama]\nconfig = { num_hidden_layers = 3 }\n", "1: [llama] reason: needs a non-empty string: why"),
        ('[llama]\nreason = "x"\nbuilds = false\n',
         "1: [llama]: unknown keys ['builds']; allowed: ['config', 'gap', 'reason', 'runs', 'target']"),
        ('[llama]\nreason = "x"\ntarget = 3\n', "1: [llama] target: must be the model type of the target model"),
        ('[llama]\nreason = "x"\nruns = "no"\n', "1: [llama] runs: must be true or false"),
        ("[llama\n", "1: not valid TOML"),
    ],
)
def test_malformed_overrides_name_the_file_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "tiny_overrides.toml"
    path.write_text(text)
    with pytest.raises(DataFileError) as error:
        load_overrides(path)
    assert str(error.value).startswith(f"{path}:{problem}")


def test_tokenizer_round_trips_text_and_has_the_special_tokens() -> None:
    tokenizer = tiny_tokenizer()
    text = "Hello, world! Ünïcödé 🙂 and code: x = torch.randn(2, 3)\n"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    assert len(tokenizer) == VOCAB_SIZE
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (
        PAD_TOKEN_ID, BOS_TOKEN_ID, EOS_TOKEN_ID)
    assert tiny_tokenizer().get_vocab() == tokenizer.get_vocab()


def test_chat_template_renders_and_masks_the_assistant_turn() -> None:
    tokenizer = tiny_tokenizer()
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert tokenizer.apply_chat_template(messages, tokenize=False) == (
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n")
    assert tokenizer.apply_chat_template(messages[:1], tokenize=False, add_generation_prompt=True).endswith(
        "<|im_start|>assistant\n")
    encoded = tokenizer.apply_chat_template(messages, return_dict=True, return_assistant_tokens_mask=True)
    masked = [i for i, m in zip(encoded["input_ids"], encoded["assistant_masks"], strict=True) if m]
    assert tokenizer.decode(masked) == "hello<|im_end|>"


def test_checkpoint_loads_offline_with_identical_weights(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    directory = materialize("qwen2", tmp_path / "qwen2")
    loaded = AutoModelForCausalLM.from_pretrained(directory).state_dict()
    expected = build_model("qwen2", seed=0).state_dict()
    assert loaded.keys() == expected.keys()
    assert all(torch.equal(loaded[k], expected[k]) for k in expected)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    assert len(tokenizer) == VOCAB_SIZE and tokenizer.chat_template is not None
    generation = GenerationConfig.from_pretrained(directory)
    assert (generation.pad_token_id, generation.eos_token_id) == (PAD_TOKEN_ID, EOS_TOKEN_ID)
    assert json.loads((directory / STAMP).read_text())["model_type"] == "qwen2"


def test_checkpoint_is_reused_when_its_content_key_matches(tmp_path: Path) -> None:
    directory = materialize("gpt2", tmp_path / "gpt2")
    weights = directory / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert materialize("gpt2", directory) == directory
    assert weights.stat().st_mtime_ns == before
    materialize("gpt2", directory, seed=1)
    assert weights.stat().st_mtime_ns != before
    assert json.loads((directory / STAMP).read_text())["seed"] == 1


def test_a_rebuild_leaves_the_checkpoint_a_reader_holds_intact(tmp_path: Path) -> None:
    directory = materialize("gpt2", tmp_path / "gpt2")
    held = directory.resolve()  # what a process that opened the checkpoint before the rebuild reads from
    weights = (held / "model.safetensors").read_bytes()
    materialize("gpt2", directory, seed=1)
    assert directory.resolve() != held
    assert (held / "model.safetensors").read_bytes() == weights
    assert json.loads((held / STAMP).read_text())["seed"] == 0
    assert json.loads((directory / STAMP).read_text())["seed"] == 1


def test_a_directory_written_by_an_older_version_is_moved_aside(tmp_path: Path) -> None:
    old = tmp_path / "gpt2"
    old.mkdir()
    (old / "config.json").write_text("{}")
    materialize("gpt2", old)
    assert old.is_symlink() and (old / STAMP).is_file()
    [aside] = tmp_path.glob(".gpt2.replaced-*")
    assert (aside / "config.json").read_text() == "{}"


@pytest.mark.slow
def test_concurrent_builders_of_one_checkpoint_all_succeed(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from hf_neuron.tiny.transformers.checkpoint import materialize; "
            "print(materialize('llama', Path(sys.argv[1])).resolve())")
    builders = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "llama")], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [builder.communicate(timeout=300) for builder in builders]
    assert [builder.returncode for builder in builders] == [0, 0, 0], [err for _, err in results]
    assert len({out.strip() for out, _ in results}) == 1
    assert sorted(p.name for p in tmp_path.iterdir() if "staging" in p.name or "link" in p.name) == []
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(tmp_path / "llama")


def test_composite_decoder_checkpoint_loads_through_the_auto_class(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    directory = materialize("emu3", tmp_path / "emu3")
    assert json.loads((directory / "config.json").read_text())["model_type"] == "emu3"
    model = AutoModelForCausalLM.from_pretrained(directory)
    assert type(model).__name__ == "Emu3ForCausalLM"
    # the loaded decoder's config is the text config, whose model type no auto mapping lists: the scenarios find the
    # group of the type the case loaded (they raised "'emu3_text_model' is not a model type of any transformers
    # group" in nightly-20261204, in every scenario of emu3 and mllama)
    assert model.config.model_type == "emu3_text_model"
    assert generative_type_of(model.config) == generative_types()["emu3"]
    assert generative_type_of(tiny_config("llama")) == generative_types()["llama"]


def test_a_config_of_no_generative_type_has_no_group() -> None:
    from transformers import BertConfig, CLIPVisionConfig

    assert generative_type_of(CLIPVisionConfig()) is None
    assert generative_type_of(BertConfig()) == generative_types()["bert"]


def test_dataset_files_load_with_datasets(tmp_path: Path) -> None:
    import datasets

    directory = materialize_dataset(tmp_path / "data")
    chats = datasets.load_dataset(str(directory))
    text = datasets.load_dataset(str(directory), "text")
    assert set(chats) == {"train", "test"} and chats["train"].column_names == ["messages"]
    assert chats["train"].num_rows + chats["test"].num_rows == len(examples()) >= 36
    assert text["train"]["text"][0] == (
        "Question: What is the capital of France?\nAnswer: The capital of France is Paris.")
    assert chats["train"].to_list() == tiny_dataset()["train"].to_list()


def test_every_chat_example_fits_the_chat_template() -> None:
    tokenizer = tiny_tokenizer()
    for row in examples("messages"):
        rendered = tokenizer.apply_chat_template(row["messages"], tokenize=False)
        assert rendered.count("<|im_end|>") == 3 and row["messages"][-1]["content"] in rendered
    with pytest.raises(ValueError, match="unknown dataset format 'csv'; choose one of messages, text"):
        examples("csv")  # type: ignore[arg-type]


@pytest.mark.slow
def test_every_causal_lm_type_builds_forwards_and_generates() -> None:
    reviewed = load_overrides()
    types = [t for t, found in generative_types().items() if found.group == "decoder"]
    failures = {}
    for model_type in types:
        result = probe(model_type)
        expected_to_fail = model_type in reviewed and not reviewed[model_type].runs
        if result.ok == expected_to_fail:
            failures[model_type] = f"{result.stage}: {result.error}"
        assert result.parameters * 4 < MAX_BYTES, model_type
    assert failures == {}


def test_a_check_reports_the_stage_it_failed_in_and_never_raises() -> None:
    from hf_neuron.tiny.transformers.cpu_check import CheckProgress, staged_check

    def body(progress: CheckProgress) -> None:
        progress.stage, progress.parameters = "forward", 12
        raise ValueError("the outputs are not finite")

    failed = staged_check("some-model", body)
    assert (failed.stage, failed.error, failed.parameters) == ("forward", "ValueError: the outputs are not finite", 12)
    assert staged_check("some-model", lambda progress: None).ok
    assert probe("no-such-model-type").stage == "config", "an unknown type fails where its config is made"


def test_a_model_that_trains_on_one_length_gets_its_prompt_padded_to_it() -> None:
    """Reformer's axial position embeddings refuse any training length but the product of their shape (nightly-20261204:
    "If training, make sure that config.axial_pos_shape factors ... multiply to sequence length" in reformer's train,
    lora and ddp, on the CPU too): the step pads the prompt to it, masked out of the attention and of the loss."""
    from hf_neuron.tiny.transformers.outputs import IGNORED_LABEL, training_inputs, training_length

    reformer = build_model("reformer", seed=0).train()
    assert training_length(reformer.config) == 128
    ids = torch.randint(8, 500, (2, 12))
    inputs = training_inputs(reformer, {"input_ids": ids})
    assert {key: tuple(value.shape) for key, value in inputs.items()} == dict.fromkeys(
        ("input_ids", "labels", "attention_mask"), (2, 128))
    assert torch.equal(inputs["input_ids"][:, :12], ids) and torch.equal(inputs["labels"][:, :12], ids)
    assert (inputs["labels"][:, 12:] == IGNORED_LABEL).all() and (inputs["attention_mask"][:, 12:] == 0).all()
    assert (inputs["input_ids"][:, 12:] == reformer.config.pad_token_id).all()
    assert torch.isfinite(reformer(**inputs).loss)
    with pytest.raises(ValueError, match="multiply to sequence length"):
        reformer(input_ids=ids, labels=ids)
    llama = build_model("llama", seed=0)
    assert training_length(llama.config) is None
    assert training_inputs(llama, {"input_ids": ids}).keys() == {"input_ids", "labels"}


def test_the_tiny_reformer_trains_on_the_length_trl_pads_to_on_neuron() -> None:
    """TRL pads every batch to a multiple of 128 on neuron (the CPU run takes the same): with 32 positions
    (nightly-20261206) every TRL case of reformer stopped at 'Sequence Length: 128 has to be less or equal than
    config.max_position_embeddings 32', on the CPU too."""
    from hf_neuron.matrix.scenarios.trl_trainers import NEURON_PAD_MULTIPLE
    from hf_neuron.tiny.transformers.outputs import training_length

    reformer = build_model("reformer", seed=0).train()
    assert training_length(reformer.config) == NEURON_PAD_MULTIPLE
    ids = torch.nn.functional.pad(torch.randint(8, 500, (2, 40)), (0, NEURON_PAD_MULTIPLE - 40))  # TRL's padded batch
    assert torch.isfinite(reformer(input_ids=ids, labels=ids).loss)


def test_a_diffusion_backbones_tiny_model_starts_from_a_checkpoint_of_the_pipeline_it_runs_in() -> None:
    """stable-cascade (the decoder) comes first in the catalog, but the matrix runs StableCascadeUNet in the prior's
    pipeline: its tiny model starts from stable-cascade-prior."""
    decoder, prior = checkpoints.tiny_base("StableCascadeUNet"), checkpoints.tiny_base("StableCascadeUNet",
                                                                                        "StableCascadePriorPipeline")
    assert decoder is not None and prior is not None
    assert (decoder.id, prior.id) == ("stabilityai/stable-cascade", "stabilityai/stable-cascade-prior")
    assert checkpoints.tiny_base("StableCascadeUNet", "NoSuchPipeline") == decoder  # none of it: the first
    prior_config = checkpoints.model_config(prior)
    assert checkpoint_base("StableCascadeUNet", pipeline="StableCascadePriorPipeline") == prior_config


def test_a_checkpoints_lists_of_token_ids_keep_only_ids_of_the_tiny_vocabulary() -> None:
    """whisper-tiny's config forces the decoder's tokens 2-4 to ids of its 51865-token vocabulary (50259...): kept,
    they index past the tiny embedding."""
    whisper = tiny_config("whisper", base={"model_type": "whisper", "forced_decoder_ids": [[1, 50259], [2, 5]],
                                           "suppress_tokens": [1, 2, 50361], "begin_suppress_tokens": [50257]})
    assert whisper.forced_decoder_ids == [[2, 5]] and whisper.suppress_tokens == [1, 2]
    assert whisper.begin_suppress_tokens is None
