"""Upstream tests that are not applicable on neuron (``compat/upstream_not_applicable.toml``), each with its reason,
read by the one reader of expected-failure lists (:mod:`.expected_failures`).

``hf-neuron upstream`` runs the libraries' own tests on neuron and on the CPU. A test listed here that fails on
neuron with the failure its entry expects is recorded as ``known-failure`` with the entry's reason, and does not
fail the run; a listed test that passes on neuron is reported as removable from the list. ::

    [[not_applicable]]
    suite = "transformers"                        # whose test suite
    test = ["test_generate_compile_*"]            # fnmatch patterns on the test's name (a string or a list)
    reason = "why the test cannot run on neuron as written, in one sentence"
    message = "InductorError"                     # regex searched in "Type: message" of the neuron failure (and in
                                                  # its traceback when the message was cut at its length limit)
    model_type = ["llama"]                        # optional: only these units (default: every one): architectures
                                                  # for transformers, test modules for the others

``message`` is required: an entry excuses one failure, and the same test failing on neuron in another way is
still a neuron failure.
"""

from __future__ import annotations

from pathlib import Path

from hf_neuron.compat.expected_failures import ExpectedFailures, ListSchema, Selector, load_expected
from hf_neuron.compat.files import COMPAT_DIR

__all__ = ["NOT_APPLICABLE_PATH", "NOT_APPLICABLE_SCHEMA", "SUITES", "NotApplicableList", "load_not_applicable"]

NOT_APPLICABLE_PATH = COMPAT_DIR / "upstream_not_applicable.toml"
#: The libraries whose test suites ``hf-neuron upstream`` runs.
SUITES: tuple[str, ...] = ("transformers", "peft", "accelerate", "diffusers", "trl")
NotApplicableList = ExpectedFailures

#: The shape of the file's entries.
NOT_APPLICABLE_SCHEMA = ListSchema("not_applicable", {
    "suite": Selector(allowed=SUITES),
    "test": Selector(patterns=True),
    "model_type": Selector(required=False),
})


def load_not_applicable(path: Path = NOT_APPLICABLE_PATH) -> NotApplicableList:
    """Read and check ``path``; a missing file is an empty list."""
    return load_expected(path, NOT_APPLICABLE_SCHEMA)
