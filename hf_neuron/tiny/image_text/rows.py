"""The image-text rows of a case: the inputs the transformers scenarios hand to vision-language models.

The scenarios pass token ids around (``sample_ids`` -> ``model_inputs``, or a DDP rank's share of them); a
vision-language model also needs the images behind those ids. :func:`sample_ids` builds the case's rows (a question
and a synthetic image each, the image processor's pixel inputs, each image placeholder expanded to the model's feature
count, :func:`~.inputs.batch_inputs`) and remembers, for each row's token ids, the prompt and
image that made them. :func:`inputs_for` rebuilds the full inputs of any of those rows, alone or together (a rank's
share), padded to the length they were given with, and checks that they give back exactly the given ids, with the
reviewed ``drawn_inputs`` of those rows (drawn from the case's seed and each row's index,
:func:`~.inputs.drawn_inputs`); :func:`drawn_labels` gives the drawn input a training step passes as labels, where
the reviewed data names one. Ids that :func:`sample_ids` did not make are refused: a vision-language case never
silently runs on text alone.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import TYPE_CHECKING

from hf_neuron.compat.tiny_image_text import image_text_recipe
from hf_neuron.tiny.image_text.checkpoint import load_image_processor
from hf_neuron.tiny.image_text.inputs import (
    Row,
    batch_inputs,
    drawn_inputs,
    feature_config,
    features_per_image,
    image_tokens,
    sample_rows,
)
from hf_neuron.tiny.tokenizer import PAD_TOKEN_ID
from hf_neuron.tiny.transformers.inputs import prompt_of

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase
    from transformers.image_processing_utils import BaseImageProcessor

__all__ = ["drawn_labels", "inputs_for", "sample_ids"]


@dataclasses.dataclass(frozen=True)
class _Made:
    """What made one row: the case's architecture and checkpoint, the prompt and image, the image token count, the
    case's seed and the row's index (which its drawn inputs are drawn from)."""

    model_type: str
    checkpoint: Path
    row: Row
    features: int
    seed: int
    index: int


#: Rows made in this process, by their token ids without the left padding.
_MADE: dict[tuple[int, ...], _Made] = {}


@functools.cache
def _parts(model_type: str, checkpoint: Path) -> tuple[BaseImageProcessor | None, PreTrainedTokenizerBase]:
    from transformers import AutoTokenizer

    has_images = (checkpoint / "preprocessor_config.json").is_file()
    image_processor = load_image_processor(model_type, checkpoint) if has_images else None
    return image_processor, AutoTokenizer.from_pretrained(checkpoint)


def _unpadded(ids: torch.Tensor) -> tuple[int, ...]:
    values = ids.tolist()
    start = next((index for index, value in enumerate(values) if value != PAD_TOKEN_ID), len(values))
    return tuple(values[start:])


def sample_ids(model_type: str, checkpoint: Path, model: PreTrainedModel, rows: int, seed: int) -> torch.Tensor:
    """``(rows, length)`` token ids of the case's image-text prompts on the CPU (left-padded), remembered for
    :func:`inputs_for`."""
    image_processor, tokenizer = _parts(model_type, checkpoint)
    prompts = sample_rows(model_type, image_processor, rows, seed=seed)
    has_tokens = image_processor is not None and image_tokens(feature_config(model)).image is not None
    features = [features_per_image(model, image_processor, row.image) if has_tokens else 0  # type: ignore[arg-type]
                for row in prompts]
    input_ids = prompt_of(batch_inputs(model, image_processor, tokenizer, prompts, features=features))
    for index, (ids, row, count) in enumerate(zip(input_ids, prompts, features, strict=True)):
        _MADE[_unpadded(ids)] = _Made(model_type, checkpoint, row, count, seed, index)
    return input_ids


def _made(input_ids: torch.Tensor) -> list[_Made]:
    made = [_MADE.get(_unpadded(ids)) for ids in input_ids.cpu()]
    if any(entry is None for entry in made) or not made:
        raise LookupError("these token ids were not made by the image-text sample_ids of this process: a "
                          "vision-language model needs the images behind its prompts")
    return [entry for entry in made if entry is not None]


def _on(model: PreTrainedModel, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``inputs`` on ``model``'s device, floating ones in its dtype."""
    return {key: value.to(model.device, model.dtype) if value.is_floating_point() else value.to(model.device)
            for key, value in inputs.items()}


def inputs_for(model: PreTrainedModel, input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """The full inputs of rows that :func:`sample_ids` made, with their drawn inputs (not the training labels), on
    ``model``'s device, floating inputs in its dtype."""
    import torch

    entries = _made(input_ids)
    image_processor, tokenizer = _parts(entries[0].model_type, entries[0].checkpoint)
    inputs = batch_inputs(model, image_processor, tokenizer, [entry.row for entry in entries],
                          features=[entry.features for entry in entries], length=input_ids.shape[1])
    if not torch.equal(prompt_of(inputs), input_ids.cpu()):
        raise AssertionError("the image-text inputs rebuilt for these rows do not give back their token ids")
    recipe = image_text_recipe(entries[0].model_type)
    draws = {name: draw for name, draw in recipe.drawn_inputs.items() if name != recipe.labels}
    inputs.update(drawn_inputs(model.config, draws, [(entry.seed, entry.index) for entry in entries]))
    return _on(model, inputs)


def drawn_labels(model: PreTrainedModel, input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """The training labels of rows that :func:`sample_ids` made, by the name the model's ``forward`` reads them
    under, when the reviewed data names a drawn input as the labels (a policy's ``actions``); empty otherwise."""
    entries = _made(input_ids)
    recipe = image_text_recipe(entries[0].model_type)
    if recipe.labels is None:
        return {}
    draws = {recipe.labels: recipe.drawn_inputs[recipe.labels]}
    return _on(model, drawn_inputs(model.config, draws, [(entry.seed, entry.index) for entry in entries]))
