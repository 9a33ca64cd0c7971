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
    """The one neuron-device fixture: the ``torch.neuron`` module of the active backend (the reference device in
    tests), after checking that this process registered the device and installed the patches. It fails, never skips:
    the device tests need HF_NEURON_EMULATOR=1."""
    import torch

    from hf_neuron.patches import installation, neuron_device

    assert neuron_device.neuron_registered(), "no neuron device in the test process: set HF_NEURON_EMULATOR=1"
    assert installation() is not None, f"the patches are not installed (HF_NEURON_PATCHES=0?) on {torch.__version__}"
    return torch.neuron  # type: ignore[attr-defined]


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


#: Every test's time limit (pytest-timeout): a hang fails that test, not the whole suite. A test that needs longer
#: says so with its own ``@pytest.mark.timeout``.
TEST_TIMEOUT_S = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_S))


@pytest.fixture(autouse=True)
def fresh_accelerate_state() -> Iterator[None]:
    """Reset accelerate's process-wide state after each test, so a state one test made cannot leak into the next."""
    yield
    if "accelerate" in sys.modules:
        from accelerate.state import AcceleratorState

        AcceleratorState._reset_state(reset_partial_state=True)


@pytest.fixture(autouse=True)
def restored_environment() -> Iterator[None]:
    """Give each test the environment the one before it started with: a test that runs the matrix in this process
    (its plugin applies the profile's switches to ``os.environ``, as a run's workers need) would otherwise hand
    HF_NEURON_EMULATOR_64BIT=narrow to the next test's subprocesses, and ``check --profile cpu-parity`` refuses it."""
    saved = dict(os.environ)
    yield
    for key in set(os.environ) - set(saved):
        del os.environ[key]
    for key, value in saved.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
