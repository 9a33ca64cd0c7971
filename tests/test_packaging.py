"""hf-neuron as a package: the torch range admits the lines TorchNeuron ships for, the set-up pins the CPU wheel, and
a wheel installed outside the checkout runs the shim and the device and says that the matrix needs a checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from hf_neuron.compat import files

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
CONSTRAINTS = ROOT / "scripts" / "constraints.txt"

#: Releases of the torch lines TorchNeuron ships for, which a Neuron environment may bring.
NEURON_TORCHES = ("2.13.0", "2.13.1", "2.14.0", "2.14.1")


def _torch_specifier(pyproject: str) -> SpecifierSet:
    (torch,) = [r for r in map(Requirement, tomllib.loads(pyproject)["project"]["dependencies"]) if r.name == "torch"]
    return torch.specifier


def _admits_neuron_torches(specifier: SpecifierSet) -> bool:
    return all(specifier.contains(version) for version in NEURON_TORCHES)


def test_the_torch_requirement_admits_every_torchneuron_line_and_nothing_else() -> None:
    specifier = _torch_specifier(PYPROJECT.read_text())
    assert _admits_neuron_torches(specifier), specifier
    assert not any(specifier.contains(v) for v in ("2.12.1", "2.15.0", "3.0.0"))


def test_an_exact_pin_would_be_caught() -> None:
    pinned = PYPROJECT.read_text().replace('"torch>=2.13,<2.15"', '"torch==2.13.0"')
    assert not _admits_neuron_torches(_torch_specifier(pinned))


def test_the_set_up_pins_the_cpu_wheel_inside_the_range() -> None:
    pins = [Requirement(line) for line in CONSTRAINTS.read_text().splitlines() if line and not line.startswith("#")]
    assert [str(pin) for pin in pins] == ["torch==2.13.0", "torchvision==0.28.0"]
    assert _torch_specifier(PYPROJECT.read_text()).contains("2.13.0")
    assert "--constraint scripts/constraints.txt" in (ROOT / "scripts" / "setup.sh").read_text()


def test_the_vision_extra_admits_the_torchvision_of_every_torchneuron_line_and_the_pinned_one() -> None:
    """torchvision pins its torch exactly: 0.28 is made for torch 2.13, 0.29 for 2.14."""
    (torchvision,) = [Requirement(r) for r in tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
                      ["vision"]]
    made_for = {"0.28.0": "2.13.0", "0.28.1": "2.13.1", "0.29.0": "2.14.0", "0.29.1": "2.14.1"}
    assert sorted(made_for.values()) == sorted(NEURON_TORCHES)
    assert all(torchvision.specifier.contains(version) for version in made_for)
    assert not any(torchvision.specifier.contains(v) for v in ("0.27.1", "0.30.0"))
    pins = {Requirement(line).name: Requirement(line) for line in CONSTRAINTS.read_text().splitlines()
            if line and not line.startswith("#")}
    (pinned,) = [version for version, torch in made_for.items() if pins["torch"].specifier.contains(torch)
                 and pins["torchvision"].specifier.contains(version)]
    assert torchvision.specifier.contains(pinned)


def test_a_missing_compat_file_outside_a_checkout_says_that_it_comes_with_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert str(files.missing_file(tmp_path / "x.json", "make it")) == f"{tmp_path / 'x.json'}: no such file: make it"
    monkeypatch.setattr(files, "COMPAT_DIR", tmp_path / "compat")
    error = files.missing_file(tmp_path / "compat" / "catalog.json", "make it")
    assert str(error) == f"{tmp_path / 'compat' / 'catalog.json'}: no such file: {files.NOT_A_CHECKOUT}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hf-neuron's wheel, built from this checkout without network (no build isolation)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), str(ROOT)], check=True, capture_output=True, timeout=300)
    (built,) = out.glob("hf_neuron-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_holds_the_device_sources_and_templates_and_no_checkout_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("hf_neuron/device/csrc/runtime.cpp", "hf_neuron/device/csrc/neuron.h",
                   "hf_neuron/device/trainium_ops.toml", "hf_neuron/device/trainium_sources.toml",
                   "hf_neuron/report/templates/index.html.j2",
                   "hf_neuron/report/static/report.css"):
        assert needed in names
    assert not [n for n in names if n.split("/")[0] in ("compat", "matrix", "tests", "scripts", "reports")]
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Requires-Dist: torch<2.15,>=2.13" in metadata
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "[torch.backends]\nhf_neuron = hf_neuron._autoload:autoload" in entry_points


@pytest.mark.slow
def test_a_package_install_runs_the_device_and_the_shim_and_sends_the_matrix_to_a_checkout(
    wheel: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    str(wheel)], check=True, capture_output=True, timeout=300)
    # torch and the Hugging Face libraries come from this environment (no download); hf-neuron from the wheel.
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site_packages = Path(subprocess.run([str(python), "-c", purelib], check=True, capture_output=True,
                                        text=True).stdout.strip())
    (site_packages / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "HF_NEURON_EMULATOR": "1", "HF_HUB_OFFLINE": "1",
           **{k: v for k, v in os.environ.items() if k == "HF_NEURON_CACHE"}}

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    used = run(str(python), "-c", "import torch, hf_neuron, accelerate; from accelerate import PartialState; "
               "print(hf_neuron.__file__); print(hf_neuron.backend().kind); print((torch.ones(2, device='neuron') * 2)"
               ".cpu().tolist()); print(PartialState().device)")
    assert used.returncode == 0, used.stderr
    assert used.stdout.splitlines() == [str(site_packages / "hf_neuron" / "__init__.py"), "reference", "[2.0, 2.0]",
                                        "neuron:0"]
    doctor = run(str(venv / "bin" / "hf-neuron"), "doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert "accelerate.rank-device-has-an-index" in doctor.stdout and "applied" in doctor.stdout
    matrix = run(str(venv / "bin" / "hf-neuron"), "matrix", "list")
    assert matrix.returncode == 2
    assert f"compat/catalog.json: no such file: {files.NOT_A_CHECKOUT}" in matrix.stderr
