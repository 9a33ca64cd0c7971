"""The diffusion group: the backbones diffusers exports, tiny configs shrunk from their defaults, generic forward
inputs, the reviewed recipes, and the two scenarios (one denoiser call, a two-step pipeline) on the CPU and the
reference device."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.compat.tiny_diffusion import load_recipes, recipe
from hf_neuron.errors import InputError
from hf_neuron.matrix.scenarios.contract import CaseContext
from hf_neuron.matrix.scenarios.diffusion import forward, generate
from hf_neuron.tiny.diffusion.backbones import LATENT_SIZE, _split_even, backbone_names, build_backbone, tiny_config
from hf_neuron.tiny.diffusion.inputs import denoise, forward_inputs
from hf_neuron.tiny.diffusion.pipelines import shipped_pipelines

torch = pytest.importorskip("torch")

#: The families issue 5 names, each with a pipeline recipe.
FAMILIES = ["UNet2DModel", "UNet2DConditionModel", "DiTTransformer2DModel", "PixArtTransformer2DModel",
            "SD3Transformer2DModel", "FluxTransformer2DModel"]


def test_the_tiny_config_shrinks_by_meaning_and_keeps_relations() -> None:
    sd3 = tiny_config("SD3Transformer2DModel")
    assert (sd3["num_layers"], sd3["num_attention_heads"], sd3["attention_head_dim"]) == (2, 2, 16)
    assert sd3["caption_projection_dim"] == 32  # it equals the attention width in the full model, so it follows it
    assert sd3["sample_size"] == LATENT_SIZE and sd3["joint_attention_dim"] == 32
    flux = tiny_config("FluxTransformer2DModel")
    assert sum(flux["axes_dims_rope"]) == flux["attention_head_dim"] and all(d % 2 == 0 for d in flux["axes_dims_rope"])
    unet = tiny_config("UNet2DConditionModel")
    assert unet["block_out_channels"] == [32, 32, 32, 32] and unet["norm_num_groups"] == 8
    assert _split_even(16, 3) == [4, 6, 6] and _split_even(8, 2) == [4, 4]


def test_inputs_follow_forward_parameter_names_and_the_config() -> None:
    flux = build_backbone("FluxTransformer2DModel")
    inputs = forward_inputs(flux)
    assert inputs["hidden_states"].shape == (2, LATENT_SIZE * LATENT_SIZE, flux.config.in_channels)
    assert inputs["img_ids"].shape == (LATENT_SIZE * LATENT_SIZE, 3)
    assert inputs["encoder_hidden_states"].shape[-1] == flux.config.joint_attention_dim
    assert inputs["pooled_projections"].shape == (2, flux.config.pooled_projection_dim)
    assert torch.equal(forward_inputs(flux, seed=0)["hidden_states"], inputs["hidden_states"])
    unet = build_backbone("UNet2DModel")
    assert set(forward_inputs(unet)) == {"sample", "timestep"}


def test_the_backbones_include_the_named_families_and_no_autoencoder() -> None:
    names = backbone_names()
    assert set(FAMILIES) <= set(names)
    assert not [name for name in names if name.startswith(("Autoencoder", "ControlNet"))]


@pytest.mark.parametrize("name", FAMILIES)
def test_every_named_family_has_a_pipeline_recipe_and_runs_on_the_cpu(name: str) -> None:
    assert recipe(name).pipeline is not None
    model = build_backbone(name)
    prediction = denoise(model, forward_inputs(model))
    assert torch.isfinite(prediction).all()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[backbones.X]\nconfig = { a = 1 }\n',
         r":1: \[backbones.X\] reason: changes the config, layout or inputs: say why"),
        ('[backbones.X]\nlayout = "cube"\nreason = "r"\n',
         r":1: \[backbones.X\] layout: must be one of image, video, video-frames-first, video-channels-last, sequence, "
         "tokens"),
        ('[backbones.X]\npipeline = "P"\ncomponents = { vae = "nope" }\n',
         r"\[backbones.X\] components.vae: = 'nope' names no"),
        ('[backbones.X]\npipeline = "P"\npipeline_gap = "g"\n', "pipeline_gap says why .* instead of a 'pipeline'"),
        ('[backbones.X]\ninit = { a = 1 }\n', "has components, a slot or init arguments but no 'pipeline'"),
        ('[backbones.X]\npipeline = "P"\nrequires = ["numpy"]\n',
         r"\[backbones.X\] requires: lists the optional packages a 'pipeline' needs, of torchvision"),
        ('[backbones.X]\nrequires = ["torchvision"]\n', r"\[backbones.X\] requires: lists the optional packages"),
        ('[components.p]\nclass = "diffusers.X"\nmodel_type = "llama"\n', "model_type names the transformers"),
        ('[components.p]\nclass = "diffusers.X"\nparts = { a = "q" }\n',
         r"\[components.p\] parts: names no preset \['q'\]"),
        ('[components.b]\nclass = "c"\n[components.a]\nclass = "c"\n', r"\[components.\*\] tables must be sorted"),
        ('[backbones.X]\nunknown = 1\n', r":1: \[backbones.X\]: unknown keys \['unknown'\]"),
        ('[other]\n', r"unknown top-level tables \['other'\]"),
        ('[components.p]\nclass = "diffusers.X"\nmethods = "enable_tiling"\n',
         r"\[components.p\] methods: is a list of method names"),
        ('[components.p]\nclass = "diffusers.X"\nmethods = ["enable tiling"]\n',
         r"\[components.p\] methods: is a list of method names"),
    ],
)
def test_malformed_recipes_name_the_file_and_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "tiny_diffusion.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_recipes(path)


def test_the_committed_recipes_load() -> None:
    recipes = load_recipes()
    assert set(FAMILIES) <= set(recipes)


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cpu", "neuron"])
@pytest.mark.parametrize("name", ["UNet2DModel", "UNet2DConditionModel", "FluxTransformer2DModel"])
def test_forward_and_generate_pass(tmp_path_factory: pytest.TempPathFactory, name: str, device: str) -> None:
    workdir = tmp_path_factory.getbasetemp() / "diffusion-workdir"
    for scenario in (forward, generate):
        result = scenario(CaseContext(name, "diffusion", scenario.__name__, device, workdir))
        assert result.outcome == "passed", result.message
        assert result.parity is not None and result.parity["value"] <= result.parity["tolerance"]


def test_generate_does_not_apply_where_diffusers_ships_no_pipeline(tmp_path: Path) -> None:
    import diffusers

    name = "MiniMaxMusic3Transformer1DModel"  # diffusers exports the model, and no pipeline takes it
    assert shipped_pipelines(name) == () and recipe(name).pipeline is None
    result = generate(CaseContext(name, "diffusion", "generate", "cpu", tmp_path))
    assert result.outcome == "skipped" and result.message == (
        f"diffusers {diffusers.__version__} ships no pipeline for {name}")


def test_generate_of_a_shipped_pipeline_without_a_recipe_is_a_harness_gap(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_neuron.compat.tiny_diffusion import Recipe
    from hf_neuron.matrix.scenarios import diffusion

    assert "FluxPipeline" in shipped_pipelines("FluxTransformer2DModel")
    assert shipped_pipelines("Transformer2DModel") == ("VQDiffusionPipeline",)  # whole class names only
    monkeypatch.setattr(diffusion, "recipe", lambda name: Recipe())
    result = generate(CaseContext("FluxTransformer2DModel", "diffusion", "generate", "cpu", tmp_path))
    assert result.outcome == "untested" and result.gap == "pipeline-recipe"
    assert result.message is not None and "no pipeline recipe for FluxTransformer2DModel (diffusers ships" in \
        result.message and "FluxPipeline" in result.message


def test_a_reviewed_pipeline_gap_makes_generate_untested_with_its_reason(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_neuron.compat.tiny_diffusion import Recipe
    from hf_neuron.matrix.scenarios import diffusion

    monkeypatch.setattr(diffusion, "recipe", lambda name: Recipe(pipeline_gap="its decoder needs 4 GB"))
    result = generate(CaseContext("FluxTransformer2DModel", "diffusion", "generate", "cpu", tmp_path))
    assert (result.outcome, result.gap, result.message) == ("untested", "pipeline-recipe", "its decoder needs 4 GB")


def test_a_recipe_whose_optional_package_does_not_import_is_untested_with_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import importlib.util

    from hf_neuron.tiny.diffusion.pipelines import unmet_requirement

    omnigen = recipe("OmniGenTransformer2DModel")
    assert omnigen.pipeline == "OmniGenPipeline" and omnigen.requires == ("torchvision",)
    real_find_spec, real_import = importlib.util.find_spec, importlib.import_module
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torchvision" else real_find_spec(name, *a))
    result = generate(CaseContext("OmniGenTransformer2DModel", "diffusion", "generate", "cpu", tmp_path))
    assert (result.outcome, result.gap) == ("untested", "pipeline-recipe")
    assert result.message is not None and result.message.startswith(
        "OmniGenPipeline needs torchvision, which is not installed: hf-neuron[vision]")

    def broken(name: str, *args: object) -> object:
        if name == "torchvision":
            raise RuntimeError("operator torchvision::nms does not exist")
        return real_import(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setattr(importlib, "import_module", broken)
    assert "which does not import (RuntimeError: operator torchvision::nms does not exist)" in (
        unmet_requirement(omnigen) or "")
    monkeypatch.setattr(importlib, "import_module", lambda name, *a: object())
    assert unmet_requirement(omnigen) is None


def test_the_shrinker_knows_short_and_prefixed_size_names_and_every_rotary_axes_name() -> None:
    z_image = tiny_config("ZImageTransformer2DModel")  # n_layers / n_heads, and no attention_head_dim argument
    assert (z_image["n_layers"], z_image["n_refiner_layers"], z_image["n_heads"], z_image["n_kv_heads"]) == (2, 1, 2, 2)
    assert sum(z_image["axes_dims"]) == 16  # the head dim of width 32 over 2 heads
    krea2 = tiny_config("Krea2Transformer2DModel")
    assert krea2["text_num_attention_heads"] == 2 and krea2["text_intermediate_size"] == 64
    assert tiny_config("StableAudioDiTModel")["num_key_value_attention_heads"] == 2
    assert tiny_config("Kandinsky3UNet")["groups"] == 8
    joy = tiny_config("JoyImageEditTransformer3DModel")
    assert sum(joy["rope_dim_list"]) == joy["hidden_size"] // joy["num_attention_heads"]
    helios = tiny_config("HeliosTransformer3DModel")
    assert sum(helios["rope_dim"]) == helios["attention_head_dim"]


@pytest.mark.parametrize("name", ["Flux2Transformer2DModel", "Flux3Transformer2DModel"])
def test_token_positions_have_one_column_per_rotary_axis(name: str) -> None:
    if name not in backbone_names():
        pytest.skip(f"diffusers has no {name}")
    model = build_backbone(name)
    inputs = forward_inputs(model)
    axes = len(model.config.axes_dims_rope)
    assert axes > 3 and inputs["img_ids"].shape == (LATENT_SIZE * LATENT_SIZE, axes)
    assert inputs["txt_ids"].shape == (6, axes)
    assert torch.isfinite(denoise(model, inputs)).all()


def test_text_and_its_mask_are_passed_only_to_a_backbone_that_attends_to_text() -> None:
    temporal = build_backbone("TransformerTemporalModel")  # cross_attention_dim None: self-attention only
    assert temporal.config.cross_attention_dim is None and "encoder_hidden_states" not in forward_inputs(temporal)
    assert torch.isfinite(denoise(temporal, forward_inputs(temporal))).all()
    kandinsky3 = build_backbone("Kandinsky3UNet")  # it needs the text mask
    inputs = forward_inputs(kandinsky3)
    assert inputs["encoder_attention_mask"].shape == (2, 6) and inputs["encoder_attention_mask"].dtype == torch.long
    assert inputs["encoder_hidden_states"].shape == (2, 6, kandinsky3.config.encoder_hid_dim)
    assert torch.isfinite(denoise(kandinsky3, inputs)).all()


def test_a_video_backbone_that_unpacks_frames_before_channels_gets_them_so() -> None:
    cogvideox = build_backbone("CogVideoXTransformer3DModel")
    assert tiny_config("CogVideoXTransformer3DModel")["max_text_seq_length"] == 6  # its text length is fixed
    inputs = forward_inputs(cogvideox)
    assert inputs["hidden_states"].shape == (2, 2, cogvideox.config.in_channels, LATENT_SIZE, LATENT_SIZE)
    assert torch.isfinite(denoise(cogvideox, inputs)).all()
    assert forward_inputs(build_backbone("LatteTransformer3DModel"))["hidden_states"].shape[1:3] == (4, 2)


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("HunyuanDiT2DModel", {"encoder_hidden_states_t5": 3, "text_embedding_mask_t5": 2, "image_meta_size": 2,
                               "style": 1}),
        ("HunyuanVideo15Transformer3DModel", {"encoder_hidden_states_2": 3, "encoder_attention_mask_2": 2,
                                              "image_embeds": 3}),
        ("WanVACETransformer3DModel", {"control_hidden_states": 5}),
    ],
)
def test_extra_conditionings_are_built_when_the_config_has_their_projection(name: str, extra: dict[str, int]) -> None:
    model = build_backbone(name)
    inputs = forward_inputs(model)
    assert {key: inputs[key].dim() for key in extra} == extra
    assert torch.isfinite(denoise(model, inputs)).all()
    assert "encoder_hidden_states_t5" not in forward_inputs(build_backbone("EasyAnimateTransformer3DModel"))


def test_stable_cascade_gets_its_time_ratio_and_pooled_clip_token() -> None:
    cascade = build_backbone("StableCascadeUNet")
    inputs = forward_inputs(cascade)
    assert inputs["timestep_ratio"].shape == (2,) and 0 < float(inputs["timestep_ratio"][0]) < 1
    assert inputs["clip_text_pooled"].shape == (2, 1, cascade.config.clip_text_pooled_in_channels)
    assert torch.isfinite(denoise(cascade, inputs)).all()


def test_a_backbone_that_takes_the_image_grid_gets_packed_tokens_and_their_grid() -> None:
    qwen = build_backbone("QwenImageTransformer2DModel")
    inputs = forward_inputs(qwen)
    side = LATENT_SIZE // qwen.config.patch_size
    assert inputs["hidden_states"].shape == (2, side * side, qwen.config.in_channels)
    assert inputs["img_shapes"] == [[(1, side, side)]] * 2
    assert torch.isfinite(denoise(qwen, inputs)).all()
