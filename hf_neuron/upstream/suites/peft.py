"""PEFT's own tests, from the source distribution of the installed version (it carries ``tests/``).

The sdist leaves out ``tests/__init__.py`` (the test modules import each other relatively: ``from .testing_common
import ...``), which the working tree adds, and its ``pyproject.toml`` asks pytest for coverage options that need
pytest-cov: they are cleared. PEFT's tests pick their device with ``peft.utils.infer_device()``, which answers
``neuron`` through the shim's patch ``peft.infer-device-neuron``; on the CPU run no neuron device is visible, so it
answers ``cpu``. The decoder-model tests load tiny models by Hub id: they run on stand-ins
(``compat/upstream_stand_ins.toml``). One unit per test module.
"""

from __future__ import annotations

from hf_neuron.upstream.suites.base import Group, Suite

__all__ = ["SUITE"]

#: The custom-model test kinds the default selection runs on every adapter configuration (331 in PEFT 0.21): forward
#: in float16 (with and without autocast), fp16 merging, safe merging, training, pickled saving (about 2,000 tests).
CUSTOM_CORE = ("test_forward_float16 or test_merge_layers_fp16 or test_training_custom_models or test_safe_merge "
               "or test_save_pretrained_pickle")
#: The decoder-model test kinds the default selection runs on every (model, adapter) pair: training and
#: half-precision generation (480 tests).
DECODER_CORE = ("(test_training_decoders and not gradient_checkpointing and not layer_indexing) "
                "or test_generate_half_prec")
#: The nightly's (about 1,200 tests: under 15 minutes at -n 2 on two cores, both devices).
CUSTOM_NIGHTLY = "test_forward_float16 or test_training_custom_models"
DECODER_NIGHTLY = "test_training_decoders and not gradient_checkpointing and not layer_indexing"
#: CI: training of the adapters that met neuron's gaps (sparse factors, AdaLoRA's rank state), and LoRA on Llama.
CUSTOM_CI = "test_training_custom_models and (SHiRA or FRoD or AdaLoRA)"
DECODER_CI = "test_training_decoders and not gradient_checkpointing and not layer_indexing and Lora and Llama"

_CUSTOM = "tests/test_custom_models.py"
_DECODER = "tests/test_decoder_models.py"

SUITE = Suite(
    name="peft",
    distribution="peft",
    fetch="sdist",
    git_url="https://github.com/huggingface/peft",
    needs="tests/test_custom_models.py",
    device_probes=("peft.utils.other:infer_device()",),
    unit_pattern=r"(?:^|/)test_(?P<unit>[A-Za-z0-9_]+)\.py(?:::|$)",
    groups=(
        Group("custom-models", "every custom-model test: each test kind on every adapter configuration (about "
              "19,500 tests; hours on two cores)", (_CUSTOM,)),
        Group("decoder-models", "every decoder-model test, on the stand-ins of PEFT's tiny decoders (about 9,000 "
              "tests; hours on two cores)", (_DECODER,)),
        Group("custom-models-core", "float16 forward, merging, training and saving of every adapter configuration "
              "(about 2,000 tests)", (_CUSTOM,), CUSTOM_CORE),
        Group("decoder-models-core", "training and half-precision generation of every (decoder, adapter) pair, on "
              "stand-ins (480 tests)", (_DECODER,), DECODER_CORE),
        Group("custom-models-nightly", "float16 forward and training of every adapter configuration (about 1,000 "
              "tests)", (_CUSTOM,), CUSTOM_NIGHTLY),
        Group("decoder-models-nightly", "training of every (decoder, adapter) pair, on stand-ins (240 tests)",
              (_DECODER,), DECODER_NIGHTLY),
        Group("custom-models-ci", "training of the SHiRA, FRoD and AdaLoRA configurations", (_CUSTOM,), CUSTOM_CI),
        Group("decoder-models-ci", "LoRA-family training of the Llama stand-in", (_DECODER,), DECODER_CI),
    ),
    selections={
        "default": ("custom-models-core", "decoder-models-core"),
        "nightly": ("custom-models-nightly", "decoder-models-nightly"),
        "ci": ("custom-models-ci", "decoder-models-ci"),
    },
    packages=("tests",),
    pytest_options=("-o", "addopts="),
    deselect="not regression and not single_gpu_tests and not multi_gpu_tests",
    deselected_why="regression tests compare with stored results of real models (PEFT runs them with --regression "
    "only); GPU-marked tests need CUDA-specific libraries (bitsandbytes, ...)",
)
