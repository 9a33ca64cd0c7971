"""accelerate's own tests, from the source distribution of the installed version (it carries ``tests/``).

Its tests pick the device with ``accelerate.test_utils.testing.get_backend()`` (``torch_device``), which answers
``neuron`` when ``is_neuron_available()`` (true through the shim's patches); on the CPU run no neuron device is
visible. Single-device groups run with one neuron device, the multi-device group with two (it launches
``accelerate launch``/``torchrun`` children, one per device). One unit per test module.
"""

from __future__ import annotations

from hf_neuron.upstream.suites.base import Group, Suite

__all__ = ["SUITE"]


def _file(name: str) -> tuple[str, ...]:
    return (f"tests/test_{name.replace('-', '_')}.py",)


_WHAT = {"accelerator": "Accelerator's", "big-modeling": "big-model inference (dispatch, offload, device maps)",
         "data-loader": "data loaders'", "hooks": "module hooks'", "modeling-utils": "modeling utilities'",
         "optimizer": "wrapped optimizers'", "scheduler": "wrapped schedulers'",
         "state-checkpointing": "state checkpointing (save_state, load_state, RNG states)"}
_SINGLE = tuple(_WHAT)
#: The nightly and CI leave out the Accelerator's compile tests: a minute or more of torch.compile each, on each
#: device, which kept the nightly at the edge of its 15 minutes (the default runs them).
_NOT_COMPILED = "not compile"
#: A test that compares the whole machine's available memory before and after free_memory(), with 50 MB of slack:
#: on a shared CI machine another process's memory fails it, on either device. CI leaves it to the nightly.
_WHOLE_MACHINE = "test_free_memory_dereferences_prepared_components"
#: CI keeps saving a prepared model (test_save_model_use_*) and leaves the sharded and offloaded saves, the
#: accelerator's slowest tests after its first (which pays for importing torch._dynamo), to the nightly.
_SLOW_SAVES = "not test_save_sharded_model and not test_save_model_offload"

SUITE = Suite(
    name="accelerate",
    cpu_only_skip="test requires only a CPU",  # accelerate.test_utils.require_cpu
    distribution="accelerate",
    fetch="sdist",
    git_url="https://github.com/huggingface/accelerate",
    needs="tests/test_accelerator.py",
    device_probes=("accelerate.test_utils.testing:torch_device",),
    unit_pattern=r"(?:^|/)test_(?P<unit>[A-Za-z0-9_]+)\.py(?:::|$)",
    groups=(
        *(Group(name, f"the {_WHAT[name]} tests, one device", _file(name)) for name in _SINGLE),
        Group("multi-device", "multi-process launches (accelerate launch, torchrun), one process per device",
              _file("multidevice"), devices=2),
        Group("accelerator-nightly", "the Accelerator's tests but its compile tests, one device", _file("accelerator"),
              _NOT_COMPILED),
        Group("ci", "the accelerator's tests but the compiled ones, the hooks', big-model inference's (device maps, "
              "dispatch and offload onto the device) and the optimizers', one device",
              (*_file("accelerator"), *_file("hooks"), *_file("big-modeling"), *_file("optimizer")),
              f"{_NOT_COMPILED} and not {_WHOLE_MACHINE} and {_SLOW_SAVES}"),
    ),
    selections={
        "default": (*_SINGLE, "multi-device"),
        "nightly": ("accelerator-nightly", *(name for name in _SINGLE if name != "accelerator"), "multi-device"),
        "ci": ("ci",),
    },
)
