"""Shared test setup: the reference device on, the hub off, and the fixtures several test modules use.

The environment is set before anything imports torch, so the autoload registers the reference device in
the test process. Tests that need other settings (fidelity switches, bad values, no device) run their code
in a fresh interpreter through :func:`_helpers.run`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["HF_NEURON_EMULATOR"] = "1"
os.environ.setdefault("HF_NEURON_EMULATOR_DEVICES", "2")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"


@pytest.fixture(scope="session")
def neuron() -> object:
    """The ``torch.neuron`` module of the active backend (the reference device in tests)."""
    import torch

    assert hasattr(torch, "neuron"), "the neuron device is not registered: is hf-neuron installed?"
    return torch.neuron


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny llama checkpoint directory: config, safetensors weights, a local tokenizer with a chat template."""
    from hf_neuron.tiny.transformers.checkpoint import materialize

    return materialize("llama", tmp_path_factory.mktemp("tiny") / "llama")


@pytest.fixture(scope="session")
def tiny_llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny LLaVA checkpoint with its own processor (image processor, tiny tokenizer, chat template)."""
    from hf_neuron.tiny.image_text.checkpoint import materialize

    return materialize("llava", tmp_path_factory.mktemp("tiny") / "llava")


@pytest.fixture(scope="session")
def image_chat_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny image-chat dataset (an image and a question per chat), loadable with ``load_dataset(directory)``."""
    from hf_neuron.tiny.image_text.dataset import materialize

    return materialize(tmp_path_factory.mktemp("tiny") / "image-chat")


@pytest.fixture(scope="session")
def chat_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny local chat dataset, loadable with ``datasets.load_dataset(directory)``."""
    from hf_neuron.tiny.dataset import materialize

    return materialize(tmp_path_factory.mktemp("tiny") / "chat")


@pytest.fixture(autouse=True)
def fresh_accelerate_state() -> Iterator[None]:
    """Reset accelerate's process-wide state after each test, so a state one test made cannot leak into the next."""
    yield
    if "accelerate" in sys.modules:
        from accelerate.state import AcceleratorState

        AcceleratorState._reset_state(reset_partial_state=True)
