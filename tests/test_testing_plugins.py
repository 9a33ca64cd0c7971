"""hf_neuron.testing: the device specs and the test backend transformers' and diffusers' own test suites load, the
environments that run each library's suite on neuron and on the CPU, and the probes that tell where a run ran."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
import types
from pathlib import Path

import pytest
from _helpers import run

from hf_neuron import backends
from hf_neuron.patches.registry import Patch, Registry
from hf_neuron.testing import SPEC_FILE_NAMES, Library, cpu_environment, suite_environment, write_spec_file
from hf_neuron.testing.device import neuron_allocations
from hf_neuron.testing.tolerance import route_tolerance_lookup, tolerance_row
from hf_neuron.testing.transformers_backend import ADAPTATIONS
from hf_neuron.testing.transformers_backend import registry as transformers_registry

#: A module-level function choosing its tolerance as transformers' test_modeling_common does.
_CHAIN = '''
torch_device = "neuron"

def tolerance(dtype):
    atols = {("cpu", "fp16"): 5e-3, ("cuda", "fp16"): 6e-3}
    if torch_device in ["cpu", "cuda"]:
        atol = atols[torch_device, dtype]
    elif torch_device in ["hpu", "npu", "tpu"]:
        atol = atols["cuda", dtype]
    else:
        atol = 1e-7
    return atol, torch_device
'''


def _module(tmp_path: Path, source: str, name: str) -> types.ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    sys.modules[name] = module  # inspect.getsource finds the file through the module
    return module


def test_the_tolerance_chain_gives_neuron_the_cpu_row_on_the_reference_device(tmp_path: Path) -> None:
    module = _module(tmp_path, _CHAIN, "fake_modeling_common_a")
    assert module.tolerance("fp16") == (1e-7, "neuron")  # upstream as written: an unknown device gets 1e-7
    module.tolerance = route_tolerance_lookup(module.tolerance)
    assert backends.reference_device_active()
    assert module.tolerance("fp16") == (5e-3, "neuron")  # the CPU's row; the device itself is unchanged
    module.torch_device = "cpu"
    assert module.tolerance("fp16") == (5e-3, "cpu")  # other devices keep their own row


def test_on_the_real_backend_neuron_takes_the_accelerators_row(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends, "reference_device_active", lambda: False)
    assert tolerance_row("neuron:1") == "cuda"
    module = _module(tmp_path, _CHAIN, "fake_modeling_common_b")
    module.tolerance = route_tolerance_lookup(module.tolerance)
    assert module.tolerance("fp16") == (6e-3, "neuron")


def test_a_function_without_the_chain_is_refused(tmp_path: Path) -> None:
    module = _module(tmp_path, "def tolerance(dtype):\n    return 1e-7\n", "fake_modeling_common_c")
    with pytest.raises(LookupError, match="no `if torch_device in"):
        route_tolerance_lookup(module.tolerance)


def test_an_adaptation_that_cannot_apply_says_so_and_leaves_the_module() -> None:
    module = types.ModuleType("tests.test_modeling_common")
    adaptation = Patch("tests.x", "tests", module.__name__, "_missing", ">=5", "why", route_tolerance_lookup,
                       needs_device=False)
    registry = Registry.from_patches([adaptation], version_of=lambda library: "5.24.0", device_ready=lambda: True)
    registry.module_executed(module)
    state = registry.state("tests.x")
    assert (state.status, state.detail) == ("target-missing", "tests.test_modeling_common._missing does not exist in "
                                                              "tests 5.24.0")
    assert not hasattr(module, "_missing")


def test_the_adaptations_are_versioned_by_the_transformers_their_tests_belong_to() -> None:
    states = {state.patch.id: state for state in transformers_registry().states()}
    assert states["tests.tolerance-row-for-neuron"].version == importlib.metadata.version("transformers")


def test_the_tolerance_adaptation_targets_transformers_common_tests() -> None:
    (adaptation,) = ADAPTATIONS
    assert (adaptation.module, adaptation.attribute) == ("tests.test_modeling_common",
                                                         "_test_eager_matches_sdpa_inference")
    assert adaptation.reason and adaptation.upstream_fix


def test_transformers_testing_utils_take_the_neuron_spec(tmp_path: Path) -> None:
    write_spec_file("transformers", tmp_path)
    result = run("""
        from transformers import testing_utils as t
        print(t.torch_device, t.backend_device_count("neuron"), "neuron" in t.SINGLE_PROCESS_DEVICES)
        t.backend_manual_seed("neuron", 3)
        import torch
        a = torch.rand(2, device="neuron")
        t.backend_manual_seed("neuron", 3)
        print(bool((a == torch.rand(2, device="neuron")).all()))
        t.backend_empty_cache("neuron")
    """, suite_environment("transformers"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["neuron", "2", "True", "True"]


def test_diffusers_testing_utils_take_the_neuron_spec(tmp_path: Path) -> None:
    write_spec_file("diffusers", tmp_path)
    result = run("""
        from diffusers.utils import testing_utils as t
        print(t.torch_device, t.BACKEND_DEVICE_COUNT["neuron"](), t.BACKEND_SUPPORTS_TRAINING["neuron"])
        t.BACKEND_RESET_PEAK_MEMORY_STATS["neuron"]()
        print(t.BACKEND_MAX_MEMORY_ALLOCATED["neuron"]() >= 0)
    """, suite_environment("diffusers"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["neuron", "2", "True", "True"]


def test_without_a_neuron_device_the_spec_says_what_to_do(tmp_path: Path) -> None:
    write_spec_file("transformers", tmp_path)
    result = run("import transformers.testing_utils", {**suite_environment("transformers"),
                                                        "HF_NEURON_EMULATOR": "0"}, cwd=tmp_path)
    assert result.returncode != 0
    assert f"there is {backends.NO_NEURON_DEVICE}" in result.stderr


def test_the_spec_file_is_one_import_with_a_name_no_test_tree_uses(tmp_path: Path) -> None:
    path = write_spec_file("transformers", tmp_path)
    assert path.name == SPEC_FILE_NAMES["transformers"] and path.name.startswith("hf_neuron_")
    assert "from hf_neuron.testing.transformers_spec import *" in path.read_text()
    assert suite_environment("transformers")["TRANSFORMERS_TEST_DEVICE_SPEC"] == path.name  # relative: upstream
    assert "DIFFUSERS_TEST_BACKEND" not in suite_environment("diffusers")


@pytest.mark.parametrize(
    ("library", "neuron", "cpu"),
    [
        ("peft", {}, {"HF_NEURON_EMULATOR": "0"}),  # infer_device() finds neuron through the shim, where visible
        ("accelerate", {}, {"HF_NEURON_EMULATOR": "0"}),
        ("trl", {"TRANSFORMERS_TEST_DEVICE": "neuron"}, {"HF_NEURON_EMULATOR": "0", "TRANSFORMERS_TEST_DEVICE": "cpu"}),
        ("diffusers", {"DIFFUSERS_TEST_DEVICE": "neuron"}, {"HF_NEURON_EMULATOR": "0", "DIFFUSERS_TEST_DEVICE": "cpu"}),
    ],
)
def test_each_library_s_suite_has_its_neuron_and_its_cpu_environment(
    library: Library, neuron: dict[str, str], cpu: dict[str, str]
) -> None:
    assert neuron.items() <= suite_environment(library).items()
    assert cpu_environment(library, "reference") == cpu
    assert cpu_environment(library, "real")["TORCH_DEVICE_BACKEND_AUTOLOAD"] == "0"  # TorchNeuron not loaded


def test_peft_and_accelerate_pick_neuron_where_it_is_visible_and_the_cpu_where_it_is_hidden() -> None:
    code = """
        from hf_neuron.testing.device import neuron_allocations, selected_device
        probes = ("peft.utils.other:infer_device()", "accelerate.test_utils.testing:torch_device")
        print(selected_device(probes[:1]), selected_device(probes[1:]), neuron_allocations() is None)
        print(selected_device(("no.such.module:torch_device",)).startswith("unknown: no.such.module:torch_device"))
    """
    on_neuron = run(code)
    assert on_neuron.returncode == 0, on_neuron.stderr
    assert on_neuron.stdout.split() == ["neuron", "neuron", "False", "True"]
    on_cpu = run(code, cpu_environment("peft", "reference"))
    assert on_cpu.returncode == 0, on_cpu.stderr
    assert on_cpu.stdout.split() == ["cpu", "cpu", "True", "True"]


def test_allocations_on_neuron_are_counted_whatever_resets_the_peak() -> None:
    import torch

    before = neuron_allocations()
    assert before is not None
    torch.ones(3, device="neuron")
    torch.neuron.reset_peak_memory_stats()
    assert neuron_allocations() == before + 1  # type: ignore[operator]
