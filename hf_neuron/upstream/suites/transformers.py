"""transformers' own model tests: ``tests/models/<arch>/test_modeling_<arch>.py``, chosen by architecture.

The tree is a transformers checkout (``--fetch`` clones the tag of the installed version); its tests import
``src/transformers``, which the working tree links to the installed package. The device is chosen by
``TRANSFORMERS_TEST_DEVICE`` and the spec of :mod:`hf_neuron.testing.transformers_spec`. One unit per architecture.
"""

from __future__ import annotations

from hf_neuron.upstream.suites.base import Suite

__all__ = ["SUITE"]

SUITE = Suite(
    name="transformers",
    distribution="transformers",
    fetch="git-tag",
    git_url="https://github.com/huggingface/transformers",
    needs="tests/models",
    device_probes=("transformers.testing_utils:torch_device",),
    unit_pattern=r"tests/models/(?P<unit>[^/]+)/",
    deselect="not is_fsdp_test and not is_tensor_parallel_test and not is_expert_parallel_test",
    deselected_why="they start several processes (torchrun) per test; the matrix's ddp scenario and hf-neuron's "
    "distributed tests cover multi-process runs on neuron",
    by_architecture=True,
    devices=2,  # the multi-accelerator model tests (model parallelism, data parallel forward) run on neuron:0 and :1
    src_package="transformers",
    source_setting="HF_NEURON_TRANSFORMERS_SOURCE",
)
