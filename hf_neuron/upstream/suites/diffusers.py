"""diffusers' own model tests (``tests/models/``), from a source tree: its source distribution carries none.

``--fetch`` clones the tag of the installed version; ``../shared/upstream/diffusers-tests`` holds the model tests of
a public snapshot (its ``SOURCE.txt`` says which). The tests pick the device with ``DIFFUSERS_TEST_DEVICE`` and the
spec of :mod:`hf_neuron.testing.diffusers_spec`. A group per backbone family; one unit per test module.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from hf_neuron.upstream.suites.base import Group, Suite

__all__ = ["SUITE"]

_T = "tests/models/transformers/test_models_"
_U = "tests/models/unets/test_models_"
#: A backbone family: its group, the model class its tests build (a model type of the catalog), a note, its file.
_FAMILIES: tuple[tuple[str, str, str, str], ...] = (
    ("unet-2d-condition", "UNet2DConditionModel", " (Stable Diffusion's UNet)", f"{_U}unet_2d_condition.py"),
    ("sd3", "SD3Transformer2DModel", " (Stable Diffusion 3)", f"{_T}transformer_sd3.py"),
    ("flux", "FluxTransformer2DModel", "", f"{_T}transformer_flux.py"),
    ("pixart", "PixArtTransformer2DModel", "", f"{_T}pixart_transformer2d.py"),
    ("wan", "WanTransformer3DModel", "", f"{_T}transformer_wan.py"),
    ("cogvideox", "CogVideoXTransformer3DModel", "", f"{_T}transformer_cogvideox.py"),
    ("sana", "SanaTransformer2DModel", "", f"{_T}transformer_sana.py"),
    ("qwenimage", "QwenImageTransformer2DModel", "", f"{_T}transformer_qwenimage.py"),
    ("unet-2d", "UNet2DModel", "", f"{_U}unet_2d.py"),
)
_UNIT = r"(?:^|/)test_models_(?P<unit>[A-Za-z0-9_]+)\.py(?:::|$)"
#: diffusers' neuron tensor-parallel tests launch two torchrun workers: they run in the two-device group only.
_ONE_DEVICE = "not tensor_parallel_neuron"
#: CI: Flux's model tests (forward, save and load, dtypes, determinism...) and its training tests but the three of
#: gradient checkpointing (the slowest; the nightly runs them), and PixArt's model tests (one of which fails on both
#: devices the same way), by class: a few seconds of tests on each device.
#: The nightly leaves out the compile tests (the test_compile*, test_*torch_compile* and test_hotswapping_compile* of
#: compat/upstream_not_applicable.toml, and the compile test classes): Inductor has no neuron code generation, so
#: they are not applicable on neuron, and each spends up to minutes compiling before it fails (more than half of
#: the nine families' time on neuron). The CPU skips them (they need an accelerator). The default runs them; the
#: one test whose name says "compiled" but compiles nothing stays.
_NOT_COMPILED = "not compile or wrong_check_compiled_argument"
#: The nightly leaves out UNet2D's half-precision training of its LDM and NCSNpp configurations too (float16
#: autocast, layerwise casting): about 3.5 s each on the CPU, 200 to 430 s each on the reference device, whose
#: half-precision convolutions run a slow path; they were 42% of the nine families' neuron time, and passed. The
#: default runs them; the nightly keeps UNet2D's own configuration's.
_SLOW_HALF_UNETS = "not ((UNetLDMModel or NCSNppModel) and (mixed_precision_training or layerwise_casting_training))"
_CI = (f"{_T}transformer_flux.py::TestFluxTransformer", f"{_T}transformer_flux.py::TestFluxTransformerTraining",
       f"{_T}pixart_transformer2d.py::TestPixArtTransformer2D")


def _unit(path: str) -> str:
    """The unit of a test module's tests (what :data:`_UNIT` finds in their node ids)."""
    return PurePosixPath(path).stem.removeprefix("test_models_")


SUITE = Suite(
    name="diffusers",
    distribution="diffusers",
    fetch="git-tag",
    git_url="https://github.com/huggingface/diffusers",
    needs="tests/models",
    device_probes=("tests.testing_utils:torch_device", "diffusers.utils.testing_utils:torch_device"),
    unit_pattern=_UNIT,
    groups=(
        *(Group(name, f"the model tests of {model}{note}", (path,), _ONE_DEVICE)
          for name, model, note, path in _FAMILIES),
        Group("neuron-tp", "diffusers' tensor parallelism for neuron: torchrun workers on two devices, each "
              "output compared with the unsharded model's", (f"{_T}transformer_flux.py", f"{_T}transformer_flux2.py",
                                                             f"{_T}transformer_qwenimage.py"),
              "tensor_parallel_neuron", devices=2),
        Group("families-nightly", "the model tests of every family above but the compile tests (not applicable on "
              "neuron: Inductor) and UNet2D's LDM and NCSNpp half-precision training (minutes each on the reference "
              "device)", tuple(path for _, _, _, path in _FAMILIES),
              f"{_ONE_DEVICE} and ({_NOT_COMPILED}) and {_SLOW_HALF_UNETS}"),
        Group("ci", "Flux's model and training tests and PixArt's model tests (their test classes "
              "TestFluxTransformer, TestFluxTransformerTraining, TestPixArtTransformer2D) but gradient "
              "checkpointing's", _CI, f"{_ONE_DEVICE} and not gradient_checkpointing"),
    ),
    selections={
        "default": tuple(name for name, _, _, _ in _FAMILIES),
        "nightly": ("families-nightly",),
        "ci": ("ci",),
    },
    deselect="not big_accelerator and not slow",
    deselected_why="big-accelerator and slow tests load full-size checkpoints from the Hub",
    architectures={_unit(path): model for _, model, _, path in _FAMILIES},
    source_setting="HF_NEURON_DIFFUSERS_SOURCE",
    shared_tree="diffusers-tests",
)
