"""Shared test setup: the reference device on, the hub off, and a runner for fresh Python processes.

The environment is set before anything imports torch, so the autoload registers the reference device in
the test process. Tests that need other settings (fidelity switches, bad values, no device) run their code
in a fresh interpreter through :func:`run_python`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping

import pytest

os.environ["HF_NEURON_EMULATOR"] = "1"
os.environ.setdefault("HF_NEURON_EMULATOR_DEVICES", "2")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"


def run_python(
    code: str, env: Mapping[str, str | None] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with this environment updated by ``env`` (None removes a key)."""
    environ = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = value
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=environ, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="session")
def neuron() -> object:
    """The ``torch.neuron`` module of the active backend (the reference device in tests)."""
    import torch

    assert hasattr(torch, "neuron"), "the neuron device is not registered: is hf-neuron installed?"
    return torch.neuron
