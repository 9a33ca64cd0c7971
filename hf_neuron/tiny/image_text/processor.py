"""The architecture's own processor, built locally around the tiny tokenizer, for users' code (pipelines, trl).

The matrix does not need it (:mod:`.inputs` builds the inputs from the image processor); a user's
``pipeline("image-text-to-text", model=checkpoint)`` or ``trl sft`` loads a processor with ``AutoProcessor``. The
processor class comes from transformers' processor mapping; its keyword arguments that the tiny config also has
(``patch_size``, ``vision_feature_select_strategy``...) take the config's values, then the reviewed
``processor_config`` of ``compat/tiny_image_text.toml``. Its special tokens get the ids the config gives them: the
processor is built once to learn its token texts (``image_token``...), then again with a tiny tokenizer whose reserved
tokens carry those texts at the config's ids (other new special tokens take free reserved ids). Its chat template is
the tiny ChatML one, with each image item rendered as the processor's image token.

A processor that cannot be built here (a class that needs torchvision, or a video processor) raises
:class:`ProcessorUnavailableError` with the reason.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_image_text import image_text_recipe
from hf_neuron.tiny.image_text.image_processor import find_field
from hf_neuron.tiny.image_text.inputs import image_tokens
from hf_neuron.tiny.tokenizer import RESERVED_TOKEN_IDS, VOCAB_SIZE, tiny_tokenizer

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedTokenizerBase, ProcessorMixin
    from transformers.image_processing_utils import BaseImageProcessor

__all__ = ["ProcessorUnavailableError", "build_processor", "chat_template"]

#: Processor arguments that are not configuration (the parts and the template).
_PARTS = {"self", "image_processor", "tokenizer", "video_processor", "feature_extractor", "audio_processor",
          "chat_template", "args", "kwargs"}


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


def _processor_class(model_type: str) -> type[ProcessorMixin]:
    import transformers
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    from transformers.utils.import_utils import DummyObject

    name = PROCESSOR_MAPPING_NAMES.get(model_type)
    if name is None:
        raise ProcessorUnavailableError(f"transformers {transformers.__version__} maps {model_type} to no processor")
    cls = getattr(transformers, name, None)
    if cls is None or isinstance(cls, DummyObject):
        raise ProcessorUnavailableError(f"{name} cannot be built here: it needs a library this machine lacks "
                                        "(torchvision)")
    if "video_processor" in inspect.signature(cls.__init__).parameters:
        raise ProcessorUnavailableError(f"{name} needs a video processor, which transformers builds only with "
                                        "torchvision")
    return cls


def _kwargs(cls: type[ProcessorMixin], model_type: str, config: PreTrainedConfig) -> dict[str, Any]:
    """The processor's configuration arguments that the tiny config also has, then the reviewed ones."""
    kwargs = {}
    for name in inspect.signature(cls.__init__).parameters:
        value = find_field(config, name) if name not in _PARTS else None
        if value is not None and not isinstance(value, Mapping):
            kwargs[name] = value
    return {**kwargs, **image_text_recipe(model_type).processor_config}


def _token_texts(processor: ProcessorMixin, tokenizer: PreTrainedTokenizerBase) -> dict[str, str]:
    """The processor's special token texts (``image_token`` -> ``"<image>"``) that the tiny vocabulary lacks."""
    texts = {name: value for name, value in vars(processor).items()
             if name.endswith("_token") and isinstance(value, str) and value}
    ids: dict[str, int] = {text: tokenizer.convert_tokens_to_ids(text) for text in texts.values()}  # type: ignore[misc]
    unknown = tokenizer.unk_token_id
    return {name: text for name, text in texts.items() if ids[text] >= VOCAB_SIZE or ids[text] == unknown}


def _named_ids(config: PreTrainedConfig, texts: Mapping[str, str], extra: list[str]) -> dict[int, str]:
    """Reserved id -> token text: the image token at the config's image id, the others at free reserved ids."""
    image_id = image_tokens(config).image
    named: dict[int, str] = {}
    if image_id is not None and "image_token" in texts:
        named[image_id] = texts["image_token"]
    used = _config_token_ids(config) | set(named)
    free = [token_id for token_id in reversed(RESERVED_TOKEN_IDS) if token_id not in used]
    for text in [*(text for name, text in sorted(texts.items()) if text not in named.values()), *extra]:
        if text not in named.values():
            if not free:
                raise ProcessorUnavailableError(f"more special tokens than reserved ids: {sorted(texts.values())}")
            named[free.pop(0)] = text
    return named


def _config_token_ids(config: PreTrainedConfig) -> set[int]:
    ids = set()
    for part in (config, config.get_text_config(decoder=True)):
        for name, value in part.to_dict().items():
            if "token" in name and isinstance(value, int) and not isinstance(value, bool):
                ids.add(value)
    return ids


def build_processor(model_type: str, config: PreTrainedConfig, image_processor: BaseImageProcessor) -> ProcessorMixin:
    """``model_type``'s own processor around the tiny tokenizer and ``image_processor`` (see the module docstring)."""
    cls = _processor_class(model_type)
    kwargs = _kwargs(cls, model_type, config)
    try:
        probe_tokenizer = tiny_tokenizer()
        probe = cls(image_processor=image_processor, tokenizer=probe_tokenizer, **kwargs)
        new_specials = [token.content for token_id, token in probe_tokenizer.added_tokens_decoder.items()
                        if token_id >= VOCAB_SIZE and token.special]
        named = _named_ids(config, _token_texts(probe, probe_tokenizer), new_specials)
        tokenizer = tiny_tokenizer(named)
        processor = cls(image_processor=image_processor, tokenizer=tokenizer, **kwargs)
    except ProcessorUnavailableError:
        raise
    except Exception as error:  # any constructor failure means: not available, with why
        raise ProcessorUnavailableError(f"{cls.__name__}(...) failed: {type(error).__name__}: {error}") from error
    image_token = getattr(processor, "image_token", None)
    if not isinstance(image_token, str):
        raise ProcessorUnavailableError(f"{cls.__name__} has no image_token")
    expected = image_tokens(config).image
    got = tokenizer.convert_tokens_to_ids(image_token)
    if expected is not None and got != expected:
        raise ProcessorUnavailableError(f"{cls.__name__}'s image token {image_token!r} has id {got}, the config's is "
                                   f"{expected}")
    processor.chat_template = chat_template(image_token)
    return processor
