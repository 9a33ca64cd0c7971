"""Environment switches: strict parsing with messages that say what was wrong and what to do."""

from __future__ import annotations

import pytest
from _helpers import run

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


def test_bad_value_fails_import_torch_with_the_reason() -> None:
    result = run("import torch", {"HF_NEURON_EMULATOR_DEVICES": "0"})
    assert result.returncode != 0
    assert "Failed to load the backend extension: hf_neuron" in result.stderr
    assert "HF_NEURON_EMULATOR_DEVICES='0' is not a device count" in result.stderr


def test_every_switch_is_documented() -> None:
    for switch in settings.SWITCHES:
        assert switch.name.startswith("HF_NEURON_") and len(switch.doc) > 20
        switch.parse(switch.name, switch.default)  # the default itself parses
