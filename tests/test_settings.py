"""Environment switches: strict parsing with messages that say what was wrong and what to do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _helpers import ROOT, run, run_cli

from hf_neuron import settings
from hf_neuron.settings import SettingError


def test_defaults_when_unset() -> None:
    emulator = settings.reference_device_settings({})
    assert emulator.enabled is False
    assert emulator.devices == 2
    assert emulator.capacity_bytes is None
    assert not (emulator.narrow_64bit or emulator.strict_memory_formats or emulator.op_log or emulator.copy_aliasing)


def test_values_are_parsed() -> None:
    emulator = settings.reference_device_settings({
        "HF_NEURON_EMULATOR": "true", "HF_NEURON_EMULATOR_DEVICES": "8", "HF_NEURON_EMULATOR_64BIT": "narrow",
        "HF_NEURON_EMULATOR_MEMORY_FORMATS": "STRICT", "HF_NEURON_EMULATOR_MEMORY_GB": "0.5",
        "HF_NEURON_EMULATOR_WARN_FALLBACK": "1", "HF_NEURON_EMULATOR_ALIASING": "copy",
    })
    assert emulator.enabled and emulator.devices == 8 and emulator.narrow_64bit and emulator.strict_memory_formats
    assert emulator.capacity_bytes == 2**29
    assert emulator.warn_fallback and emulator.op_log, "warnings need the op log"
    assert emulator.copy_aliasing


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("HF_NEURON_EMULATOR", "maybe", "HF_NEURON_EMULATOR='maybe' is not a switch value: use 1 to turn it on or 0"),
        ("HF_NEURON_EMULATOR_DEVICES", "0",
         "HF_NEURON_EMULATOR_DEVICES='0' is not a device count: use a whole number from 1 to 128"),
        ("HF_NEURON_EMULATOR_DEVICES", "two", "is not a device count"),
        ("HF_NEURON_EMULATOR_DEVICES", "129", "is not a device count"),
        ("HF_NEURON_EMULATOR_MEMORY_GB", "-1",
         "HF_NEURON_EMULATOR_MEMORY_GB='-1' is not a memory size: use a positive number of GiB"),
        ("HF_NEURON_EMULATOR_64BIT", "fast", "HF_NEURON_EMULATOR_64BIT='fast' is not one of: exact, narrow"),
        ("HF_NEURON_EMULATOR_ALIASING", "none", "is not one of: zero-copy, copy"),
    ],
)
def test_bad_values_name_the_variable_and_the_fix(name: str, value: str, message: str) -> None:
    with pytest.raises(SettingError) as error:
        settings.reference_device_settings({"HF_NEURON_EMULATOR": "1", name: value})
    assert message in str(error.value)


def test_device_settings_are_only_read_when_the_device_is_on() -> None:
    result = run("import torch; print(hasattr(torch, 'neuron'))",
                        {"HF_NEURON_EMULATOR": None, "HF_NEURON_EMULATOR_DEVICES": "lots"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_bad_value_fails_import_torch_with_the_reason_said_first() -> None:
    result = run("import torch", {"HF_NEURON_EMULATOR_DEVICES": "0"})
    assert result.returncode != 0
    assert "Failed to load the backend extension: hf_neuron" in result.stderr
    assert result.stderr.startswith("hf-neuron: HF_NEURON_EMULATOR_DEVICES='0' is not a device count"), (
        "the cause comes before torch's traceback, not only deep inside it")


def test_every_switch_is_documented() -> None:
    for switch in settings.SWITCHES:
        # hf-neuron's own, or a variable of the real backend that the reference device honours as it does
        assert switch.name.startswith(("HF_NEURON_", "TORCH_NEURONX_")) and len(switch.doc) > 20 and switch.read_by
        switch.parse(switch.name, switch.default)  # the default itself parses


def _spelled(root: Path) -> dict[str, str]:
    """Every ``HF_NEURON_*`` name the repository's code, scripts, workflows and docs spell -> a file that does.

    A name some C++ source ``#define``s is a macro (the autocast registrations, the thread-local storage class), not
    an environment variable, and is left out.
    """
    found: dict[str, str] = {}
    macros: set[str] = set()
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if not path.is_file() or parts[0] in (".git", ".venv", "reports", "build") or "__pycache__" in parts or (
                path.suffix not in (".py", ".sh", ".md", ".yml", ".toml", ".cpp", ".h") and path.name != "run"):
            continue
        text = path.read_text(errors="replace")
        if path.suffix in (".cpp", ".h"):
            macros.update(re.findall(r"^\s*#\s*define\s+(HF_NEURON_[A-Z0-9_]*[A-Z0-9])\b", text, re.MULTILINE))
        for name in re.findall(r"\bHF_NEURON_[A-Z0-9_]*[A-Z0-9]\b", text):
            found.setdefault(name, str(path.relative_to(root)))
    return {name: where for name, where in found.items() if name not in macros}


def test_every_variable_the_repository_spells_is_declared_in_settings(tmp_path: Path) -> None:
    declared = {switch.name for switch in settings.SWITCHES}
    undeclared = {name: where for name, where in _spelled(ROOT).items()
                  if name not in declared}
    assert undeclared == {}
    undeclared_name = "HF_NEURON_" + "NIGHT_WORKERS"  # spelled in parts, so that this file does not spell it
    (tmp_path / "nightly.sh").write_text(f"workers=${{{undeclared_name}:-2}}\n")
    macro = "HF_NEURON_" + "INLINE"
    (tmp_path / "kernels.h").write_text(f"#define {macro} inline\n{macro} int f();\n")
    assert _spelled(tmp_path) == {undeclared_name: "nightly.sh"}, "an undeclared one is found"


def test_scripts_read_a_setting_through_the_command_which_checks_it() -> None:
    result = run_cli(["settings", "HF_NEURON_MATRIX_WORKERS"], {"HF_NEURON_MATRIX_WORKERS": "3"})
    assert (result.returncode, result.stdout) == (0, "3\n")
    bad = run_cli(["settings", "HF_NEURON_MATRIX_WORKERS"], {"HF_NEURON_MATRIX_WORKERS": "many"})
    assert bad.returncode == 2
    assert "HF_NEURON_MATRIX_WORKERS='many' is not a count" in bad.stderr
    assert run_cli(["settings", "HF_NEURON_" + "NOPE"], {}).returncode == 2
    listed = run_cli(["settings"], {})
    assert listed.returncode == 0 and "HF_NEURON_MATRIX_TIMEOUT" in listed.stdout


def test_the_nightly_runs_the_libraries_named_and_refuses_an_unknown_one() -> None:
    name = "HF_NEURON_UPSTREAM_LIBRARIES"
    assert settings.read(name, {}) == "peft accelerate diffusers trl"
    assert settings.read(name, {name: "  diffusers   trl "}) == "diffusers trl"
    assert settings.read(name, {name: ""}) == "", "none: the nightly runs only transformers' tests"
    with pytest.raises(SettingError, match=r"names 'vllm', 'transformers': use some of peft accelerate diffusers trl"):
        settings.read(name, {name: "peft vllm transformers"})
