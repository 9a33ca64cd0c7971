"""Write tiny image-text checkpoints: config, seeded weights, tokenizer, image processor, and the processor.

A materialized directory loads offline with ``AutoModelForImageTextToText.from_pretrained(dir)``,
``AutoTokenizer.from_pretrained(dir)`` and the architecture's image processor (:func:`load_image_processor`). When the
architecture's own processor builds here and agrees with the model on the number of image tokens per image
(:mod:`.processor`), it is saved too, so that ``AutoProcessor.from_pretrained(dir)`` and
``pipeline("image-text-to-text", model=dir)`` work; the stamp says which processor was saved, or why none was.
Publishing is the text checkpoints' (:func:`hf_neuron.tiny.transformers.checkpoint.publish`): atomic, shared by
concurrent builders, reused while its content key holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.compat.tiny_image_text import image_text_recipe
from hf_neuron.tiny.image_text.config import tiny_image_text_config, tiny_image_text_config_kwargs
from hf_neuron.tiny.image_text.image_processor import (
    image_processor_class,
    takes_images,
    tiny_image_processor,
    tiny_image_processor_kwargs,
)
from hf_neuron.tiny.image_text.processor import ProcessorUnavailableError, verified_processor
from hf_neuron.tiny.tokenizer import tiny_tokenizer, tokenizer_fingerprint
from hf_neuron.tiny.transformers.checkpoint import STAMP, publish
from hf_neuron.tiny.transformers.config import DIMS, TinyDims
from hf_neuron.tiny.transformers.models import build_model

if TYPE_CHECKING:
    from transformers import PreTrainedConfig
    from transformers.image_processing_utils import BaseImageProcessor

__all__ = ["content_key", "load_image_processor", "materialize", "saved_processor"]

_FORMAT = 3


def content_key(model_type: str, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                dims: TinyDims = DIMS) -> str:
    """A hash of everything the checkpoint's files depend on."""
    import tokenizers
    import torch
    import transformers

    config = tiny_image_text_config(model_type, base=base, dims=dims)
    recipe = {
        "format": _FORMAT,
        "model_type": model_type,
        "seed": seed,
        "config": tiny_image_text_config_kwargs(model_type, base=base, dims=dims),
        "image_processor": _image_processor_recipe(model_type, config),
        "reviewed": repr(image_text_recipe(model_type)),
        "tokenizer": tokenizer_fingerprint(),
        "versions": [transformers.__version__, torch.__version__, tokenizers.__version__],
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, default=repr).encode()).hexdigest()


def _image_processor_recipe(model_type: str, config: PreTrainedConfig) -> Any:
    try:
        return [image_processor_class(model_type).__name__, tiny_image_processor_kwargs(model_type, config)]
    except LookupError as why:  # a model that takes no images has none
        return str(why)


def load_image_processor(model_type: str, checkpoint: Path) -> BaseImageProcessor:
    """The image processor saved in ``checkpoint``, with the class it was built with."""
    return image_processor_class(model_type).from_pretrained(checkpoint)


def saved_processor(checkpoint: Path) -> str:
    """Which processor ``checkpoint`` holds: its class name, or ``"none: <why>"`` when the architecture's own processor
    did not build here (then ``AutoProcessor`` finds only the tokenizer)."""
    processor: str = json.loads((Path(checkpoint) / STAMP).read_text())["processor"]
    return processor


def materialize(model_type: str, out_dir: Path, *, seed: int = 0, base: Mapping[str, Any] | None = None,
                dims: TinyDims = DIMS) -> Path:
    """Write the tiny image-text ``model_type`` checkpoint to ``out_dir`` (reused when already there); from ``base``
    (a checkpoint's config) and with ``dims`` where given (a real checkpoint's slice keeps width)."""

    def write(staging: Path) -> dict[str, Any]:
        config = tiny_image_text_config(model_type, base=base, dims=dims)
        model = build_model(model_type, seed=seed, config=config)
        model.save_pretrained(staging)
        try:
            if not takes_images(model):
                raise ProcessorUnavailableError(f"{type(model).__name__} takes no images")
            image_processor = tiny_image_processor(model_type, config)
            try:
                processor = verified_processor(model_type, config, model, image_processor)
            finally:  # with the image-token count the processor reads of it, where it had none (Florence-2's)
                image_processor.save_pretrained(staging)
        except ProcessorUnavailableError as why:
            tiny_tokenizer().save_pretrained(staging)
            saved = f"none: {why}"
        else:
            processor.save_pretrained(staging)
            saved = type(processor).__name__
        return {"model_type": model_type, "seed": seed, "processor": saved}

    return publish(out_dir, content_key(model_type, seed=seed, base=base, dims=dims), write)
