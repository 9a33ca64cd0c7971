"""Image-text inputs for a tiny vision-language model: chat prompts with images, expanded as the model needs them.

The inputs are what the architecture's processor would give, built from three generic rules instead of per-model
code: the pixel inputs are its image processor's output for the synthetic images (rearranged where the model reads
them in another layout, the reviewed ``pixel_layout``: a stack of images or frames per row, or a substitute image
processor's patches in the layout of the architecture's own; single-frame ``image_grid_thw`` given as
``image_grid_hw`` to a model that reads that); every image placeholder in the
prompt becomes as many image tokens (``config.image_token_id`` or ``image_token_index``; a video model's
``video_token_*``) as the model computes features for that image (counted by calling its ``get_image_features``, or
``get_video_features``), between the config's image start and end tokens when it has them; and the inputs a model's
``forward`` takes by name are filled in (``attention_mask``, ``mm_token_type_ids`` or ``image_embeds_position_mask``
marking the image tokens, an ``image_attention_mask`` saying which tokens see each image, a layout model's ``bbox``
(zeros: the words have no place on the page), an encoder-decoder's ``decoder_input_ids`` (the prompt goes to its
decoder alone when its encoder reads only pixels), and the prompt again for a second text encoder's
``<name>_input_ids`` / ``<name>_attention_mask``, as a Q-Former reads; a ``pixel_attention_mask`` over a stack of
images per row that the image processor does not give, every image present). Rows are left-padded. Inputs that
neither the prompt nor the images give (a policy's robot state, a block-diffusion model's canvas) are the reviewed
``drawn_inputs``, drawn per row from the case's seed (:func:`drawn_inputs`).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_image_text import Draw, PixelLayout, image_text_recipe
from hf_neuron.tiny.image_text.image_processor import find_field, processor_side
from hf_neuron.tiny.image_text.images import synthetic_images
from hf_neuron.tiny.tokenizer import PAD_TOKEN_ID, RESERVED_TOKEN_IDS
from hf_neuron.tiny.transformers.config import DIMS
from hf_neuron.tiny.transformers.inputs import reads_text

if TYPE_CHECKING:
    import torch
    from PIL import Image
    from transformers import PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerBase
    from transformers.image_processing_utils import BaseImageProcessor

__all__ = ["QUESTIONS", "ImageTokens", "Row", "batch_inputs", "drawn_inputs", "feature_config", "features_per_image",
           "image_sizes", "image_tokens", "pixel_inputs", "prompt_ids", "rearranged", "sample_rows"]

#: The user's question of each row (row ``i`` asks ``QUESTIONS[i % len(QUESTIONS)]``).
QUESTIONS = ("What is in the picture?", "Describe the colours of this image.")

#: The placeholder of an image, or of a video's frames in a video model (the image's when a config has both).
_IMAGE = re.compile(r"^(image|video)_token_(id|index)$")
_START = re.compile(r"^(vision_start|image_start|img_start|boi|start_of_image)_token_(id|index)$")
_END = re.compile(r"^(vision_end|image_end|img_end|eoi|end_of_image)_token_(id|index)$")


@dataclasses.dataclass(frozen=True)
class ImageTokens:
    """The token ids a prompt uses around an image: the placeholder repeated per feature, optional start and end."""

    image: int | None
    start: int | None = None
    end: int | None = None

    def block(self, features: int) -> list[int]:
        """The ids that stand for one image of ``features`` features."""
        if self.image is None or features == 0:
            return []
        return [*([self.start] if self.start is not None else []), *[self.image] * features,
                *([self.end] if self.end is not None else [])]


def _token_field(config: PreTrainedConfig, pattern: re.Pattern[str]) -> int | None:
    for part in (config, config.get_text_config(decoder=True)):
        for name, value in sorted(part.to_dict().items()):
            if pattern.match(name) and isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def image_tokens(config: PreTrainedConfig) -> ImageTokens:
    """The image placeholder, start and end token ids of ``config`` (None where it has none)."""
    return ImageTokens(_token_field(config, _IMAGE), _token_field(config, _START), _token_field(config, _END))


def _accepted(function: Callable[..., Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``inputs`` that ``function`` names as parameters."""
    parameters = inspect.signature(function).parameters
    return {key: value for key, value in inputs.items() if key in parameters}


#: A token id of ordinary text in the tiny vocabulary.
_FIRST_TEXT_ID = 8
_NOT_TEXT = ("decoder_", "pixel_", "image_", "mm_", "video_", "audio_")
#: Inputs that mark the prompt's image tokens with 1 (where the image features go) and its text with 0.
_IMAGE_POSITION_MASKS = ("mm_token_type_ids", "image_embeds_position_mask")


def _text_encoder_inputs(function: Callable[..., Any], input_ids: torch.Tensor, attention_mask: torch.Tensor
                         ) -> dict[str, torch.Tensor]:
    """The prompt for each ``<name>_input_ids`` / ``<name>_attention_mask`` parameter of ``function`` (a second
    text encoder, such as a Q-Former)."""
    inputs = {}
    for name in inspect.signature(function).parameters:
        if name.startswith(_NOT_TEXT) or name in ("input_ids", "attention_mask"):
            continue
        if name.endswith("_input_ids"):
            inputs[name] = input_ids
        elif name.endswith("_attention_mask"):
            inputs[name] = attention_mask
    return inputs


def _count(features: Any) -> int:
    """Number of feature values in a tensor or a (nested) sequence of tensors."""
    import torch

    if isinstance(features, torch.Tensor):
        return features.numel()
    return sum(_count(part) for part in features)


def _named_parameters(function: Callable[..., Any]) -> bool:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return any(parameter.kind in kinds for parameter in inspect.signature(function).parameters.values())


def _image_feature_method(model: PreTrainedModel) -> Callable[..., Any] | None:
    """The model's ``get_image_features``, or its base model's when the model has none or one that only forwards
    ``*args, **kwargs`` (whose parameters cannot be read); a video model's ``get_video_features`` when it has no
    image method (its rows are one-frame videos); when neither has one, that of a vision-language model inside the
    base model (PI0's ``model.vlm``, a PaliGemma: :func:`feature_config` is then that model's config)."""
    import torch

    base = getattr(model, "model", None)
    parts = (model, base)
    methods = [getattr(part, name, None) for name in ("get_image_features", "get_video_features") for part in parts]
    found = [method for method in methods if callable(method)]
    if not found and isinstance(base, torch.nn.Module):
        found = [child.get_image_features for child in base.children()
                 if callable(getattr(child, "get_image_features", None))]
    return next((method for method in found if _named_parameters(method)), found[0] if found else None)


def _inner(model: PreTrainedModel) -> Any:
    """The module whose ``get_image_features`` counts an image's features (:func:`_image_feature_method`), or the
    model."""
    method = _image_feature_method(model)
    owner = getattr(method, "__self__", None)
    return owner if owner is not None and owner is not model and owner is not getattr(model, "model", None) else model


def feature_config(model: PreTrainedModel) -> PreTrainedConfig:
    """The config that says how an image is written in the prompt (its token ids, the width of its features): the
    model's, or that of the vision-language model inside it whose ``get_image_features`` counts the features."""
    config: PreTrainedConfig = _inner(model).config
    return config


def _image_feature_inputs(model: PreTrainedModel, method: Callable[..., Any], inputs: Mapping[str, Any]
                          ) -> dict[str, Any]:
    """The entries of ``inputs`` that ``method`` names, and, when it passes on ``**kwargs``, those its base model's
    ``get_image_features`` names (a wrapper that declares ``image_grid_thw`` may forward ``image_merge_sizes``)."""
    accepted = _accepted(method, inputs)
    forwards = any(parameter.kind is inspect.Parameter.VAR_KEYWORD
                   for parameter in inspect.signature(method).parameters.values())
    inner = getattr(getattr(model, "model", None), "get_image_features", None)
    if forwards and callable(inner) and inner != method:
        accepted.update(_accepted(inner, inputs))
    return accepted


def rearranged(tensor: torch.Tensor, layout: PixelLayout) -> torch.Tensor:
    """``tensor`` with its axes rearranged as ``layout`` says: permuted, new axes added (the tensor repeated along
    them), groups flattened."""
    if tensor.dim() != len(layout.source):
        raise ValueError(f"pixel layout {str(layout)!r} names {len(layout.source)} axes, the pixel values have "
                         f"{tensor.dim()} (shape {tuple(tensor.shape)})")
    sizes = dict(zip(layout.source, tensor.shape, strict=True))
    items = [item for group in layout.target for item in group]
    moved = tensor.permute([layout.source.index(item) for item in items if isinstance(item, str)])
    shape = [sizes[item] if isinstance(item, str) else item for item in items]
    spread = moved.reshape([sizes[item] if isinstance(item, str) else 1 for item in items]).expand(shape)
    widths = [math.prod(sizes[item] if isinstance(item, str) else item for item in group) for group in layout.target]
    return spread.reshape(widths)


def _grid_hw(model: PreTrainedModel, processed: Mapping[str, Any]) -> dict[str, Any]:
    """``image_grid_hw`` (rows and columns of patches) for a model that reads it, from an image processor that gives
    ``image_grid_thw`` of single frames (``t = 1``); nothing otherwise."""
    grid = processed.get("image_grid_thw")
    if grid is None or "image_grid_hw" in processed or bool((grid[:, 0] != 1).any()):
        return {}
    method = _image_feature_method(model)
    readers = [model.forward, *([method] if method is not None else [])]
    if not any("image_grid_hw" in inspect.signature(reader).parameters for reader in readers):
        return {}
    return {"image_grid_hw": grid[:, 1:]}


def pixel_inputs(model: PreTrainedModel, image_processor: BaseImageProcessor, images: Sequence[Image.Image]
                 ) -> dict[str, Any]:
    """The image processor's outputs for ``images``, one per row: its ``pixel_values`` rearranged as the model reads
    them where the reviewed ``pixel_layout`` says (:func:`rearranged`), and its ``image_grid_thw`` of single frames
    as ``image_grid_hw`` for a model that reads that."""
    import torch

    output = image_processor(images=list(images), return_tensors="pt")
    # a few image processors return the pixel values alone
    processed = {"pixel_values": output} if isinstance(output, torch.Tensor) else dict(output)
    layout = image_text_recipe(model.config.model_type).pixel_layout
    if layout is not None:
        processed["pixel_values"] = rearranged(processed["pixel_values"], layout)
    return {**processed, **_grid_hw(model, processed)}


def features_per_image(model: PreTrainedModel, image_processor: BaseImageProcessor, image: Image.Image) -> int:
    """How many image tokens the model embeds for ``image``: its ``get_image_features`` (or its base model's) on the
    image processor's output (on the model's device, in its dtype), in units of the language model's width (0 when
    the model has no such method)."""
    import torch

    get_image_features = _image_feature_method(model)
    if get_image_features is None:
        return 0
    processed = pixel_inputs(_inner(model), image_processor, [image])  # as the module that counts reads them
    if "pixel_values_images" in processed:  # a legacy output name (video_llava) for the pixel values
        processed.setdefault("pixel_values", processed["pixel_values_images"])
    prompt = torch.tensor([[_FIRST_TEXT_ID] * 4])  # what a second text encoder reads does not change the count
    processed.update(_text_encoder_inputs(get_image_features, prompt, torch.ones_like(prompt)))
    inputs = {key: (value.to(model.device, model.dtype) if value.is_floating_point() else value.to(model.device))
              if isinstance(value, torch.Tensor) else value
              for key, value in _image_feature_inputs(model, get_image_features, processed).items()}
    with torch.no_grad():
        output = get_image_features(**inputs)
    features = getattr(output, "pooler_output", output)
    if features is None and getattr(output, "deepstack_features", None):  # only (language layer, features) pairs,
        features = output.deepstack_features[0][1]  # each injected at its layer: one pair's features are the count
    width = feature_config(model).get_text_config(decoder=True).hidden_size
    count = _count(features)
    if count % width:
        raise ValueError(f"{type(model).__name__}.get_image_features gave {count} values, not a whole number of "
                         f"{width}-wide embeddings")
    return count // width


@dataclasses.dataclass(frozen=True)
class Row:
    """One prompt: its question and image."""

    question: str
    image: Image.Image


def image_sizes(model_type: str, image_processor: BaseImageProcessor | None, count: int) -> list[tuple[int, int]]:
    """``count`` image sizes: the reviewed ones, else alternately square and 3:2 at the image processor's side."""
    reviewed = image_text_recipe(model_type).images
    side = processor_side(image_processor) if image_processor is not None else DIMS.image_size
    sizes = list(reviewed) if reviewed else [(side, side), (side, side * 3 // 2)]
    return [sizes[index % len(sizes)] for index in range(count)]


def sample_rows(model_type: str, image_processor: BaseImageProcessor | None, count: int, *, seed: int = 0
                ) -> list[Row]:
    """``count`` prompts, each a question and a synthetic image (drawn from ``seed``) of :func:`image_sizes`."""
    images = synthetic_images(image_sizes(model_type, image_processor, count), seed=seed)
    return [Row(QUESTIONS[index % len(QUESTIONS)], image) for index, image in enumerate(images)]


def prompt_ids(tokenizer: PreTrainedTokenizerBase, question: str, image_block: Sequence[int]) -> list[int]:
    """A user turn holding the image then ``question``, and the assistant's turn opened (the tiny chat format)."""
    head = tokenizer.encode("<|im_start|>user\n", add_special_tokens=False)
    tail = tokenizer.encode(f"{question}<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
    return [*head, *image_block, *tail]


def _image_attention_mask(input_ids: torch.Tensor, attention_mask: torch.Tensor, tokens: ImageTokens
                          ) -> torch.Tensor:
    """``(batch, length, 1)``: which prompt tokens see the row's one image (cross-attend to it): those from its image
    token on, or every token when the prompt writes no image token (the image comes before the prompt)."""
    if tokens.image is None:
        return attention_mask[:, :, None]
    seen = (input_ids == tokens.image).long().cumsum(1).clamp(max=1)
    return (attention_mask * seen)[:, :, None]


def batch_inputs(model: PreTrainedModel, image_processor: BaseImageProcessor | None,
                 tokenizer: PreTrainedTokenizerBase, rows: Sequence[Row], *, features: Sequence[int] | None = None,
                 length: int = 0) -> dict[str, torch.Tensor]:
    """The forward inputs of ``rows`` for ``model`` (on the CPU): pixel inputs, ids and masks left-padded to the
    longest row (at least ``length``). A model without an image processor gets text inputs only; an encoder-decoder
    whose encoder reads no text (:func:`reads_text`) gets the prompt as ``decoder_input_ids`` and
    ``decoder_attention_mask``.

    ``features`` gives each row's image token count (default: measured with :func:`features_per_image`)."""
    import torch

    tokens = image_tokens(feature_config(model)) if image_processor is not None else ImageTokens(None)
    if features is None:
        features = [features_per_image(model, image_processor, row.image)
                    if image_processor is not None and tokens.image is not None else 0 for row in rows]
    sequences = [prompt_ids(tokenizer, row.question, tokens.block(count)) for row, count in zip(rows, features,
                                                                                                strict=True)]
    length = max(length, *(len(ids) for ids in sequences))
    input_ids = torch.tensor([[PAD_TOKEN_ID] * (length - len(ids)) + ids for ids in sequences])
    attention_mask = torch.tensor([[0] * (length - len(ids)) + [1] * len(ids) for ids in sequences])
    processed = pixel_inputs(model, image_processor, [row.image for row in rows]) if image_processor else {}
    inputs: dict[str, Any] = dict(processed)
    if model.config.is_encoder_decoder and not reads_text(model.forward):
        inputs.update(decoder_input_ids=input_ids, decoder_attention_mask=attention_mask)
    else:
        inputs.update(input_ids=input_ids, attention_mask=attention_mask)
        if model.config.is_encoder_decoder:
            inputs["decoder_input_ids"] = input_ids
    if tokens.image is not None:
        inputs.update(dict.fromkeys(_IMAGE_POSITION_MASKS, (input_ids == tokens.image).long()))
    if image_processor is not None:  # what the image processor gives under these names is kept
        inputs.setdefault("image_attention_mask", _image_attention_mask(input_ids, attention_mask, tokens))
        pixels = inputs.get("pixel_values")
        if isinstance(pixels, torch.Tensor) and pixels.dim() == 5:  # a stack of images per row, all present
            inputs.setdefault("pixel_attention_mask", torch.ones(pixels.shape[:2], dtype=torch.bool))
    inputs.setdefault("bbox", torch.zeros(*input_ids.shape, 4, dtype=torch.long))  # no word has a place on the page
    inputs.update(_text_encoder_inputs(model.forward, input_ids, attention_mask))
    accepted = _accepted(model.forward, inputs)
    return {key: value for key, value in accepted.items() if isinstance(value, torch.Tensor)}


def _shape(config: PreTrainedConfig, draw: Draw) -> list[int]:
    shape = []
    for field in draw.fields:
        value = getattr(config, field, None)
        value = find_field(config, field) if value is None else value
        if not isinstance(value, int) or isinstance(value, bool):
            raise LookupError(f"the drawn input {draw} names {field!r}, which {type(config).__name__} does not give "
                              f"as a number ({value!r})")
        shape.append(value)
    return shape


def drawn_inputs(config: PreTrainedConfig, draws: Mapping[str, Draw], rows: Sequence[tuple[int, int]]
                 ) -> dict[str, torch.Tensor]:
    """The ``draws`` (the reviewed ``drawn_inputs``) of ``rows`` on the CPU, by name: each row ``(seed, index)``'s
    values drawn from a generator seeded with the case's seed, the row's index in the case and the input's name, so
    that any subset of the rows (a DDP rank's share) gets the values the whole batch holds. ``normal``: standard
    normal floats; ``uniform``: floats in [0, 1); ``tokens``: ordinary text token ids of the tiny vocabulary (no
    special or reserved one), below the config's text ``vocab_size``."""
    import torch

    drawn = {}
    for name, draw in draws.items():
        shape = _shape(config, draw)
        values = []
        for seed, index in rows:
            generator = torch.Generator().manual_seed(zlib.crc32(f"{seed}:{index}:{name}".encode()))
            if draw.kind == "normal":
                values.append(torch.randn(shape, generator=generator))
            elif draw.kind == "uniform":
                values.append(torch.rand(shape, generator=generator))
            else:
                vocab = min(config.get_text_config(decoder=True).vocab_size, RESERVED_TOKEN_IDS[-1])
                values.append(torch.randint(_FIRST_TEXT_ID, vocab, shape, generator=generator))
        drawn[name] = torch.stack(values)
    return drawn
