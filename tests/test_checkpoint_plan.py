"""A checkpoint read and planned at full size without allocating: where its config is found (and every bad input's
message), its parameters (total, active per token), memory by use, and the NeuronCores that hold it.

The published counts of well-known checkpoints are held to 1% in ``tests/test_compat_checkpoints.py``'s catalog
checks; here each formula is held to a count worked out by hand on a config, and each rule to the input that breaks
it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hf_neuron.checkpoint.instances import GIB, placement
from hf_neuron.checkpoint.plan import plan, routed_experts
from hf_neuron.checkpoint.quantization import METHODS, quantization
from hf_neuron.checkpoint.source import resolve
from hf_neuron.compat.hardware import trainium_families
from hf_neuron.errors import InputError

#: Llama-3.1-8B's config (meta-llama/Llama-3.1-8B), 8,030,261,248 parameters.
LLAMA_3_1_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000, "eos_token_id": 128001,
    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072,
    "mlp_bias": False, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": False,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "torch_dtype": "bfloat16", "vocab_size": 128256,
}
#: Mixtral-8x7B's shape: 8 experts, 2 a token.
MIXTRAL: dict[str, Any] = {
    "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2,
    "vocab_size": 32000, "max_position_embeddings": 32768, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
}


def _config(tmp_path: Path, config: dict[str, Any], name: str = "model") -> Path:
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_config_file_a_folder_and_its_name(tmp_path: Path) -> None:
    folder = _config(tmp_path, {**LLAMA_3_1_8B, "_name_or_path": "meta-llama/Llama-3.1-8B"}, "llama")
    by_folder, by_file = resolve(str(folder)), resolve(str(folder / "config.json"))
    assert by_folder == by_file
    assert (by_folder.name, by_folder.architecture, by_folder.group, by_folder.dtype) == (
        "meta-llama/Llama-3.1-8B", "llama", "decoder", "bfloat16")
    assert resolve(str(_config(tmp_path, LLAMA_3_1_8B, "unnamed"))).name == "unnamed"


def test_a_hub_id_is_found_in_the_local_cache_and_never_downloaded(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    snapshot = tmp_path / "models--org--tiny" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(LLAMA_3_1_8B))
    (tmp_path / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "models--org--tiny" / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    found = resolve("org/tiny")
    assert (found.name, found.path) == ("org/tiny", snapshot / "config.json")
    with pytest.raises(InputError, match=r"'org/absent' is not a file or folder here, and the Hub id is not in the "
                                         r"local Hugging Face cache .*never downloads: fetch its config"):
        resolve("org/absent")


@pytest.mark.parametrize(("content", "message"), [
    (None, r"no such file or folder"),
    ("{not json", r"not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
    ("[1, 2]", r"a config is a JSON object, this file holds a list"),
    ('{"hidden_size": 8}', r"the config has no model_type"),
    ('{"model_type": "no_such_type"}', r"model_type 'no_such_type' is not a model type of the installed transformers"),
    ('{"model_type": "vit"}', r"model_type 'vit' is a model type transformers knows, but not a generative one"),
    ('{"_class_name": "NoSuchNet"}', r"'NoSuchNet' is not a denoiser backbone of diffusers"),
    ('{"model_type": "llava", "language_config": {"hidden_size": 8}}',
     r"transformers' LlavaConfig has no sub-config language_config: it would ignore them and build its class defaults"),
])
def test_bad_input_says_what_was_wrong(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InputError, match=message):
        resolve(str(path if content is not None else tmp_path / "absent.json"))


def test_a_diffusers_pipeline_is_read_through_its_denoiser(tmp_path: Path) -> None:
    (tmp_path / "model_index.json").write_text(json.dumps({
        "_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.6.0",
        "unet": ["diffusers", "UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"]}))
    with pytest.raises(InputError, match=r"names the denoiser 'unet', but its config is not beside it"):
        resolve(str(tmp_path))
    (tmp_path / "unet").mkdir()
    (tmp_path / "unet" / "config.json").write_text(json.dumps({"_class_name": "UNet2DConditionModel",
                                                               "cross_attention_dim": 768}))
    found = resolve(str(tmp_path))
    assert (found.library, found.architecture, found.group, found.component, found.path) == (
        "diffusers", "UNet2DConditionModel", "diffusion", "unet", tmp_path / "unet" / "config.json")
    assert plan(found).parameters == 859_520_964  # Stable Diffusion 1.x's UNet: the defaults, text states of 768


def test_parameters_count_tied_weights_once_and_the_kv_cache_by_hand(tmp_path: Path) -> None:
    found = plan(resolve(str(_config(tmp_path, LLAMA_3_1_8B))), seq=4096, batch=1)
    assert found.parameters == 8_030_261_248 and found.active_parameters is None
    # 32 layers x (keys + values) x 8 heads x 128 dims x 4096 tokens x 2 bytes
    assert found.memory.kv_cache == 32 * 2 * 8 * 128 * 4096 * 2
    assert found.memory.weights == 8_030_261_248 * 2 and found.dtype == "bfloat16"
    assert found.memory.inference == found.memory.weights + found.memory.kv_cache
    assert found.memory.full_fine_tune == 16 * 8_030_261_248 + found.memory.activations
    tied = plan(resolve(str(_config(tmp_path, {**LLAMA_3_1_8B, "tie_word_embeddings": True}, "tied"))))
    assert found.parameters - tied.parameters == 128256 * 4096


def test_the_sequence_stays_inside_the_position_limit(tmp_path: Path) -> None:
    short = plan(resolve(str(_config(tmp_path, {**LLAMA_3_1_8B, "max_position_embeddings": 1024}))), seq=4096)
    assert short.seq == 1024 and short.memory.kv_cache == 32 * 2 * 8 * 128 * 1024 * 2


def test_a_sliding_window_caps_its_layers_cache(tmp_path: Path) -> None:
    config = {**LLAMA_3_1_8B, "model_type": "mistral", "sliding_window": 1024, "rope_scaling": None}
    windowed = plan(resolve(str(_config(tmp_path, config))), seq=4096)
    assert windowed.memory.kv_cache == 32 * 2 * 8 * 128 * 1024 * 2


def test_active_parameters_of_a_mixture_of_experts(tmp_path: Path) -> None:
    found = plan(resolve(str(_config(tmp_path, MIXTRAL))))
    experts = 32 * 8 * 3 * 4096 * 14336
    assert found.parameters == 46_702_792_704
    assert found.active_parameters == found.parameters - experts * 6 // 8  # 12.9 B, as published
    dense = plan(resolve(str(_config(tmp_path, {**MIXTRAL, "num_local_experts": 1, "num_experts_per_tok": 1}, "d"))))
    assert dense.active_parameters is None, "one expert is no mixture"


def test_routed_experts_leave_shared_experts_out(tmp_path: Path) -> None:
    from hf_neuron.checkpoint.plan import meta_model

    model = meta_model(resolve(str(_config(tmp_path, {
        "model_type": "qwen2_moe", "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 64, "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 256}))))
    names = [name for name, _, experts in routed_experts(model)]
    assert names and all(".experts" in name and "shared" not in name for name in names)
    assert {experts for _, _, experts in routed_experts(model)} == {8}


def test_neuron_cores_by_instance_family() -> None:
    trn2, trn3 = trainium_families()
    assert (trn2.name, trn2.device_bytes, trn3.name, trn3.device_bytes) == ("trn2", 24 * GIB, "trn3", 36 * GIB)
    assert placement(1, trn2) == placement(24 * GIB, trn2) == (1, 1, 1)
    assert placement(24 * GIB + 1, trn2).cores == 2
    assert placement(97 * GIB, trn2)[:2] == (5, 2)
    assert placement(16 * 96 * GIB + 1, trn2).instances == 2  # one chip more than a trn2.48xlarge has
    assert placement(100 * GIB, trn3) == (3, 1, None)  # no trn3 instance in the facts


def test_the_attention_width_counts_keys_and_values_of_the_attention_layers(tmp_path: Path) -> None:
    found = plan(resolve(str(_config(tmp_path, LLAMA_3_1_8B))))
    assert found.attention_width == 32 * 32 * 2 * 128  # 32 layers, 32 heads, keys and values of 128
    mamba = plan(resolve(str(_config(tmp_path, {
        "model_type": "mamba", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 256}, "mamba"))))
    assert mamba.attention_width == 0


def test_quantization_verdicts_name_their_method() -> None:
    assert quantization(None) is None
    fp8 = quantization({"quant_method": "fp8", "weight_block_size": [128, 128]})
    assert fp8 is not None and (fp8.method, fp8.verdict) == ("fp8", "runs-dequantized")
    gptq = quantization({"quant_method": "gptq", "bits": 4})
    assert gptq is not None and gptq.verdict == "not-runnable" and "gptqmodel" in gptq.why
    unknown = quantization({"quant_method": "new_method"})
    assert unknown is not None and unknown.verdict == "not-runnable" and "not reviewed" in unknown.why
    assert {verdict for verdict, _ in METHODS.values()} == {"runs-dequantized", "not-runnable"}


def test_a_quantized_checkpoint_is_planned_dequantized(tmp_path: Path) -> None:
    quantized = {**LLAMA_3_1_8B, "torch_dtype": "float16", "quantization_config": {"quant_method": "mxfp4"}}
    found = plan(resolve(str(_config(tmp_path, quantized))))
    assert found.dtype == "bfloat16" and found.memory.weights == 2 * found.parameters


def test_every_catalogued_checkpoint_is_read_as_transformers_or_diffusers_reads_it() -> None:
    from hf_neuron.compat.checkpoints import load_checkpoints

    found = {checkpoint.id: resolve(str(checkpoint.config_path)).architecture for checkpoint in load_checkpoints()}
    assert found == {checkpoint.id: checkpoint.architecture for checkpoint in load_checkpoints()}


@pytest.mark.slow
def test_published_parameter_counts_of_catalogued_checkpoints_within_one_percent() -> None:
    """Every catalogued checkpoint whose model card or paper publishes its size: the plan's count within 1%."""
    from hf_neuron.compat.checkpoints import load_checkpoints

    published = [checkpoint for checkpoint in load_checkpoints() if checkpoint.parameters is not None]
    assert len(published) >= 5
    off = {checkpoint.id: plan(resolve(str(checkpoint.config_path))).parameters / checkpoint.parameters - 1
           for checkpoint in published}
    assert {name: f"{share:+.2%}" for name, share in off.items() if abs(share) > 0.01} == {}
    mixtral = next(c for c in published if c.id == "mistralai/Mixtral-8x7B-v0.1")
    active = plan(resolve(str(mixtral.config_path))).active_parameters
    assert mixtral.active_parameters is not None and active is not None
    assert abs(active / mixtral.active_parameters - 1) < 0.01
