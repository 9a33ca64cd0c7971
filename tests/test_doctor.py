"""`hf-neuron doctor`: backend, devices and every patch's status; exit 1 when something a user needs is broken."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from _helpers_patches import SCRIPTS, fake_distribution, fake_library, run

from hf_neuron.patches import default_registry

NO_DEVICE = "no neuron device: install torch-neuronx on Trainium, or set HF_NEURON_EMULATOR=1 for the reference device"


def _doctor(*options: str, path: Path | None = None, **env: str) -> tuple[int, Any]:
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")])
    result = run([str(SCRIPTS / "hf-neuron"), "doctor", *options], env=env, check=False)
    return result.returncode, json.loads(result.stdout) if "--json" in options else result.stdout


def _statuses(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {row["id"]: (row["status"], row["detail"]) for row in report["patches"]}


def test_doctor_reports_the_reference_device_and_every_patch_applied() -> None:
    code, text = _doctor()
    assert code == 0, text
    assert "  backend: hf-neuron reference device 0.1.0, 1 device(s)\n" in text
    assert "  neuron:0: hf-neuron reference device\n" in text
    assert "  cuda redirect: off\n" in text
    assert "  the trainium profile's verdicts predict: torch-neuronx 2.13.3.1 / 2.14.3.1 (Neuron 2.34.0, " \
           "2026-11-30)\n" in text
    for patch in default_registry().patches():
        assert f"    {patch.id} " in text
    assert text.count(" applied (") == len(default_registry().patches())
    assert text.endswith("no problems found\n")


def test_doctor_json() -> None:
    code, report = _doctor("--json", HF_NEURON_EMULATOR_DEVICES="2")
    assert code == 0 and report["problems"] == []
    assert report["backend"]["kind"] == "reference"
    assert report["predicts"]["release"] == "2.34"
    assert [device["device"] for device in report["backend"]["devices"]] == ["neuron:0", "neuron:1"]
    assert {status for status, _detail in _statuses(report).values()} == {"applied"}
    assert [row["id"] for row in report["patches"]] == [patch.id for patch in default_registry().patches()]


def test_doctor_says_which_patches_skip_an_out_of_range_version(tmp_path: Path) -> None:
    code, report = _doctor("--json", path=fake_distribution(tmp_path, "accelerate", "0.0.1"))
    assert code == 1
    skipped = {key: value for key, value in _statuses(report).items() if key.startswith("accelerate.")}
    assert skipped and set(skipped.values()) == {("version-out-of-range", "accelerate 0.0.1 is not in >=1.15,<1.16")}
    assert "patch accelerate.detect-neuron-by-device skipped: version out of range: accelerate 0.0.1 is not in " \
           ">=1.15,<1.16" in report["problems"]
    assert {status for key, (status, _) in _statuses(report).items() if key not in skipped} == {"applied"}


def test_doctor_reports_a_missing_target(tmp_path: Path) -> None:
    fake_library(tmp_path, "peft", "0.21.2", {"utils/__init__.py": "", "utils/other.py": "def unrelated(): pass\n"})
    code, text = _doctor(path=tmp_path)
    assert code == 1
    assert re.search(r"\n    peft\.infer-device-neuron +skipped: target missing "
                     r"\(peft\.utils\.other\.infer_device does not exist in peft 0\.21\.2\)\n", text), text


def test_doctor_fails_without_a_neuron_device() -> None:
    code, report = _doctor("--json", HF_NEURON_EMULATOR="0")
    assert code == 1
    assert report["backend"]["kind"] == "none" and NO_DEVICE in report["problems"]
    statuses = _statuses(report)
    assert statuses["accelerate.detect-neuron-by-device"] == ("no-device", "no neuron device is registered in torch")
    assert statuses["accelerate.launch-device-option"][0] == "applied"  # works without a device


def test_doctor_fails_when_the_emulator_was_asked_for_but_autoload_was_off() -> None:
    code, report = _doctor("--json", TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert code == 1
    assert report["problems"] == [
        "HF_NEURON_EMULATOR=1 but no neuron device is registered: the torch backend autoload did not run "
        "(TORCH_DEVICE_BACKEND_AUTOLOAD=0?)",
        "HF_NEURON_PATCHES=1 but the patches are not installed: the torch backend autoload did not run "
        "(TORCH_DEVICE_BACKEND_AUTOLOAD=0?)",
    ]


def test_doctor_with_the_patches_turned_off() -> None:
    code, report = _doctor("--json", HF_NEURON_PATCHES="0")
    assert code == 0 and report["problems"] == [] and report["patches_installed"] is False
    assert {status for status, _detail in _statuses(report).values()} == {"off"}


def test_doctor_names_the_bad_setting_that_stopped_the_autoload_and_exits_2() -> None:
    """`import torch` reports only "Failed to load the backend extension: hf_neuron"; the doctor says why."""
    code, text = _doctor(HF_NEURON_EMULATOR="banana")
    assert code == 2
    assert ("a bad setting stopped hf-neuron's autoload in `import torch`: HF_NEURON_EMULATOR='banana' is not a "
            "switch value: use 1 to turn it on or 0 to turn it off") in text
    assert "Failed to load the backend extension" not in text
    code, report = _doctor("--json", HF_NEURON_EMULATOR_64BIT="sometimes")
    assert code == 2 and "HF_NEURON_EMULATOR_64BIT='sometimes' is not one of: exact, narrow" in report["bad_setting"]
