"""TRL's own tests, from a source tree: its source distribution carries none.

``--fetch`` clones the tag of the installed version; without network access, ``--source`` takes a checkout or a git
repository (with ``--revision``: the tests of that commit are exported, and the commit is the provenance). A tree
written for another release (the public tree of 1.10.0.dev0 imports names TRL 1.16 no longer has) runs against that
release installed beside the installed TRL (``--against 1.9.0``; ``HF_NEURON_TRL_AGAINST`` for ``--configured``).
TRL's tests take their device from ``transformers.testing_utils.torch_device`` (transformers' device spec), its
trainers from accelerate. The trainer tests load tiny models and TRL's ``zen`` dataset by Hub id: they run on
stand-ins (``compat/upstream_stand_ins.toml``). One unit per test module.
"""

from __future__ import annotations

from hf_neuron.upstream.suites.base import Group, Suite

__all__ = ["SUITE"]

_SFT = "tests/test_sft_trainer.py"

SUITE = Suite(
    name="trl",
    distribution="trl",
    fetch="git-tag",
    git_url="https://github.com/huggingface/trl",
    needs="tests/test_sft_trainer.py",
    device_probes=("transformers.testing_utils:torch_device",),
    unit_pattern=r"(?:^|/)test_(?P<unit>[A-Za-z0-9_]+)\.py(?:::|$)",
    groups=(
        Group("sft", "the SFT trainer's tests, on stand-ins", (_SFT,)),
        Group("data-utils", "dataset format helpers (chat templates, packing, truncation)",
              ("tests/test_data_utils.py",)),
        Group("reward", "the reward trainer's tests, on stand-ins", ("tests/test_reward_trainer.py",)),
        Group("dpo", "the DPO trainer's tests, on stand-ins", ("tests/test_dpo_trainer.py",)),
        Group("ci", "SFT training on the Qwen2 stand-in", (_SFT,), "test_train and Qwen2 and not peft"),
    ),
    selections={
        "default": ("sft",),
        "nightly": ("sft", "data-utils"),
        "ci": ("ci",),
    },
    deselect="not slow and not low_priority",
    source_setting="HF_NEURON_TRL_SOURCE",
    revision_setting="HF_NEURON_TRL_REVISION",
    against_setting="HF_NEURON_TRL_AGAINST",
    deselected_why="TRL marks tests that need full-size models slow, and low_priority ones its CI skips",
)
