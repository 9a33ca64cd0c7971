"""The architecture's own processor, built locally around the tiny tokenizer, for users' code (pipelines, trl).

The matrix does not need it (:mod:`.inputs` builds the inputs from the image processor); a user's
``pipeline("image-text-to-text", model=checkpoint)`` or ``trl sft`` loads a processor with ``AutoProcessor``. The
processor class comes from transformers' processor mapping, else it is the one processor class the model's module
defines; its keyword arguments that the tiny config also has (``patch_size``, ``vision_feature_select_strategy``...,
or under another name: :data:`~.image_processor.CONFIG_ALIASES`) take the config's values, an argument that gives the
number of image tokens of every image (:data:`IMAGE_TOKEN_COUNTS`, also where the processor reads it of its image
processor, which leaves it unset) the number of features the tiny model computes for one, then the reviewed
``processor_config`` of ``compat/tiny_image_text.toml``. Its other parts are a second tiny tokenizer (a Q-Former's)
and the architecture's feature extractor, sized as the audio group's.

Its special tokens get the ids the config gives them: the processor is built once to learn its token texts
(``image_token``...), then again with a tiny tokenizer whose reserved tokens carry those texts at the config's ids:
the config's image id goes to the token the processor writes for each image feature (the one its ``image_token_id``
names, else its ``image_token``), other new special tokens take free reserved ids. A processor that cannot be built
around the tiny tokenizer as it is is built once more around one that answers every special-token attribute the
processor reads of it and the tiny tokenizer lacks (``tokenizer.image_token``, ``boi_token_id``..., as checkpoints'
tokenizers declare them) with a token named for it (``<|image_token|>``); the final tokenizer declares those it was
asked for, at reserved ids. Its chat template is the tiny ChatML one, with each image item rendered as the first of
:func:`image_renderings` with which the processor writes as many image tokens as the model has features for the
images it makes (:func:`as_processor_calls`): its placeholder, that placeholder between its image start and end
tokens, or nothing (a processor that writes an image's tokens itself, or one with no image token for a model whose
config names none: the image reaches the model by its pixels alone). A processor that marks an image's positions
with :data:`POSITION_MASK` is counted by that mask, and needs no image token.

A processor that cannot be built here (a class that needs torchvision, or a video processor) raises
:class:`ProcessorUnavailableError` with the reason.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_diffusion import REQUIREMENTS
from hf_neuron.compat.tiny_image_text import image_text_recipe
from hf_neuron.tiny.image_text.image_processor import (
    CONFIG_ALIASES,
    find_field,
    processor_side,
    takes_images,
    tiny_image_processor,
)
from hf_neuron.tiny.image_text.images import synthetic_image
from hf_neuron.tiny.image_text.inputs import features_per_image, image_tokens
from hf_neuron.tiny.tokenizer import RESERVED_TOKEN_IDS, VOCAB_SIZE, tiny_tokenizer

if TYPE_CHECKING:
    from PIL import Image
    from transformers import PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerBase, ProcessorMixin
    from transformers.image_processing_utils import BaseImageProcessor

__all__ = ["IMAGE_TOKEN_COUNTS", "POSITION_MASK", "ProcessorUnavailableError", "as_processor_calls", "build_processor",
           "chat_template", "image_renderings", "image_token_text", "own_processor", "verified_processor"]

#: Processor arguments that are not configuration (the parts and the template).
_PARTS = {"self", "image_processor", "tokenizer", "video_processor", "feature_extractor", "audio_processor",
          "chat_template", "args", "kwargs"}


#: The processor output marking the prompt's image positions, where the model reads that instead of the ids there
#: (Kosmos-2 writes different ids at each image's positions).
POSITION_MASK = "image_embeds_position_mask"

#: Processor arguments that give the number of image tokens every image is written as (one image, one count).
IMAGE_TOKEN_COUNTS = ("image_seq_length", "image_seq_len", "num_image_tokens")


class ProcessorUnavailableError(RuntimeError):
    """The architecture's processor cannot be built here; the message says why."""


def chat_template(image_token: str) -> str:
    """The tiny ChatML template, rendering string contents and content lists whose image items are
    ``image_token`` (the assistant's turn marked for ``return_assistant_tokens_mask``)."""
    content = (
        "{%- if message['content'] is string -%}{{ message['content'] }}{%- else -%}"
        "{%- for item in message['content'] -%}"
        "{%- if item['type'] == 'image' -%}{{ '" + image_token + "' }}"
        "{%- elif item['type'] == 'text' -%}{{ item['text'] }}{%- endif -%}"
        "{%- endfor -%}{%- endif -%}"
    )
    return (
        "{%- for message in messages -%}"
        "{{ '<|im_start|>' + message['role'] + '\\n' }}"
        "{%- if message['role'] == 'assistant' -%}"
        "{% generation %}" + content + "{{ '<|im_end|>' }}{% endgeneration %}"
        "{%- else -%}" + content + "{{ '<|im_end|>' }}{%- endif -%}"
        "{{ '\\n' }}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
    )


def _module_processor(model_type: str) -> str | None:
    """The name of the one processor class that ``model_type``'s module in transformers exports, for a type the
    processor mapping leaves out (Kosmos-2's; a Qwen-Omni thinker's is its omni model's, in the same module)."""
    import importlib

    from transformers.models.auto.configuration_auto import model_type_to_module_name
    from transformers.processing_utils import ProcessorMixin

    try:
        module = importlib.import_module(f"transformers.models.{model_type_to_module_name(model_type)}")
    except ImportError:
        return None
    names = [name for name in getattr(module, "__all__", dir(module)) if name.endswith("Processor")
             and isinstance(found := getattr(module, name, None), type) and issubclass(found, ProcessorMixin)]
    return names[0] if len(names) == 1 else None


def _processor_class(model_type: str) -> type[ProcessorMixin]:
    import transformers
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    from transformers.utils.import_utils import DummyObject

    name = PROCESSOR_MAPPING_NAMES.get(model_type) or _module_processor(model_type)
    if name is None:
        raise ProcessorUnavailableError(f"transformers {transformers.__version__} maps {model_type} to no processor, "
                                        "and its model's module defines none")
    cls = getattr(transformers, name, None)
    missing = f"torchvision, which does not import here ({REQUIREMENTS['torchvision']})"
    if cls is None or isinstance(cls, DummyObject):
        raise ProcessorUnavailableError(f"{name} cannot be built here: it needs a library this machine lacks: "
                                        f"{missing}")
    if "video_processor" in inspect.signature(cls.__init__).parameters:
        raise ProcessorUnavailableError(f"{name} needs a video processor, which transformers builds only with "
                                        f"{missing}")
    return cls


def _kwargs(cls: type[ProcessorMixin], model_type: str, config: PreTrainedConfig,
            image_features: int | None) -> dict[str, Any]:
    """The processor's configuration arguments that the tiny config also has, an image-token count the config has not
    given ``image_features`` (when given), then the reviewed ones."""
    kwargs = {}
    for name in inspect.signature(cls.__init__).parameters:
        value = find_field(config, CONFIG_ALIASES.get(name, name)) if name not in _PARTS else None
        if value is None and name in IMAGE_TOKEN_COUNTS:
            value = image_features
        if value is not None and not isinstance(value, Mapping):
            kwargs[name] = value
    return {**kwargs, **image_text_recipe(model_type).processor_config}


def _sub_processors(cls: type[ProcessorMixin], model_type: str, config: PreTrainedConfig) -> dict[str, Any]:
    """The parts ``cls`` takes besides its image processor and tokenizer: a second tokenizer (a Q-Former's
    ``qformer_tokenizer``) is another tiny tokenizer, a ``feature_extractor`` the architecture's own, sized to the tiny
    config as the audio group's (an image-and-audio model's processor needs it to build, even for images alone)."""
    from transformers.processing_utils import _get_modality_for_attribute

    from hf_neuron.tiny.audio.feature_extractor import FeatureExtractorUnavailableError, tiny_feature_extractor

    parts: dict[str, Any] = {}
    for name in cls.get_attributes():
        if name in ("image_processor", "tokenizer"):
            continue
        modality = _get_modality_for_attribute(name)
        if modality == "tokenizer":
            parts[name] = tiny_tokenizer()
        elif modality == "feature_extractor":
            try:
                parts[name] = tiny_feature_extractor(model_type, config)
            except FeatureExtractorUnavailableError as why:
                raise ProcessorUnavailableError(f"{cls.__name__} needs a feature extractor: {why}") from why
    return parts


def _asking(tokenizer: PreTrainedTokenizerBase) -> dict[str, str]:
    """Make ``tokenizer`` answer every special-token attribute it lacks (a name ending in ``_token``, or its ``_id``)
    with a new special token named for it (``image_token`` -> ``<|image_token|>``); the returned mapping fills with the
    names asked and their texts."""
    asked: dict[str, str] = {}
    base = type(tokenizer)

    def answer(self: PreTrainedTokenizerBase, key: str) -> Any:
        try:
            return base.__getattr__(self, key)
        except AttributeError:
            name = key.removesuffix("_id")
            if key.startswith("_") or not name.endswith("_token"):
                raise
        text = asked.setdefault(name, f"<|{name}|>")
        if text not in self.get_vocab():
            self.add_tokens([text], special_tokens=True)
        return self.convert_tokens_to_ids(text) if key != name else text

    tokenizer.__class__ = type(f"Asking{base.__name__}", (base,), {"__getattr__": answer})
    return asked


def _probe(cls: type[ProcessorMixin], image_processor: BaseImageProcessor,
           kwargs: Mapping[str, Any]) -> tuple[ProcessorMixin, PreTrainedTokenizerBase, dict[str, str]]:
    """``cls`` built around the tiny tokenizer; where its constructor fails, around one that answers the special-token
    attributes the processor reads of it (:func:`_asking`). The processor, its tokenizer and the attributes asked
    (a processor that falls back on its own tokens when the tokenizer declares none keeps them, as with a checkpoint
    whose tokenizer declares none)."""
    tokenizer = tiny_tokenizer()
    try:
        return cls(image_processor=image_processor, tokenizer=tokenizer, **kwargs), tokenizer, {}
    except Exception:  # noqa: BLE001 - built again below, whose failure is the one reported
        tokenizer = tiny_tokenizer()
        asked = _asking(tokenizer)
        return cls(image_processor=image_processor, tokenizer=tokenizer, **kwargs), tokenizer, asked


def _text(token: Any) -> str | None:
    """A token's text (a string or an ``AddedToken``), None for anything else or an empty one."""
    from tokenizers import AddedToken

    text = token.content if isinstance(token, AddedToken) else token
    return text if isinstance(text, str) and text else None


def image_token_text(processor: ProcessorMixin) -> str | None:
    """The text of the token ``processor`` writes for each image feature: its tokenizer's ``image_token`` where the
    tokenizer declares one (ShieldGemma 2's processor calls its ``boi_token`` the image token, and expands it to the
    tokenizer's), else the one the processor's ``image_token_id`` names (a placeholder may be expanded to other
    tokens: Aya Vision's ``<image>`` to ``<|IMG_PATCH|>``), else its ``image_token``; None when it has none of them
    (the image reaches the model by its pixels alone)."""
    tokenizer = processor.tokenizer
    if (declared := _text(getattr(tokenizer, "image_token", None))) is not None:
        return declared
    token_id = getattr(processor, "image_token_id", None)
    if isinstance(token_id, int) and not isinstance(token_id, bool) and token_id != tokenizer.unk_token_id:
        return _text(tokenizer.convert_ids_to_tokens(token_id))
    return _text(getattr(processor, "image_token", None))


def _token_texts(processor: ProcessorMixin, tokenizer: PreTrainedTokenizerBase) -> dict[str, str]:
    """The processor's special token texts (``image_token`` -> ``"<image>"``) that the tiny vocabulary lacks."""
    texts = {name: value for name, value in vars(processor).items()
             if name.endswith("_token") and isinstance(value, str) and value}
    ids: dict[str, int] = {text: tokenizer.convert_tokens_to_ids(text) for text in texts.values()}  # type: ignore[misc]
    unknown = tokenizer.unk_token_id
    return {name: text for name, text in texts.items() if ids[text] >= VOCAB_SIZE or ids[text] == unknown}


def _named_ids(config: PreTrainedConfig, texts: Sequence[str], image_text: str | None = None) -> dict[int, str]:
    """Reserved id -> token text for the new special ``texts``: ``image_text`` (one of them) at the config's image id,
    the others at free reserved ids."""
    image_id = image_tokens(config).image
    named: dict[int, str] = {}
    if image_id is not None and image_text is not None and image_text in texts:
        named[image_id] = image_text
    used = _config_token_ids(config) | set(named)
    free = [token_id for token_id in reversed(RESERVED_TOKEN_IDS) if token_id not in used]
    for text in texts:
        if text not in named.values():
            if not free:
                raise ProcessorUnavailableError(f"more special tokens than reserved ids: {sorted(texts)}")
            named[free.pop(0)] = text
    return named


def _config_token_ids(config: PreTrainedConfig) -> set[int]:
    ids = set()
    for part in (config, config.get_text_config(decoder=True)):
        for name, value in part.to_dict().items():
            if "token" in name and isinstance(value, int) and not isinstance(value, bool):
                ids.add(value)
    return ids


def build_processor(model_type: str, config: PreTrainedConfig, image_processor: BaseImageProcessor, *,
                    image_features: int | None = None) -> ProcessorMixin:
    """``model_type``'s own processor around the tiny tokenizer and ``image_processor`` (see the module docstring);
    ``image_features``: the number of features the tiny model computes for an image, where known (set on
    ``image_processor`` too where it has an unset image-token count)."""
    cls = _processor_class(model_type)
    for name in IMAGE_TOKEN_COUNTS:  # a count the processor reads of its image processor (Florence-2's), unset there
        if image_features is not None and name in vars(image_processor) and getattr(image_processor, name) is None:
            setattr(image_processor, name, image_features)
    kwargs = {**_kwargs(cls, model_type, config, image_features), **_sub_processors(cls, model_type, config)}
    try:
        probe, probe_tokenizer, asked = _probe(cls, image_processor, kwargs)
        new_specials = [token.content for token_id, token in probe_tokenizer.added_tokens_decoder.items()
                        if token_id >= VOCAB_SIZE and token.special]
        texts = list(dict.fromkeys([*sorted(_token_texts(probe, probe_tokenizer).values()), *new_specials]))
        # built again with every token known, to learn which one it writes per image feature (the probe's tokenizer
        # gives an unknown token some id), then with that one at the config's image id
        known = cls(image_processor=image_processor, tokenizer=tiny_tokenizer(_named_ids(config, texts), asked),
                    **kwargs)
        tokenizer = tiny_tokenizer(_named_ids(config, texts, image_token_text(known)), asked)
        processor = cls(image_processor=image_processor, tokenizer=tokenizer, **kwargs)
    except ProcessorUnavailableError:
        raise
    except Exception as error:  # any constructor failure means: not available, with why
        raise ProcessorUnavailableError(f"{cls.__name__}(...) failed: {type(error).__name__}: {error}") from error
    expected = image_tokens(config).image
    placeholder, image_token = _text(getattr(processor, "image_token", None)), image_token_text(processor)
    if expected is not None and POSITION_MASK not in processor.model_input_names:
        if placeholder is None or image_token is None:
            raise ProcessorUnavailableError(f"{cls.__name__} has no image_token")
        got = tokenizer.convert_tokens_to_ids(image_token)
        if got != expected:
            raise ProcessorUnavailableError(f"{cls.__name__}'s image token {image_token!r} has id {got}, the config's "
                                            f"is {expected}")
    processor.chat_template = chat_template(placeholder or "")
    return processor


#: Processor attributes holding the tokens that open and close an image's placeholder, in pairs.
_IMAGE_BOUNDS = (("image_start_token", "image_end_token"), ("start_image_token", "end_image_token"))


def image_renderings(processor: ProcessorMixin) -> list[str]:
    """The texts a chat template may write for an image item, in the order they are tried: the processor's
    placeholder (its ``image_placeholder_token`` where it has one apart from the token it expands it to, as
    Qianfan-OCR's ``<image>``, else its ``image_token``), that placeholder between the processor's image start and end
    tokens (HunYuan-VL finds the image by them), and nothing (a processor that writes an image's tokens itself: BLIP-2
    and InstructBLIP prepend their query tokens, Florence-2 its image tokens; or one with no image token)."""
    placeholder = _text(getattr(processor, "image_placeholder_token", None)) or _text(
        getattr(processor, "image_token", None))
    renderings = [placeholder] if placeholder is not None else []
    for start, end in ((_text(getattr(processor, a, None)), _text(getattr(processor, b, None)))
                       for a, b in _IMAGE_BOUNDS):
        if placeholder is not None and start is not None and end is not None:
            renderings.append(start + placeholder + end)
    return [*renderings, ""]


def _written(processor: ProcessorMixin, image_processor: BaseImageProcessor, image: Image.Image,
             rendering: str) -> int:
    """How many image tokens ``processor`` writes for a chat with ``image``, its template rendering the image item as
    ``rendering``."""
    processor.chat_template = chat_template(rendering)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True)
    try:
        output = processor(images=[image], text=[text], return_tensors="pt")
        ids = output.get("input_ids")
    except (KeyError, TypeError, ValueError) as why:  # a substitute image processor lacks an output it reads
        raise ProcessorUnavailableError(f"{type(processor).__name__} cannot read {type(image_processor).__name__}'s "
                                        f"output: {type(why).__name__}: {why}") from why
    if (positions := output.get(POSITION_MASK)) is not None:
        return int((positions[0] == 1).sum())  # Kosmos-2.5 marks the start and end tokens -1
    image_token = image_token_text(processor)
    if ids is None or image_token is None:  # no prompt for the model's input (an encoder-decoder's text is the
        return 0                            # decoder's: Pix2Struct), or no image token in it
    return int((ids[0] == processor.tokenizer.convert_tokens_to_ids(image_token)).sum())


def as_processor_calls(processor: ProcessorMixin) -> BaseImageProcessor:
    """``processor``'s image processor as the processor calls it: a copy with the settings the processor's own image
    defaults override (its ``images_kwargs``, which win over the image processor's: Aria's processor asks for
    980-pixel images, Qianfan-OCR's for tiles), else the image processor itself."""
    import copy

    image_processor = processor.image_processor
    try:
        defaults = processor._merge_kwargs(tokenizer_init_kwargs=processor.tokenizer.init_kwargs)["images_kwargs"]
    except (TypeError, ValueError):  # a substitute image processor lacks one of them: the processor's call says so
        return image_processor
    settings = {key: value for key, value in defaults.items()
                if key in vars(image_processor) and getattr(image_processor, key) != value}
    if not settings:
        return image_processor
    called = copy.deepcopy(image_processor)
    for key, value in settings.items():
        setattr(called, key, value)
    return called


def verified_processor(model_type: str, config: PreTrainedConfig, model: PreTrainedModel,
                       image_processor: BaseImageProcessor) -> ProcessorMixin:
    """The architecture's own processor, checked to write as many image tokens for an image as the model has
    features for it (none where the config names no image token and the model reads no :data:`POSITION_MASK`, as the
    matrix's inputs write: the image reaches the model by its pixels alone), its chat template rendering an image
    item as the first of :func:`image_renderings` that does; else :class:`ProcessorUnavailableError`, saying both
    numbers, or what it could not read, for the first rendering."""
    side = processor_side(image_processor)
    image = synthetic_image(side, side * 3 // 2)
    reads = image_tokens(config).image is not None or POSITION_MASK in inspect.signature(model.forward).parameters
    expected = features_per_image(model, image_processor, image) if reads else 0
    processor = build_processor(model_type, config, image_processor, image_features=expected or None)
    if expected and (overridden := as_processor_calls(processor)) is not image_processor:
        expected = features_per_image(model, overridden, image)
    first: ProcessorUnavailableError | None = None
    for rendering in image_renderings(processor):
        try:
            written = _written(processor, image_processor, image, rendering)
        except ProcessorUnavailableError as why:
            first = first or why
            continue
        if written == expected:
            return processor
        first = first or ProcessorUnavailableError(
            f"{type(processor).__name__} writes {written} image tokens for a {image.height}x{image.width} image, the "
            f"model has {expected} features for it")
    raise first or ProcessorUnavailableError(f"{type(processor).__name__} writes no chat")


def own_processor(model_type: str, config: PreTrainedConfig, model: PreTrainedModel) -> ProcessorMixin:
    """The architecture's own processor for the tiny ``model`` of ``config``, around its tiny image processor, checked
    against the model (:func:`verified_processor`); :class:`ProcessorUnavailableError` when it takes no images or the
    processor does not build or agree here (LookupError when no image processor runs here)."""
    if not takes_images(model):
        raise ProcessorUnavailableError(f"{type(model).__name__} takes no images")
    return verified_processor(model_type, config, model, tiny_image_processor(model_type, config))
