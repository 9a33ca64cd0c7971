"""Tiny image-text models: configs with consistent vision bookkeeping, image processors sized to the tiny tower,
synthetic images, inputs whose image tokens match the model's features, the reviewed data, and checkpoints that load
offline (with the architecture's own processor where it builds here)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hf_neuron.compat.tiny_image_text import image_text_recipe, load_image_text
from hf_neuron.tiny.image_text.checkpoint import load_image_processor, materialize
from hf_neuron.tiny.image_text.config import tiny_image_text_config, tiny_image_text_config_kwargs
from hf_neuron.tiny.image_text.image_processor import image_processor_class, takes_images, tiny_image_processor_kwargs
from hf_neuron.tiny.image_text.images import synthetic_image, synthetic_images
from hf_neuron.tiny.image_text.inputs import batch_inputs, features_per_image, image_tokens, sample_rows
from hf_neuron.tiny.image_text.processor import (
    ProcessorUnavailableError,
    as_processor_calls,
    build_processor,
    image_renderings,
    image_token_text,
    verified_processor,
)
from hf_neuron.tiny.tokenizer import RESERVED_TOKEN_IDS, tiny_tokenizer
from hf_neuron.tiny.transformers.inputs import prompt_of
from hf_neuron.tiny.transformers.models import build_model
from hf_neuron.vocabulary.datafiles import DataFileError

torch = pytest.importorskip("torch")


def _tiny(model_type: str):  # type: ignore[no-untyped-def]
    from hf_neuron.tiny.image_text.image_processor import tiny_image_processor

    config = tiny_image_text_config(model_type)
    model = build_model(model_type, config=config)
    return config, model, tiny_image_processor(model_type, config)


def test_synthetic_images_are_deterministic_and_sized() -> None:
    first, again = synthetic_images([(32, 48), (16, 16)], seed=3), synthetic_images([(32, 48), (16, 16)], seed=3)
    assert [image.size for image in first] == [(48, 32), (16, 16)]  # PIL sizes are (width, height)
    assert first[0].tobytes() == again[0].tobytes() and first[0].tobytes() != first[1].resize((48, 32)).tobytes()
    assert synthetic_image(8, 8, seed=0).tobytes() != synthetic_image(8, 8, seed=1).tobytes()
    with pytest.raises(ValueError, match="at least one pixel"):
        synthetic_image(0, 4)


def test_the_image_processor_is_sized_to_the_tiny_tower() -> None:
    llava = tiny_image_processor_kwargs("llava", tiny_image_text_config("llava"))
    assert llava == {"size": {"shortest_edge": 32}, "crop_size": {"height": 32, "width": 32}}
    qwen = tiny_image_processor_kwargs("qwen2_5_vl", tiny_image_text_config("qwen2_5_vl"))
    assert qwen["patch_size"] == 4  # the config's; merge 2 and temporal 2 already agree
    assert qwen["size"] == {"shortest_edge": 8 * 8, "longest_edge": 64 * 64}  # pixel counts: one merged patch, 64 px
    assert tiny_image_processor_kwargs("mistral3", tiny_image_text_config("mistral3"))["patch_size"] == {
        "height": 4, "width": 4}
    minicpm = tiny_image_processor_kwargs("minicpmv4_6", tiny_image_text_config("minicpmv4_6"))
    assert minicpm["scale_resolution"] == 32  # a side length not named "size" (448 would make 12544 patches)


def test_an_image_processor_that_needs_torchvision_is_refused_with_the_reason() -> None:
    with pytest.raises(LookupError, match=r"molmo2 has no image processor that runs without torchvision .*"
                                          r"name one in compat/tiny_image_text.toml"):
        image_processor_class("molmo2")
    assert image_processor_class("glm4v_moe").__name__ == "Glm4vImageProcessorPil"  # a reviewed substitute


def test_the_config_keeps_the_vision_bookkeeping_consistent() -> None:
    pinpoints = tiny_image_text_config_kwargs("llava_next")["image_grid_pinpoints"]
    assert pinpoints[:3] == [[32, 64], [64, 32], [64, 64]]  # multiples of the tiny 32-pixel tower (336 in full size)
    granite = tiny_image_text_config_kwargs("granite4_vision")["image_grid_pinpoints"]  # 336-pixel tiles, 224 default
    assert granite[:3] == [[32, 64], [64, 32], [64, 64]]  # from their own tile, not the CLIP default's 224
    assert tiny_image_text_config("vipllava").vision_feature_layers == [-2, -2, -2, -2, 1]  # 2 tiny layers
    blip2 = tiny_image_text_config("blip-2")
    assert blip2.image_token_index in RESERVED_TOKEN_IDS  # left unset by the class; real checkpoints set it
    # its checkpoint's vision start, image and end tokens, each on a reserved id (in the checkpoint's field order)
    assert image_tokens(tiny_image_text_config("qwen2_5_vl")).block(3) == [1022, 1020, 1020, 1020, 1023]


@pytest.mark.parametrize(("model_type", "counts"), [("llava", [64, 64]), ("qwen2_5_vl", [16, 24]),
                                                    ("idefics3", [80, 80])])  # 4 tiles and the whole image, 16 each
def test_each_image_becomes_as_many_tokens_as_the_model_has_features(model_type: str, counts: list[int]) -> None:
    config, model, image_processor = _tiny(model_type)
    rows = sample_rows(model_type, image_processor, 2)
    assert [features_per_image(model, image_processor, row.image) for row in rows] == counts
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), rows)
    image_id = image_tokens(config).image
    assert (inputs["input_ids"] == image_id).sum(1).tolist() == counts
    for row, pads in enumerate((inputs["attention_mask"] == 0).sum(1).tolist()):  # left-padded
        assert inputs["input_ids"][row, :pads].eq(0).all() and inputs["attention_mask"][row, pads:].eq(1).all()
    with torch.no_grad():
        logits = model(**inputs).logits
    assert logits.shape == (*inputs["input_ids"].shape, 1024) and torch.isfinite(logits).all()


@pytest.mark.parametrize(("model_type", "pixels"), [("pix2struct", "flattened_patches"),
                                                    ("vision-encoder-decoder", "pixel_values")])
def test_an_encoder_that_reads_only_pixels_leaves_the_prompt_to_the_decoder(model_type: str, pixels: str) -> None:
    _, model, image_processor = _tiny(model_type)
    assert takes_images(model)  # so that its checkpoint saves the image processor
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), sample_rows(model_type, image_processor, 2))
    assert "input_ids" not in inputs and pixels in inputs
    assert prompt_of(inputs) is inputs["decoder_input_ids"]
    assert inputs["decoder_attention_mask"].shape == inputs["decoder_input_ids"].shape
    assert inputs["decoder_attention_mask"][:, -1].eq(1).all()  # left-padded: the prompt ends every row
    if "attention_mask" in inputs:  # the image processor's patch mask, not the prompt's
        assert inputs["attention_mask"].shape == inputs[pixels].shape[:2]
    with torch.no_grad():
        logits = model(**inputs, labels=prompt_of(inputs)).logits
    assert logits.shape == (*inputs["decoder_input_ids"].shape, 1024)


def test_image_positions_given_as_a_mask_mark_the_image_tokens() -> None:
    config, model, image_processor = _tiny("kosmos-2")
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), sample_rows("kosmos-2", image_processor, 2))
    image_id = image_tokens(config).image
    assert image_id in RESERVED_TOKEN_IDS  # the reviewed placeholder: Kosmos-2 names no image token
    assert inputs["image_embeds_position_mask"].tolist() == (inputs["input_ids"] == image_id).long().tolist()
    assert inputs["image_embeds_position_mask"].sum(1).tolist() == [config.latent_query_num] * 2
    with torch.no_grad():
        assert model(**inputs).logits.shape == (*inputs["input_ids"].shape, 1024)


def test_a_model_that_reads_an_axis_of_images_gets_each_row_its_image_and_who_sees_it() -> None:
    _, model, image_processor = _tiny("idefics")
    assert str(image_text_recipe("idefics").pixel_layout) == "n c h w -> n 1 c h w"  # images per row: one
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), sample_rows("idefics", image_processor, 2))
    assert inputs["pixel_values"].shape == (2, 1, 3, 32, 32)
    # no image token in the prompt: the image comes first, and every prompt token (not the padding) sees it
    assert inputs["image_attention_mask"].tolist() == inputs["attention_mask"][:, :, None].tolist()
    with torch.no_grad():
        assert model(**inputs).logits.shape == (*inputs["input_ids"].shape, 1024)


@pytest.mark.parametrize(("layout", "shape", "first"), [
    ("n c h w -> n h w c", (2, 4, 4, 3), [0.0, 16.0, 32.0]),  # channels last: a pixel's three channels in a row
    ("n c h w -> n (2 c h w)", (2, 96), [0.0, 1.0, 2.0]),  # repeated on a leading axis, then flattened
    ("n c h w -> n 2 h w c", (2, 2, 4, 4, 3), [0.0, 16.0, 32.0]),
    ("n c h w -> n 1 c h w", (2, 1, 3, 4, 4), [0.0, 1.0, 2.0]),
])
def test_pixel_values_are_rearranged_as_the_layout_says(layout: str, shape: tuple[int, ...], first: list[float]
                                                        ) -> None:
    from hf_neuron.compat.tiny_image_text import parse_pixel_layout
    from hf_neuron.tiny.image_text.inputs import rearranged

    pixels = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).reshape(2, 3, 4, 4)
    out = rearranged(pixels, parse_pixel_layout(layout))
    assert tuple(out.shape) == shape and out.flatten()[:3].tolist() == first
    assert torch.equal(out.flatten()[:48].sort().values, pixels[0].flatten())  # the first row's values, all of them
    if " 2" in layout or "(2" in layout:  # each row repeated on a new axis of 2 right after the row axis
        copies = out.reshape(2, 2, -1)
        assert torch.equal(copies[:, 0], copies[:, 1])
    with pytest.raises(ValueError, match="names 4 axes, the pixel values have 3"):
        rearranged(pixels[0], parse_pixel_layout(layout))


def test_a_substitute_processor_s_patches_reach_the_model_in_its_own_layout() -> None:
    config, model, image_processor = _tiny("inkling2")
    assert type(image_processor).__name__ == "PaddleOCRVLImageProcessorPil"  # Inkling2's own needs torchvision
    rows = sample_rows("inkling2", image_processor, 2)
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), rows)
    tile = config.vision_config.patch_size * config.vision_config.spatial_merge_size
    # one tile per image token, channels last, the rows' 32 x 32 and 32 x 48 images kept whole: 16 + 24 tiles
    assert inputs["pixel_values"].shape == (16 + 24, tile, tile, 3)
    assert inputs["image_grid_thw"].tolist() == [[1, 4, 4], [1, 4, 6]]
    assert (inputs["input_ids"] == image_tokens(config).image).sum(1).tolist() == [16, 24]
    with torch.no_grad():
        assert model(**inputs).logits.shape == (*inputs["input_ids"].shape, 1024)


def test_single_frame_grids_go_to_a_model_that_reads_rows_and_columns() -> None:
    config, model, image_processor = _tiny("nemotron_h_omni")
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), sample_rows("nemotron_h_omni", image_processor, 2))
    assert "image_grid_thw" not in inputs  # the substitute's name, which the model does not read
    patch = config.vision_config.patch_size
    assert inputs["image_grid_hw"].tolist() == [[32 // patch, 32 // patch], [32 // patch, 48 // patch]]
    assert inputs["pixel_values"].shape == (64 + 96, 3 * patch * patch)  # one row per patch, flattened channels first
    with torch.no_grad():
        assert model(**inputs).logits.shape == (*inputs["input_ids"].shape, 1024)
    # a model that reads image_grid_thw keeps it, and gets no image_grid_hw
    _, qwen, qwen_processor = _tiny("qwen2_vl")
    qwen_inputs = batch_inputs(qwen, qwen_processor, tiny_tokenizer(), sample_rows("qwen2_vl", qwen_processor, 1))
    assert "image_grid_thw" in qwen_inputs and "image_grid_hw" not in qwen_inputs


def test_audio_ids_are_not_taken_for_a_second_text_encoder_s_prompt() -> None:
    _, model, image_processor = _tiny("inkling_mm_model")  # forward takes audio_input_ids: mel-bin codes
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), sample_rows("inkling_mm_model", image_processor, 2))
    assert "audio_input_ids" not in inputs  # the prompt there made the audio tower embed text ids as mel bins
    with torch.no_grad():
        assert model(**inputs).logits.shape == (*inputs["input_ids"].shape, 1024)
    _, blip, blip_processor = _tiny("instructblip")  # a Q-Former's text encoder still reads the prompt
    blip_inputs = batch_inputs(blip, blip_processor, tiny_tokenizer(), sample_rows("instructblip", blip_processor, 1))
    assert torch.equal(blip_inputs["qformer_input_ids"], blip_inputs["input_ids"])


def test_a_video_model_gets_one_frame_videos_with_their_query_tokens() -> None:
    config, model, image_processor = _tiny("instructblipvideo")
    rows = sample_rows("instructblipvideo", image_processor, 2)
    assert [features_per_image(model, image_processor, row.image) for row in rows] == [config.num_query_tokens] * 2
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), rows)
    assert inputs["pixel_values"].shape == (2, 1, 3, 32, 32)  # (batch, frames, channels, height, width)
    assert (inputs["input_ids"] == config.video_token_index).sum(1).tolist() == [config.num_query_tokens] * 2
    with torch.no_grad():
        assert model(**inputs).logits.shape == (*inputs["input_ids"].shape, 1024)


def test_a_layout_model_gets_word_boxes_and_no_ocr() -> None:
    _, model, image_processor = _tiny("udop")
    assert image_processor.apply_ocr is False  # the reviewed setting: OCR would need pytesseract
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), sample_rows("udop", image_processor, 2))
    assert inputs["bbox"].shape == (*inputs["input_ids"].shape, 4) and not inputs["bbox"].any()
    with torch.no_grad():
        assert model(**inputs).logits.shape == (*inputs["decoder_input_ids"].shape, 1024)


def test_a_wrong_image_token_count_fails_the_forward_pass() -> None:
    _, model, image_processor = _tiny("llava")
    rows = sample_rows("llava", image_processor, 2)
    inputs = batch_inputs(model, image_processor, tiny_tokenizer(), rows, features=[63, 63])
    with pytest.raises(ValueError, match="Image features and image tokens do not match"), torch.no_grad():
        model(**inputs)


def test_the_architectures_own_processor_is_checked_against_the_model() -> None:
    config, model, image_processor = _tiny("llava")
    processor = verified_processor("llava", config, model, image_processor)
    assert type(processor).__name__ == "LlavaProcessor"
    assert processor.tokenizer.convert_tokens_to_ids("<image>") == config.image_token_index == 1023
    assert "<image>" in processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Hi"}]}])


def test_a_processor_that_disagrees_with_the_model_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_neuron.tiny.image_text import processor as module

    config, model, image_processor = _tiny("llava")
    reviewed = image_text_recipe("llava")  # without it, LlavaProcessor forgets CLIP's class token
    monkeypatch.setattr(module, "image_text_recipe", lambda t: type(reviewed)(t))
    with pytest.raises(ProcessorUnavailableError,
                       match=r"LlavaProcessor writes 63 image tokens for a 32x48 image, the model has 64 features"):
        verified_processor("llava", config, model, image_processor)


@pytest.mark.parametrize(("model_type", "asked"), [
    ("deepseek_vl", {"image_token"}),  # 'TokenizersBackend has no attribute image_token' before
    ("shieldgemma2", {"boi_token", "eoi_token", "image_token"}),  # '... no attribute boi_token_id' before
])
def test_the_tokenizer_declares_the_special_tokens_its_processor_reads(model_type: str, asked: set[str]) -> None:
    config, model, image_processor = _tiny(model_type)
    processor = verified_processor(model_type, config, model, image_processor)
    tokenizer = processor.tokenizer
    assert {name for name in asked if isinstance(getattr(tokenizer, name, None), str)} == asked
    assert image_token_text(processor) == tokenizer.image_token  # ShieldGemma 2's processor calls boi its image token
    assert tokenizer.image_token_id == image_tokens(config).image
    assert all(tokenizer.convert_tokens_to_ids(getattr(tokenizer, name)) in RESERVED_TOKEN_IDS for name in asked)


def test_a_processor_that_builds_around_the_plain_tokenizer_keeps_its_own_tokens() -> None:
    config, model, image_processor = _tiny("llava")
    tokenizer = verified_processor("llava", config, model, image_processor).tokenizer
    assert getattr(tokenizer, "image_token", None) is None and tokenizer.convert_tokens_to_ids("<image>") == 1023


def test_an_image_token_count_argument_takes_the_model_s_feature_count(monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_neuron.tiny.image_text import processor as module

    config, model, image_processor = _tiny("chameleon")  # ChameleonProcessor(image_seq_length=1024) by default
    processor = verified_processor("chameleon", config, model, image_processor)
    assert processor.image_seq_length == features_per_image(model, image_processor, synthetic_image(32, 48)) == 16
    monkeypatch.setattr(module, "build_processor", lambda *args, **kwargs: build_processor(*args))  # no count
    with pytest.raises(ProcessorUnavailableError,
                       match="writes 1024 image tokens for a 32x48 image, the model has 16 features"):
        verified_processor("chameleon", config, model, image_processor)


def test_a_processor_without_image_tokens_fits_a_model_that_reads_pixels_alone() -> None:
    config, model, image_processor = _tiny("blip")
    assert image_tokens(config).image is None
    processor = verified_processor("blip", config, model, image_processor)
    assert image_token_text(processor) is None
    text = processor.apply_chat_template([{"role": "user", "content": [{"type": "image"}, {"type": "text",
                                                                                           "text": "Hi"}]}])
    assert text == "<|im_start|>user\nHi<|im_end|>\n"


def test_a_processor_without_image_tokens_is_refused_for_a_model_that_reads_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_neuron.tiny.image_text import processor as module

    config, _, image_processor = _tiny("blip-2")
    monkeypatch.setattr(module, "image_token_text", lambda processor: None)
    with pytest.raises(ProcessorUnavailableError, match="Blip2Processor has no image_token"):
        build_processor("blip-2", config, image_processor)


@pytest.mark.parametrize("model_type", [
    "apertus1p5",  # 'Received a NoneType for argument feature_extractor' before; then 6 image tokens for 1 feature
    "aria",  # 256 image tokens for 128 features before
    "aya_vision",  # 14175 image tokens for 16 features before
    "blip-2",  # 33 image tokens for 32 features before
    "cohere2_vision",  # "'GotOcr2ImageProcessorPil' object has no attribute 'patch_size'" before
    "florence2",  # 'Found total 2 <|image_token|> tokens and 1 images' before
    "hunyuan_vl",  # 'image placeholders must be formatted as <|image_start_token|>...' before
    "instructblip",  # "missing 1 required positional argument: 'qformer_tokenizer'" before
    "janus",  # 576 image tokens for 2048 features before
    "kosmos-2",  # 'transformers 5.24.0 maps kosmos-2 to no processor' before
    "kosmos-2.5",  # 'maps kosmos-2.5 to no processor' before; then 2046 image tokens for 0 features
    "pix2struct",  # "KeyError: 'input_ids'" before
    "qianfan_ocr",  # 'Found total 0 <image> tokens' before
    "step3p7",  # "'DeepseekOcr2ImageProcessorPil' object has no attribute 'vision_patch_size'" before
])
def test_the_architectures_own_processor_builds_and_agrees_with_the_model(model_type: str) -> None:
    config, model, image_processor = _tiny(model_type)
    processor = verified_processor(model_type, config, model, image_processor)
    assert processor.chat_template is not None


def test_a_processor_gets_the_other_parts_it_takes() -> None:
    config, _, image_processor = _tiny("instructblip")
    processor = build_processor("instructblip", config, image_processor)
    assert len(processor.qformer_tokenizer) == len(processor.tokenizer) == 1024  # a second tiny tokenizer
    config, _, image_processor = _tiny("apertus1p5")
    extractor = build_processor("apertus1p5", config, image_processor).feature_extractor
    assert type(extractor).__name__ == "WavTokenizerFeatureExtractor"


@pytest.mark.parametrize(("model_type", "rendering"), [
    ("llava", "<image>"),  # the placeholder
    ("qianfan_ocr", "<image>"),  # its image_placeholder_token, not the <|context_image_token|> it expands it to
    ("hunyuan_vl", "<|image_start_token|><|image_token|><|image_end_token|>"),  # between its start and end tokens
    ("blip-2", ""),  # nothing: it prepends its query tokens itself
])
def test_the_template_renders_an_image_as_the_processor_reads_it(model_type: str, rendering: str) -> None:
    config, model, image_processor = _tiny(model_type)
    processor = verified_processor(model_type, config, model, image_processor)
    text = processor.apply_chat_template([{"role": "user", "content": [{"type": "image"}, {"type": "text",
                                                                                           "text": "Hi"}]}])
    assert text == f"<|im_start|>user\n{rendering}Hi<|im_end|>\n"
    assert rendering in image_renderings(processor) and image_renderings(processor)[-1] == ""


def test_a_processor_that_writes_an_image_s_tokens_itself_is_refused_when_they_disagree(
        monkeypatch: pytest.MonkeyPatch) -> None:
    config, model, image_processor = _tiny("blip-2")
    monkeypatch.setattr(config, "num_query_tokens", 30)  # the processor's count; the model still has 32 features
    with pytest.raises(ProcessorUnavailableError,  # the first rendering's count: 30 prepended and the placeholder
                       match="Blip2Processor writes 31 image tokens for a 32x48 image, the model has 32 features"):
        verified_processor("blip-2", config, model, image_processor)


def test_an_image_token_count_the_processor_reads_of_its_image_processor_is_the_model_s() -> None:
    config, model, image_processor = _tiny("florence2")
    assert image_processor.image_seq_length is None  # CLIPImageProcessor stands in for Florence-2's own
    verified_processor("florence2", config, model, image_processor)
    assert image_processor.image_seq_length == features_per_image(model, image_processor, synthetic_image(32, 48)) == 5


def test_the_checkpoint_s_image_processor_keeps_the_count_its_processor_reads(tmp_path: Path) -> None:
    from transformers import AutoProcessor

    checkpoint = materialize("florence2", tmp_path / "florence2")
    assert load_image_processor("florence2", checkpoint).image_seq_length == 5
    assert json.loads((checkpoint / "preprocessor_config.json").read_text())["image_seq_length"] == 5  # its own file
    assert AutoProcessor.from_pretrained(checkpoint).num_image_tokens == 5


def test_the_model_s_features_are_counted_for_the_images_the_processor_makes() -> None:
    config, model, image_processor = _tiny("aria")
    processor = build_processor("aria", config, image_processor)
    called = as_processor_calls(processor)  # AriaProcessor asks for 980-pixel images, whatever its image processor's
    assert (image_processor.max_image_size, called.max_image_size) == (490, 980)
    image = synthetic_image(32, 48)
    assert (features_per_image(model, image_processor, image), features_per_image(model, called, image)) == (128, 256)
    _, _, llava_processor = _tiny("llava")
    llava = build_processor("llava", tiny_image_text_config("llava"), llava_processor)
    assert as_processor_calls(llava) is llava_processor  # no setting of its own: the image processor as it is


def test_a_processor_field_takes_the_config_field_of_another_name() -> None:
    config, _, image_processor = _tiny("aya_vision")
    assert build_processor("aya_vision", config, image_processor).img_size == config.vision_config.image_size == 32


@pytest.mark.parametrize(("model_type", "why"), [
    ("qwen2_5_omni_thinker", "Qwen2_5OmniProcessor needs a video processor"),  # the omni model's, in its module
    ("glm_ocr", "maps glm_ocr to no processor, and its model's module defines none"),
])
def test_a_processor_the_mapping_leaves_out_is_its_model_module_s(model_type: str, why: str) -> None:
    config, _, image_processor = _tiny(model_type)
    with pytest.raises(ProcessorUnavailableError, match=why):
        build_processor(model_type, config, image_processor)
    config, _, image_processor = _tiny("kosmos-2")  # 'maps kosmos-2 to no processor' before
    assert type(build_processor("kosmos-2", config, image_processor)).__name__ == "Kosmos2Processor"


def test_a_processor_that_marks_the_image_positions_is_counted_by_its_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_neuron.tiny.image_text import processor as module

    config, model, image_processor = _tiny("kosmos-2.5")
    assert image_tokens(config).image is None  # the model reads image_embeds_position_mask, not an image token
    processor = verified_processor("kosmos-2.5", config, model, image_processor)
    assert processor.num_image_tokens == 2048  # the model's latent queries
    reviewed = image_text_recipe("kosmos-2.5")
    monkeypatch.setattr(module, "image_text_recipe", lambda t: dataclasses.replace(
        reviewed, processor_config={"num_image_tokens": 2047}))
    with pytest.raises(ProcessorUnavailableError,
                       match="Kosmos2_5Processor writes 2047 image tokens for a 32x48 image, the model has 2048"):
        verified_processor("kosmos-2.5", config, model, image_processor)


def test_the_tokenizer_saves_the_attributes_it_declares(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tiny_tokenizer({1023: "<|image_token|>"}, {"image_token": "<|image_token|>"}).save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert (loaded.image_token, loaded.image_token_id) == ("<|image_token|>", 1023)
    tiny_tokenizer().save_pretrained(tmp_path / "plain")
    assert "model_specific_special_tokens" not in (tmp_path / "plain" / "tokenizer_config.json").read_text()


@pytest.mark.parametrize(("model_type", "why"), [
    ("qwen2_5_vl", "Qwen2_5_VLProcessor needs a video processor, which transformers builds only with torchvision"),
    ("mistral3", "PixtralProcessor cannot be built here: it needs a library this machine lacks: torchvision, which "
                 r"does not import here \(hf-neuron\[vision\]: PyPI's torchvision wheels for x86_64 are CUDA builds"),
])
def test_a_processor_that_cannot_be_built_here_says_why(model_type: str, why: str) -> None:
    config, _, image_processor = _tiny(model_type)
    with pytest.raises(ProcessorUnavailableError, match=why):
        build_processor(model_type, config, image_processor)


def test_the_tokenizer_names_reserved_tokens_and_refuses_others() -> None:
    tokenizer = tiny_tokenizer({1023: "<image>", 1022: "[IMG_END]"})
    assert tokenizer.encode("a<image>[IMG_END]", add_special_tokens=False)[-2:] == [1023, 1022]
    assert len(tokenizer) == 1024
    with pytest.raises(ValueError, match="only reserved ids can be renamed"):
        tiny_tokenizer({5: "<image>"})
    with pytest.raises(ValueError, match=r"tokens \['<s>'\] are already in the tiny vocabulary"):
        tiny_tokenizer({1023: "<s>"})


def test_a_checkpoint_loads_offline_with_its_processor(tmp_path: Path) -> None:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    directory = materialize("llava", tmp_path / "llava")
    stamp = json.loads((directory / "hf-neuron-tiny.json").read_text())
    assert stamp["processor"] == "LlavaProcessor" and stamp["model_type"] == "llava"
    model = AutoModelForImageTextToText.from_pretrained(directory)
    processor = AutoProcessor.from_pretrained(directory)
    image = synthetic_image(32, 32)
    text = processor.apply_chat_template([{"role": "user", "content": [{"type": "image"}]}], add_generation_prompt=True)
    inputs = processor(images=[image], text=[text], return_tensors="pt")
    assert int((inputs["input_ids"] == 1023).sum()) == features_per_image(model, processor.image_processor, image)
    assert materialize("llava", tmp_path / "llava") == directory  # reused: same content key


def test_a_checkpoint_without_a_processor_says_why_and_keeps_the_image_processor(tmp_path: Path) -> None:
    directory = materialize("qwen2_5_vl", tmp_path / "qwen")
    stamp = json.loads((directory / "hf-neuron-tiny.json").read_text())
    assert stamp["processor"].startswith("none: Qwen2_5_VLProcessor needs a video processor")
    assert type(load_image_processor("qwen2_5_vl", directory)).__name__ == "Qwen2VLImageProcessorPil"
    assert not (directory / "processor_config.json").exists()


def test_the_committed_reviewed_data_loads_and_every_entry_says_why() -> None:
    entries = load_image_text()
    assert {"llava", "idefics3", "paligemma"} <= set(entries)
    assert all(entry.reason for entry in entries.values())
    assert image_text_recipe("no_such_type").reason == ""  # nothing reviewed: the defaults
    assert entries["pi0"].labels == "actions" and "actions" in entries["pi0"].drawn_inputs
    assert str(entries["diffusion_gemma"].drawn_inputs["decoder_input_ids"]) == "tokens(canvas_length)"


def test_a_gap_is_read_with_runs_false(tmp_path: Path) -> None:
    path = tmp_path / "tiny_image_text.toml"
    path.write_text("[pi0]\nreason = 'needs a state'\nruns = false\ngap = 'inputs'\n")
    assert load_image_text(path)["pi0"].gap == "inputs"


@pytest.mark.parametrize(("text", "problem"), [
    ("[llava]\nreason = 'x'\ncolour = 1\n", ":1: [llava]: unknown keys ['colour']"),
    ("[llava]\nprocessor_config = { a = 1 }\n", ":1: [llava] reason: needs a non-empty string: why"),
    ("[llava]\nreason = 'x'\nimages = [[32]]\n", "[llava] 'images' must be a non-empty list of [height, width]"),
    ("[llava]\nreason = 'x'\nruns = 'no'\n", ":1: [llava] runs: must be true or false"),
    ("[llava]\nreason = 'x'\ngap = 'inputs'\n", ":1: [llava] gap: goes with runs = false"),
    ("[llava]\nreason = 'x'\nruns = false\ngap = 1\n", ":1: [llava] gap: 1 is not a gap; gaps are inputs"),
    ("[llava]\nreason = 'x'\npixel_layout = 1\n", "[llava] 'pixel_layout' must be a string such as"),
    ("[llava]\nreason = 'x'\npixel_layout = 'n c -> c'\n", "[llava] 'pixel_layout': 'n c -> c': every axis of"),
    ("[llava]\nreason = 'x'\nimage_processor_config = 3\n", "[llava] 'image_processor_config' must be a table"),
    ("[llava\n", ":1: not valid TOML"),
    ("[pi0]\nreason = 'x'\ndrawn_inputs = { state = 'gauss(max_state_dim)' }\n",
     "[pi0] 'drawn_inputs': 'gauss(max_state_dim)' is no drawn input: write 'kind(field, ...)'"),
    ("[pi0]\nreason = 'x'\ndrawn_inputs = { state = 'normal(2)' }\n",
     "'normal(2)': the shape is a list of config field names"),
    ("[pi0]\nreason = 'x'\ndrawn_inputs = { state = 3 }\n", "[pi0] 'drawn_inputs' must be a table of name ="),
    ("[pi0]\nreason = 'x'\nlabels = 'actions'\n", "[pi0] 'labels' must name one of its drawn_inputs"),
    ("[pi0]\nreason = 'x'\ngenerate_config = 1\n", "[pi0] 'generate_config' must be a table"),
])
def test_malformed_reviewed_data_names_the_file_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "tiny_image_text.toml"
    path.write_text(text)
    with pytest.raises(DataFileError) as error:
        load_image_text(path)
    assert str(path) in str(error.value) and problem in str(error.value)
