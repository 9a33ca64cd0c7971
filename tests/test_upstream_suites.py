"""``hf-neuron upstream peft|accelerate|diffusers|trl``: the suites beyond transformers, their groups and jobs, the
device each run really ran on, and the Hub stand-ins the tests read.

The runs use a small PEFT-like tree (``_helpers_upstream.write_peft_tree``), laid out as PEFT's source distribution
is (no ``tests/__init__.py``), whose tests pick their device with PEFT's own ``infer_device()``.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from _helpers_upstream import PEFT_NOT_APPLICABLE, PEFT_STAND_INS, QUAGGA_TESTS, write_list, write_peft_tree

from hf_neuron.cli import main
from hf_neuron.compat.catalog import load_catalog
from hf_neuron.compat.upstream_not_applicable import SUITES as LISTED_SUITES
from hf_neuron.errors import InputError
from hf_neuron.upstream import runner
from hf_neuron.upstream.plugin import PROBES
from hf_neuron.upstream.records import read_records, short_name
from hf_neuron.upstream.runner import DeviceMismatchError, UpstreamOptions, check_devices, plan
from hf_neuron.upstream.suites import SELECTIONS, SUITES, suite


def _peft(tree: Path, results: Path, tmp: Path, *args: str) -> tuple[int, str, str]:
    stand_ins = write_list(tmp / "stand_ins.toml", PEFT_STAND_INS)
    listed = write_list(tmp / "not_applicable.toml", PEFT_NOT_APPLICABLE)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["upstream", "peft", "--source", str(tree), "--tests", "tests/test_custom_models.py",
                       "--results", str(results), "--cache", str(tmp / "cache"), "--stand-ins", str(stand_ins),
                       "--not-applicable", str(listed), *args])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def quagga_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    work = tmp_path_factory.mktemp("quagga")
    status, out, _ = _peft(write_peft_tree(work / "tree"), work / "results", work)
    return status, out, work / "results"


def test_every_suite_is_declared_once_and_listed_where_its_data_is_read() -> None:
    assert tuple(SUITES) == LISTED_SUITES
    for declared in SUITES.values():
        if not declared.by_architecture:
            assert set(declared.selections) == set(SELECTIONS), declared.name
            assert declared.select(["default", "nightly", "ci"])  # every member a declared group


def test_a_peft_like_tree_runs_on_both_devices_by_peft_s_own_device_choice(quagga_run: tuple[int, str, Path]) -> None:
    status, out, results = quagga_run
    assert status == 0, out
    records, problems = read_records([results])
    assert problems == []
    outcomes = {(short_name(r["test"]), r["device"]): r["outcome"] for r in records}
    assert outcomes == {(test, device): outcome for test, pair in QUAGGA_TESTS.items()
                        for device, outcome in zip(("cpu", "neuron"), pair, strict=True)}
    assert {r["model_type"] for r in records} == {"custom_models"}  # the unit: the test module
    probes = [json.loads(path.read_text()) for path in sorted((results / PROBES).glob("*.json"))]
    assert {(p["device"], p["selected"]) for p in probes} == {("cpu", "cpu"), ("neuron", "neuron")}
    assert all(p["neuron_allocations"] is None for p in probes if p["device"] == "cpu")  # no device at all there
    assert all(p["neuron_allocations"] > 0 for p in probes if p["device"] == "neuron")


def test_records_say_which_tests_read_a_stand_in(quagga_run: tuple[int, str, Path]) -> None:
    _, out, results = quagga_run
    records, _ = read_records([results])
    readers = {(short_name(r["test"]), r["device"]) for r in records if r.get("stand_ins")}
    assert readers == {("test_stand_in", "cpu"), ("test_stand_in", "neuron")}
    assert {tuple(r["stand_ins"]) for r in records if r.get("stand_ins")} == {
        ("peft-internal-testing/tiny-random-OPTForCausalLM",)}
    assert "ran on stand-ins of Hub models or datasets: 1" in out
    assert all(r["env"]["upstream_source"]["kind"] == "directory" for r in records)


def test_a_hub_model_without_a_stand_in_fails_both_devices_the_same_way(quagga_run: tuple[int, str, Path]) -> None:
    _, out, results = quagga_run
    records, _ = read_records([results])
    failures = {r["device"]: r["failure"] for r in records if short_name(r["test"]) == "test_not_on_the_hub"}
    assert failures["cpu"] is not None and failures["neuron"] is not None
    assert failures["cpu"]["fingerprint"] == failures["neuron"]["fingerprint"]
    assert "failing on the CPU the same way: 1" in out
    assert "  custom_models" in out and "pass" in out.splitlines()[-3]


def test_a_neuron_run_that_ran_on_the_cpu_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUAGGA_DEVICE_LIES", "1")  # the tree's conftest makes infer_device() answer "cpu"
    status, out, err = _peft(write_peft_tree(tmp_path / "tree"), tmp_path / "results", tmp_path)
    assert status == 2, out + err
    assert "the 1-device run on neuron ran its tests on cpu, not on neuron, by its suite's own device selection" in err
    assert out == ""  # nothing is reported


def _probe(results: Path, device: str, **fields: object) -> None:
    (results / PROBES).mkdir(parents=True, exist_ok=True)
    probe = {"job": "1-device", "device": device, "process": "gw0", "tests": 3, "selected": device,
             "neuron_allocations": 5 if device == "neuron" else None, **fields}
    (results / PROBES / f"1-device-{device}-gw0.json").write_text(json.dumps(probe))


@pytest.mark.parametrize(
    ("device", "fields", "problem"),
    [
        ("neuron", {"selected": "cpu"}, "ran its tests on cpu, not on neuron"),
        ("neuron", {"neuron_allocations": 0}, "allocated nothing on neuron"),
        ("cpu", {"selected": "neuron"}, "ran its tests on neuron, not on cpu"),
        ("cpu", {"neuron_allocations": 7}, "allocated 7 times on a neuron device"),
        ("cpu", {"selected": "unknown: tests.testing_utils:torch_device: ModuleNotFoundError"}, "ran its tests on "
                                                                                                "unknown"),
    ],
)
def test_device_probes_that_show_another_device_stop_the_report(tmp_path: Path, device: str,
                                                                fields: dict[str, object], problem: str) -> None:
    _probe(tmp_path, device, **fields)
    with pytest.raises(DeviceMismatchError, match=problem):
        check_devices(tmp_path, "1-device", device)  # type: ignore[arg-type]


@pytest.mark.parametrize("device", ["cpu", "neuron"])
def test_device_probes_that_show_the_right_device_pass(tmp_path: Path, device: str) -> None:
    _probe(tmp_path, device)
    assert check_devices(tmp_path, "1-device", device).startswith(f"the suite chose {device}")  # type: ignore[arg-type]
    assert check_devices(tmp_path, "2-devices", device) == "no test ran"  # type: ignore[arg-type]


def _tree(root: Path, *files: str) -> Path:
    for name in files:
        write_list(root / name, "")
    return root


def test_groups_of_one_device_count_share_one_job_and_keep_their_own_selection(tmp_path: Path) -> None:
    peft = suite("peft")
    tree = _tree(tmp_path, "tests/test_custom_models.py", "tests/test_decoder_models.py")
    (job,) = plan(peft, tree, UpstreamOptions(results=tmp_path / "r", suite="peft", groups=("ci",)))
    assert job.targets == ("tests/test_custom_models.py", "tests/test_decoder_models.py") and job.devices == 1
    custom, decoder = peft.group("custom-models-ci"), peft.group("decoder-models-ci")
    assert job.keyword == (f"((test_custom_models) and ({custom.keyword})) or "
                           f"((test_decoder_models) and ({decoder.keyword}))")
    command = runner.pytest_command(peft, job, tmp_path / "c.json", UpstreamOptions(results=tmp_path, keyword="lora"))
    assert command[command.index("-k") + 1] == f"({job.keyword}) and (lora)"
    assert command[command.index("-o") + 1] == "console_output_style=classic" and "addopts=" in command


def test_a_group_that_needs_two_devices_is_a_job_of_its_own(tmp_path: Path) -> None:
    accelerate = suite("accelerate")
    tree = _tree(tmp_path, *(target for group in accelerate.groups for target in group.files))
    jobs = plan(accelerate, tree, UpstreamOptions(results=tmp_path / "r", suite="accelerate"))
    assert [(job.name, job.devices) for job in jobs] == [("1-device", 1), ("2-devices", 2)]
    assert jobs[1].targets == ("tests/test_multidevice.py",)
    env = runner._environment(accelerate, jobs[1], "neuron", UpstreamOptions(results=tmp_path), "reference",
                              runner.StandInCache(tmp_path, {}), tmp_path)
    assert env["HF_NEURON_EMULATOR_DEVICES"] == "2" and env["HF_HUB_OFFLINE"] == "1"
    cpu = runner._environment(accelerate, jobs[1], "cpu", UpstreamOptions(results=tmp_path), "reference",
                              runner.StandInCache(tmp_path, {}), tmp_path)
    assert cpu["HF_NEURON_EMULATOR"] == "0"  # the CPU run sees no neuron device


@pytest.mark.parametrize(
    ("suite_name", "options", "message"),
    [
        ("peft", {"groups": ("lora-everything",)}, "--group lora-everything: peft has no such group or selection"),
        ("peft", {"tests": ("tests/test_nothing.py",)}, r"tests/test_nothing\.py: no such test file"),
        ("peft", {"archs": ("llama",)}, "--arch and --top choose transformers' model tests"),
        ("transformers", {"groups": ("ci",)}, "transformers's tests are chosen by architecture"),
    ],
)
def test_a_selection_the_suite_does_not_have_is_bad_input(tmp_path: Path, suite_name: str,
                                                          options: dict[str, tuple[str, ...]], message: str) -> None:
    tree = _tree(tmp_path, "tests/test_custom_models.py", "tests/test_decoder_models.py")
    with pytest.raises(InputError, match=message):
        plan(suite(suite_name), tree, UpstreamOptions(results=tmp_path / "r", suite=suite_name, **options))


def test_list_describes_the_groups_and_selections(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["upstream", "accelerate", "--list"]) == 0
    out = capsys.readouterr().out
    assert "multi-device: multi-process launches" in out and "2 neuron devices" in out
    assert "  nightly: accelerator-nightly, big-modeling" in out


def test_a_unit_is_named_by_the_suite_s_own_rule() -> None:
    assert suite("peft").unit_of("tests/test_custom_models.py::TestPeftCustomModel::test_x[a/b]") == "custom_models"
    assert suite("diffusers").unit_of("tests/models/transformers/test_models_transformer_flux.py::T::t") == (
        "transformer_flux")
    assert suite("trl").unit_of("tests/test_sft_trainer.py") == "sft_trainer"  # a file that did not collect


def test_each_diffusers_family_names_the_catalog_architecture_its_tests_build() -> None:
    diffusers = suite("diffusers")
    catalog = {entry.model_type: entry for entry in load_catalog().entries}
    families = list(diffusers.select(["default"]))
    assert len(families) >= 6
    for group in families:
        (path,) = group.files
        architecture = diffusers.architectures[diffusers.unit_of(path)]
        assert catalog[architecture].group == "diffusion", architecture
    nightly = {target for group in diffusers.select(["nightly"]) for target in group.files}
    assert nightly >= {path for group in families for path in group.files}  # the nightly runs every family
    assert diffusers.unit_of(f"{_FLUX}::TestFluxTransformer::test_output") == "transformer_flux"
    assert suite("peft").architectures == {}  # PEFT's tests count for an architecture through their stand-ins


_FLUX = "tests/models/transformers/test_models_transformer_flux.py"


def test_the_diffusers_ci_group_names_test_classes_of_the_tree(tmp_path: Path) -> None:
    diffusers = suite("diffusers")
    ci = diffusers.group("ci")
    assert all("::" in target for target in ci.files)  # classes: a few tests of each module, not the modules
    tree = _tree(tmp_path, *{target.partition("::")[0] for target in ci.files})
    (job,) = plan(diffusers, tree, UpstreamOptions(results=tmp_path / "r", suite="diffusers", groups=("ci",)))
    assert job.targets == ci.files and job.devices == 1
    (tmp_path / "tests/models/transformers/test_models_pixart_transformer2d.py").unlink()
    with pytest.raises(InputError, match=r"test_models_pixart_transformer2d\.py: no such test file"):
        plan(diffusers, tree, UpstreamOptions(results=tmp_path / "r", suite="diffusers", groups=("ci",)))


def test_accelerate_s_nightly_leaves_out_the_compile_tests_its_default_runs(tmp_path: Path) -> None:
    accelerate = suite("accelerate")
    tree = _tree(tmp_path, *(target for group in accelerate.groups for target in group.files))
    default, nightly = (plan(accelerate, tree, UpstreamOptions(results=tmp_path / "r", suite="accelerate",
                                                               groups=(name,)))[0] for name in ("default", "nightly"))
    assert default.targets == nightly.targets and default.keyword is None
    assert nightly.keyword is not None and "((test_accelerator) and (not compile))" in nightly.keyword
    assert "(test_state_checkpointing)" in nightly.keyword  # the other files: all their tests


def _child(results: Path, device: str, pid: int, allocations: int | None) -> None:
    folder = results / PROBES / f"1-device-{device}-processes"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"process-{pid}.json").write_text(json.dumps({"pid": pid, "neuron_allocations": allocations}))


def test_the_processes_a_test_launched_count_where_pytest_s_own_allocated_nothing(tmp_path: Path) -> None:
    """accelerate's multi-device tests run their work in `accelerate launch` children."""
    _probe(tmp_path, "neuron", neuron_allocations=0, pid=10)
    _child(tmp_path, "neuron", 10, 0)  # pytest's own process reports too: not counted twice
    with pytest.raises(DeviceMismatchError, match="allocated nothing on neuron"):
        check_devices(tmp_path, "1-device", "neuron")
    _child(tmp_path, "neuron", 11, 40)
    assert check_devices(tmp_path, "1-device", "neuron").endswith("40 allocations on neuron")
    _probe(tmp_path, "cpu", pid=12)
    _child(tmp_path, "cpu", 13, 2)
    with pytest.raises(DeviceMismatchError, match="allocated 2 times on a neuron device"):
        check_devices(tmp_path, "1-device", "cpu")


def test_a_process_started_with_a_probe_directory_reports_its_neuron_allocations(tmp_path: Path) -> None:
    from _helpers import run

    done = run("import torch; torch.ones(2, device='neuron') + 1", {"HF_NEURON_DEVICE_PROBE": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    (report,) = [json.loads(path.read_text()) for path in tmp_path.glob("process-*.json")]
    assert report["neuron_allocations"] >= 2


def _selected(keyword: str, node_id: str) -> bool:
    """Whether pytest's ``-k keyword`` keeps the test ``node_id`` (a substring of a name of it or of its parents)."""
    from _pytest.mark.expression import Expression

    names = [part.lower() for part in node_id.replace("::", "/").split("/")]
    return Expression.compile(keyword).evaluate(lambda term, **_: any(term.lower() in name for name in names))


_ROOT_OF = "tests/models/unets/test_models_unet_2d_condition.py::"
_UNET_2D = "tests/models/unets/test_models_unet_2d.py::"


@pytest.mark.parametrize(("node_id", "kept"), [
    (f"{_FLUX}::TestFluxTransformer::test_forward", True),
    (f"{_FLUX}::TestFluxTransformerLoRAHotSwap::test_enable_lora_hotswap_wrong_check_compiled_argument_raises", True),
    (f"{_FLUX}::TestFluxTransformerCompile::test_torch_compile_recompilation_and_graph_break", False),
    (f"{_FLUX}::TestFluxTransformerLoRAHotSwap::test_hotswapping_compiled_model_linear[11-11]", False),
    (f"{_ROOT_OF}TestUNet2DConditionModelCompile::test_compile_works_with_aot", False),
    (f"{_FLUX}::TestFluxTransformer::test_tensor_parallel_neuron", False),
    (f"{_UNET_2D}TestUNetLDMModelTraining::test_mixed_precision_training", False),
    (f"{_UNET_2D}TestUNetLDMModelMemory::test_layerwise_casting_training", False),
    (f"{_UNET_2D}TestNCSNppModelTraining::test_mixed_precision_training", False),
    (f"{_UNET_2D}TestUnet2DModelTraining::test_mixed_precision_training", True),
    (f"{_UNET_2D}TestUNetLDMModelTraining::test_training", True),
])
def test_diffusers_nightly_leaves_out_the_slow_tests_its_default_runs(tmp_path: Path, node_id: str,
                                                                     kept: bool) -> None:
    diffusers = suite("diffusers")
    tree = _tree(tmp_path, *(target for group in diffusers.groups for target in group.files))
    default, nightly = (plan(diffusers, tree, UpstreamOptions(results=tmp_path / "r", suite="diffusers",
                                                              groups=(name,)))[0] for name in ("default", "nightly"))
    assert default.targets == nightly.targets, "the same nine families"
    assert default.keyword is not None and nightly.keyword is not None
    assert _selected(nightly.keyword, node_id) is kept
    assert _selected(default.keyword, node_id) is ("tensor_parallel_neuron" not in node_id)


def test_the_nightly_leaves_out_every_compile_test_diffusers_lists_as_not_applicable() -> None:
    from hf_neuron.compat.upstream_not_applicable import load_not_applicable

    patterns = [pattern for entry in load_not_applicable().entries if entry.names["suite"] == ("diffusers",)
                and "Inductor" in entry.reason for pattern in entry.names["test"]]
    assert patterns, "the list names diffusers' compile tests"
    nightly = suite("diffusers").group("families-nightly").keyword
    assert nightly is not None
    for pattern in patterns:  # a name each pattern matches: its wildcards filled in
        assert not _selected(nightly, f"{_FLUX}::TestFluxTransformer::{pattern.replace('*', '_x_')}"), pattern
