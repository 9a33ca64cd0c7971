"""compat/tiny_diffusion.toml keeps the rules its header states (sorted tables, real classes, every preset used), and
the pipeline recipes run: an image, a video and an audio pipeline each return what they made by name, the device's
equal to the CPU's, and a perturbed device fails them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from hf_neuron.compat.tiny_diffusion import RECIPES_FILE, load_presets, load_recipes
from hf_neuron.matrix.scenarios.contract import CaseContext
from hf_neuron.matrix.scenarios.diffusion import forward, generate
from hf_neuron.tiny.diffusion.backbones import backbone_names
from hf_neuron.tiny.diffusion.pipelines import build_component, build_pipeline, picture, pipeline_class, run_pipeline

torch = pytest.importorskip("torch")


def _tables(text: str) -> list[str]:
    return re.findall(r"(?m)^\[([^\]]+)\]", text)


def test_the_data_file_keeps_its_tables_sorted_presets_first() -> None:
    tables = _tables(RECIPES_FILE.read_text(encoding="utf-8"))
    presets = [t for t in tables if t.startswith("components.")]
    backbones = [t for t in tables if t.startswith("backbones.")]
    assert tables == presets + backbones, "the [components.*] presets come first, then the [backbones.*]"
    assert presets == sorted(presets) and backbones == sorted(backbones)


def test_every_table_names_a_real_backbone_pipeline_and_class_and_every_preset_is_used() -> None:
    import diffusers

    recipes, presets = load_recipes(), load_presets()
    assert set(recipes) <= set(backbone_names())
    used = {part for preset in presets.values() for part in preset.parts.values()}
    for name, recipe in recipes.items():
        if recipe.pipeline is not None:
            cls = pipeline_class(recipe)
            assert isinstance(cls, type) and issubclass(cls, diffusers.DiffusionPipeline), name
        used |= {component.name for component in recipe.components.values() if component is not None} - {"backbone"}
    assert set(presets) == used, f"presets no recipe uses: {sorted(set(presets) - used)}"
    for preset in presets.values():
        library, _, _rest = preset.class_name.partition(".")
        assert preset.class_name in ("tiny-tokenizer", "tiny-guardrail") or library in ("diffusers", "transformers"), \
            preset.name


def test_a_pipeline_without_a_pipeline_or_a_gap_is_one_diffusers_does_not_ship() -> None:
    from hf_neuron.tiny.diffusion.pipelines import shipped_pipelines

    recipes = load_recipes()
    missing = [name for name in backbone_names()
               if recipes.get(name) is None or (recipes[name].pipeline is None and recipes[name].pipeline_gap is None)]
    assert [name for name in missing if shipped_pipelines(name)] == []


def test_a_picture_is_deterministic() -> None:
    import numpy as np

    assert picture(8, 4).size == (8, 4)
    assert np.array_equal(np.asarray(picture(8, 4, seed=3)), np.asarray(picture(8, 4, seed=3)))
    assert not np.array_equal(np.asarray(picture(8, 4, seed=3)), np.asarray(picture(8, 4, seed=4)))


@pytest.mark.parametrize(("name", "made"), [("WanTransformer3DModel", "frames"), ("StableAudioDiTModel", "audios"),
                                            ("PriorTransformer", "image_embeds"),
                                            ("RFD4ProteinaTransformer", "coords_nm")])
def test_a_pipeline_returns_what_it_made_by_name(name: str, made: str, tmp_path: Path) -> None:
    from hf_neuron.compat.tiny_diffusion import presets, recipe
    from hf_neuron.tiny.diffusion.backbones import build_backbone

    outputs = run_pipeline(build_pipeline(build_backbone(name), recipe(name), presets=presets()), recipe(name))
    assert made in outputs and all(value.dtype == torch.float32 for value in outputs.values())
    assert all(bool(torch.isfinite(value).all()) for value in outputs.values())


@pytest.mark.slow
@pytest.mark.usefixtures("neuron")
@pytest.mark.parametrize("name", ["WanTransformer3DModel", "StableAudioDiTModel", "QwenImageTransformer2DModel"])
def test_a_video_audio_and_llm_encoded_pipeline_pass_on_the_device_and_fail_perturbed(name: str,
                                                                                       tmp_path: Path) -> None:
    from test_matrix_mutation import linear_off_by

    ctx = CaseContext(name, "diffusion", "generate", "neuron", tmp_path)
    clean = generate(ctx)
    assert clean.outcome == "passed", clean.message
    with linear_off_by(1e-3):
        perturbed = generate(ctx)
    assert perturbed.outcome == "failed" and "differ from the CPU's" in (perturbed.message or ""), perturbed.message


@pytest.mark.slow
@pytest.mark.usefixtures("neuron")
def test_a_perturbed_device_fails_forward_of_a_backbone_fed_by_reviewed_inputs(tmp_path: Path) -> None:
    from test_matrix_mutation import linear_off_by

    ctx = CaseContext("LTX2VideoTransformer3DModel", "diffusion", "forward", "neuron", tmp_path)
    assert forward(ctx).outcome == "passed"
    with linear_off_by(1e-3):
        perturbed = forward(ctx)
    assert perturbed.outcome == "failed" and "differ from the CPU's" in (perturbed.message or "")


def test_a_pipeline_class_diffusers_exports_only_as_a_placeholder_is_taken_from_its_module() -> None:
    import diffusers

    from hf_neuron.compat.tiny_diffusion import Recipe, recipe

    # diffusers exports SpectrogramDiffusionPipeline only where note_seq (its MIDI processor's dependency) is installed
    module = "diffusers.pipelines.deprecated.spectrogram_diffusion.pipeline_spectrogram_diffusion"
    cls = pipeline_class(recipe("T5FilmDecoder"))
    assert (cls.__module__, cls.__name__) == (module, "SpectrogramDiffusionPipeline")
    assert pipeline_class(Recipe(pipeline="FluxPipeline")) is diffusers.FluxPipeline
    with pytest.raises(ValueError, match="the recipe has no pipeline"):
        pipeline_class(Recipe())


def test_call_arguments_of_none_and_integers_and_a_preset_that_calls_its_methods() -> None:
    from hf_neuron.compat.tiny_diffusion import Component, presets
    from hf_neuron.tiny.diffusion.pipelines import _call_value, _placed

    assert _call_value("none", 0) is None and _call_value("mel", 0) == "mel"
    ids = _call_value({"randint": [0, 4], "shape": [1, 16]}, 0)  # GlmImage's prior token ids
    assert ids.dtype == torch.long and ids.shape == (1, 16) and int(ids.min()) >= 0 and int(ids.max()) < 4
    assert torch.equal(ids, _call_value({"randint": [0, 4], "shape": [1, 16]}, 0)) and len(set(ids.tolist()[0])) > 1
    # RFD4Proteina's masks and its dict of conditioning tensors, each placed where the pipeline runs
    features = _call_value({"fields": {"mask": {"fill": True, "shape": [1, 8], "dtype": "bool"},
                                       "ids": {"fill": 0, "shape": [1, 8], "dtype": "long"}}}, 0)
    assert features["mask"].dtype == torch.bool and bool(features["mask"].all()) and features["ids"].dtype == torch.long
    placed = _placed({"features": features, "steps": 2}["features"], torch.device("meta"))
    assert {tensor.device.type for tensor in placed.values()} == {"meta"} and _placed(2, "meta") == 2
    # GlmImage encodes an empty negative prompt: a ByT5-like tokenizer gives it its </s>, no empty (float) tensor
    eos = build_component(presets()["tokenizer_eos"], 0)
    assert eos([""]).input_ids == [[eos.eos_token_id]]
    assert build_component(presets()["tokenizer"], 0)([""]).input_ids == [[]]
    vae = presets()["vae_allegro_4"]
    assert vae.methods == ("enable_tiling",) and build_component(vae, 0).use_tiling  # it decodes only in tiles
    assert not build_component(Component("plain", vae.class_name, vae.config), 0).use_tiling
    with pytest.raises(ValueError, match="component typo: AutoencoderKLAllegro has no method 'enable_tilling'"):
        build_component(Component("typo", vae.class_name, vae.config, methods=("enable_tilling",)), 0)


def test_the_pass_through_guardrail_lets_a_cosmos_pipeline_run_offline_and_changes_nothing() -> None:
    import numpy as np

    from hf_neuron.compat.tiny_diffusion import presets, recipe
    from hf_neuron.tiny.diffusion.backbones import build_backbone
    from hf_neuron.tiny.diffusion.guardrail import PassThroughGuardrail

    guardrail = PassThroughGuardrail()
    frames = np.zeros((2, 4, 4, 3), dtype=np.uint8)
    assert guardrail.to("neuron") is guardrail and guardrail.check_text_safety("anything")
    assert guardrail.check_video_safety(frames) is frames
    name = "CosmosTransformer3DModel"
    cosmos = recipe(name)
    assert cosmos.components["safety_checker"] is not None
    without = {argument: None if argument == "safety_checker" else component
               for argument, component in cosmos.components.items()}
    with pytest.raises(ImportError, match="cosmos_guardrail"):  # what diffusers builds when given none
        build_pipeline(build_backbone(name), dataclasses.replace(cosmos, components=without), presets=presets())
    outputs = run_pipeline(build_pipeline(build_backbone(name), cosmos, presets=presets()), cosmos)
    assert all(bool(torch.isfinite(value).all()) for value in outputs.values())  # latents too: Karras sigmas


@pytest.mark.slow
def test_a_pipeline_that_draws_from_the_global_generator_makes_the_same_video_twice() -> None:
    from hf_neuron.compat.tiny_diffusion import presets, recipe
    from hf_neuron.tiny.diffusion.backbones import build_backbone

    name = "I2VGenXLUNet"  # its VAE samples the image's latents with no generator; its default clip_skip needs a
    i2v = recipe(name)  # CLIPTextModel.text_model, which transformers 5 has not
    assert "clip_skip" in i2v.call
    made = [run_pipeline(build_pipeline(build_backbone(name), i2v, presets=presets()), i2v) for _ in range(2)]
    torch.rand(3)  # the global generator moved on between the runs
    again = run_pipeline(build_pipeline(build_backbone(name), i2v, presets=presets()), i2v)
    assert made[0]["frames"].shape[1] == 2
    assert torch.equal(made[0]["frames"], made[1]["frames"]) and torch.equal(made[0]["frames"], again["frames"])


def test_joyimage_edit_without_an_input_image_encodes_its_prompt_with_no_processor() -> None:
    from hf_neuron.compat.tiny_diffusion import presets, recipe
    from hf_neuron.tiny.diffusion.backbones import build_backbone

    name = "JoyImageEditTransformer3DModel"
    pipeline = build_pipeline(build_backbone(name), recipe(name), presets=presets())
    assert pipeline.processor is None and "image" not in recipe(name).call
    embeds, mask = pipeline.encode_prompt(prompt="a tiny red square", device="cpu")  # tokenizer and text encoder
    assert embeds.shape[0] == 1 and embeds.shape[-1] == 32 and mask.shape == embeds.shape[:2]
    with pytest.raises(TypeError, match="NoneType"):  # an input image would need the processor (torchvision)
        pipeline.encode_prompt_multiple_images(prompt="a tiny red square", device="cpu", images=[picture(16, 16)])


def test_bria_fibo2_encodes_a_text_prompt_through_its_processors_tokenizer_into_six_bundles() -> None:
    from hf_neuron.compat.tiny_diffusion import presets, recipe
    from hf_neuron.tiny.diffusion.backbones import build_backbone

    name = "BriaFibo2Transformer2DModel"
    bria = recipe(name)
    pipeline = build_pipeline(build_backbone(name), bria, presets=presets())
    embeds, mask = pipeline.encode_prompt(prompt="a tiny red square", device="cpu")
    # six bundles of three Qwen3-VL layers (up to the 36th), one for the perceiver and one per injection layer
    assert embeds.shape[1] == 1 + len(pipeline.transformer.config.injection_layer_ids) == 6
    assert embeds.shape[-1] == pipeline.transformer.config.cap_feat_dim == 3 * 32 and mask is None  # none padded
    # the tokenizer ignores images it is given: no input image and no drawn caption texts, which need Qwen3VLProcessor
    assert bria.call["render_text_images"] is False and "image" not in bria.call


def test_joyimage_edit_plus_encodes_a_text_prompt_with_the_tokenizer_as_its_processor() -> None:
    from hf_neuron.compat.tiny_diffusion import presets, recipe
    from hf_neuron.tiny.diffusion.backbones import build_backbone

    name = "JoyImageEditPlusTransformer3DModel"
    plus = recipe(name)
    assert plus.components["processor"] is not None and plus.components["processor"].class_name == "tiny-tokenizer"
    assert "images" not in plus.call  # a tokenizer would ignore reference images
    pipeline = build_pipeline(build_backbone(name), plus, presets=presets())
    embeds, mask = pipeline.encode_prompt_multiple_images(prompt="a tiny red square", device="cpu")
    assert embeds.shape[0] == 1 and embeds.shape[-1] == 32 and mask.shape == embeds.shape[:2]
