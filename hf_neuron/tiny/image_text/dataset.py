"""A tiny local image-chat dataset: the tiny chats of :mod:`hf_neuron.tiny.dataset`, each with a synthetic image.

:func:`materialize` writes it as Parquet with its ``datasets`` features (``images``: a list of images, ``messages``:
chat turns whose ``content`` is a list of ``{"type": "image"}`` / ``{"type": "text", "text": ...}`` items, the format
vision-language chat templates and trl's vision data collator read), so that ``datasets.load_dataset(folder)`` and
``trl sft --dataset_name <folder>`` load it without a hub.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hf_neuron.tiny.dataset import examples
from hf_neuron.tiny.image_text.images import synthetic_image

__all__ = ["IMAGE_SIDE", "image_chats", "materialize"]

#: Side length of every image (the tiny vision towers' image size).
IMAGE_SIDE = 32
_SPLITS = {"train": slice(0, 40), "test": slice(40, None)}


def _turn(role: str, text: str, *, image: bool = False) -> dict[str, Any]:
    items = [{"type": "image", "text": None}] if image else []
    return {"role": role, "content": [*items, {"type": "text", "text": text}]}


def image_chats() -> list[dict[str, Any]]:
    """Every example: a user turn with an image and the question, the assistant's answer; one image each."""
    rows = []
    for index, example in enumerate(examples("messages")):
        turns = {turn["role"]: turn["content"] for turn in example["messages"]}  # type: ignore[attr-defined]
        rows.append({
            "images": [synthetic_image(IMAGE_SIDE, IMAGE_SIDE * (2 + index % 2) // 2, seed=index)],
            "messages": [_turn("user", turns["user"], image=True), _turn("assistant", turns["assistant"])],
        })
    return rows


def materialize(out_dir: Path) -> Path:
    """Write the train and test splits as ``<split>.parquet`` under ``out_dir``; return ``out_dir``."""
    from datasets import Dataset, Features, Image, Sequence, Value

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    item = {"type": Value("string"), "text": Value("string")}
    features = Features({"images": Sequence(Image()),
                         "messages": [{"role": Value("string"), "content": [item]}]})
    rows = image_chats()
    for split, part in _SPLITS.items():
        Dataset.from_list(rows[part], features=features).to_parquet(out_dir / f"{split}.parquet")
    return out_dir
