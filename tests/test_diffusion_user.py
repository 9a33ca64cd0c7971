"""What a diffusers user runs on neuron, against the CPU: ``scripts/train_diffusion_lora.py`` (a LoRA fine-tune of a
tiny Stable-Diffusion-style UNet and of a tiny Flux-style transformer, with diffusers' adapter API, PEFT and
accelerate), a ``DiffusionPipeline`` loaded from a local folder onto neuron, the trained adapter loaded into it, and
``accelerate launch --device neuron --num_processes 2`` of the script. A perturbed device fails each comparison."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from _helpers_distributed import WORLD, run_launcher, succeeded
from _helpers_patches import SCRIPTS
from test_matrix_mutation import linear_off_by

from hf_neuron.matrix.scenarios.contract import ScenarioResult, compare, compare_named

pytestmark = pytest.mark.usefixtures("neuron")

SCRIPT = Path(__file__).parents[1] / "scripts" / "train_diffusion_lora.py"
BACKBONES = ("UNet2DConditionModel", "FluxTransformer2DModel")
#: Two steps: the first step's loss, and adapter weights that a second AdamW step makes depend on the gradients'
#: values (after one step from zero moments, Adam moves each weight by about the learning rate, whatever the gradient).
STEPS = 2


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_diffusion_lora", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


script = _script()


@pytest.fixture(autouse=True)
def _fresh_accelerate_state() -> Iterator[None]:
    """Each in-process run creates its own ``Accelerator`` (its device chosen again): accelerate's state is reset
    around every test."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny pipeline folder of each backbone, as ``--tiny`` writes it."""
    root = tmp_path_factory.mktemp("pipelines")
    return {name: script.write_tiny_pipeline(name, root / name) for name in BACKBONES}


def _train(folder: Path, out: Path, *options: str) -> tuple[dict[str, Any], Any]:
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    return script.train(script.parse_args([
        "--pretrained_model_name_or_path", str(folder), "--output_dir", str(out), "--max_train_steps", str(STEPS),
        *options]))


def _adapter(state: dict[str, Any]) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(state["adapter"])


def _is_adapter(name: str) -> bool:
    """A LoRA weight's name: PEFT's (``lora_A``/``lora_B``) or diffusers' saved one (``lora.down``/``lora.up``)."""
    return ".lora_" in name or ".lora." in name


def _up(adapter: dict[str, torch.Tensor]) -> set[str]:
    """The names of the adapter's up (B) weights: zero until trained (``init_lora_weights="gaussian"``)."""
    return {key for key in adapter if "lora_B" in key or "lora.up" in key}


def _trained(adapter: dict[str, torch.Tensor]) -> set[str]:
    """The up weights training moved from zero. One that no gradient reaches stays there on every device: the query
    and key of an attention over a single position (the tiny UNet's middle block) get none."""
    return {key for key in _up(adapter) if adapter[key].abs().sum() > 0}


def changed_outside_adapter(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> list[str]:
    """The parameters of ``after`` that are not LoRA weights and differ from ``before``'s (missing ones count; PEFT
    keeps an adapted layer's own weights under ``base_layer``)."""
    changed = []
    for name, value in after.items():
        original = name.replace(".base_layer.", ".")
        if not _is_adapter(name) and (original not in before or not torch.equal(value.detach().cpu(),
                                                                                 before[original].cpu())):
            changed.append(name)
    return sorted(changed)


def parity(device_run: dict[str, Any], cpu_run: dict[str, Any]) -> dict[str, ScenarioResult]:
    """The device run's first loss and saved adapter weights against the CPU run's (float32 tolerance)."""
    return {"loss": compare(torch.tensor(device_run["losses"][0]), torch.tensor(cpu_run["losses"][0]),
                            "first step's loss"),
            "adapter": compare_named(_adapter(device_run), _adapter(cpu_run), "LoRA weight")}


@pytest.fixture(scope="module")
def cpu_runs(folders: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    from accelerate.state import AcceleratorState, GradientState

    runs = {name: _train(folder, tmp_path_factory.mktemp("cpu") / name, "--cpu")[0] for name, folder in folders.items()}
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("name", BACKBONES)
def test_the_lora_script_trains_on_neuron_like_the_cpu(name: str, folders: dict[str, Path],
                                                       cpu_runs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    from diffusers import DiffusionPipeline

    state, pipeline = _train(folders[name], tmp_path / "neuron")
    assert state["devices"] == ["neuron:0"] and cpu_runs[name]["devices"] == ["cpu"]
    assert json.loads((tmp_path / "neuron" / "trainer_state.json").read_text()) == state
    assert len(state["losses"]) == STEPS
    for result in parity(state, cpu_runs[name]).values():
        assert result.outcome == "passed", result.message
    adapter = _adapter(state)
    prefix = f"{state['denoiser']}."
    assert adapter and all(key.startswith(prefix) and _is_adapter(key) for key in adapter), sorted(adapter)[:4]
    trained = _trained(adapter)
    assert trained and trained == _trained(_adapter(cpu_runs[name])), \
        f"the adapters training moved differ from the CPU's: {sorted(trained ^ _trained(_adapter(cpu_runs[name])))}"

    trained = getattr(pipeline, state["denoiser"])
    assert {p.device for p in trained.parameters()} == {torch.device("neuron:0")}
    original = getattr(DiffusionPipeline.from_pretrained(folders[name]), state["denoiser"])
    before = {n: p.detach() for n, p in original.named_parameters()}
    after = dict(trained.named_parameters())
    assert changed_outside_adapter(before, after) == [], "only the adapter's weights may change"
    assert sum(_is_adapter(n) for n in after) == len(adapter)


#: What a device whose linear layers are off by a relative ``eps`` fails, by (backbone, eps). A UNet is mostly
#: convolutions: 0.1% on its linear layers moves its first loss by less than the tolerance, but not its adapter
#: (which lives on those layers); 1% fails both.
PERTURBED = {("UNet2DConditionModel", 1e-3): ["adapter"], ("UNet2DConditionModel", 1e-2): ["loss", "adapter"],
             ("FluxTransformer2DModel", 1e-3): ["loss", "adapter"]}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "eps"), list(PERTURBED))
def test_a_perturbed_device_fails_the_scripts_parity(name: str, eps: float, folders: dict[str, Path],
                                                      cpu_runs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    with linear_off_by(eps):
        state, _ = _train(folders[name], tmp_path / "perturbed")
    results = parity(state, cpu_runs[name])
    failed = [what for what, result in results.items()
              if result.outcome == "failed" and "differ from the CPU's" in (result.message or "")]
    assert failed == PERTURBED[name, eps], {what: result.message for what, result in results.items()}


def test_a_base_weight_that_moved_is_found() -> None:
    before = {"conv.weight": torch.zeros(2), "attn.to_q.lora_A.default.weight": torch.zeros(2)}
    after = {"conv.weight": torch.zeros(2), "attn.to_q.lora_A.default.weight": torch.ones(2)}
    assert changed_outside_adapter(before, after) == []
    after["conv.weight"] = torch.tensor([0.0, 1e-7])
    assert changed_outside_adapter(before, after) == ["conv.weight"]
    before["attn.to_q.weight"] = torch.zeros(2)
    assert changed_outside_adapter(before, {**after, "attn.to_q.base_layer.weight": torch.zeros(2)}) == ["conv.weight"]
    assert changed_outside_adapter(before, {**after, "attn.to_q.base_layer.weight": torch.ones(2)}) == [
        "attn.to_q.base_layer.weight", "conv.weight"]
    assert changed_outside_adapter(before, {**after, "new.weight": torch.zeros(1)}) == ["conv.weight", "new.weight"]


def _images(pipeline: Any, name: str) -> dict[str, torch.Tensor]:
    from hf_neuron.compat.tiny_diffusion import recipe
    from hf_neuron.tiny.diffusion.pipelines import run_pipeline

    return run_pipeline(pipeline, recipe(name))


def _placed(pipeline: Any) -> set[torch.device]:
    return {p.device for part in pipeline.components.values() if isinstance(part, torch.nn.Module)
            for p in part.parameters()}


@pytest.mark.slow
@pytest.mark.parametrize("name", BACKBONES)
def test_a_pipeline_from_a_folder_lands_on_neuron_and_makes_the_cpus_images(name: str,
                                                                            folders: dict[str, Path]) -> None:
    from diffusers import DiffusionPipeline

    on_cpu = DiffusionPipeline.from_pretrained(folders[name])
    assert on_cpu.device == torch.device("cpu")  # diffusers places nothing by itself, on CUDA either
    expected = _images(on_cpu, name)
    mapped = DiffusionPipeline.from_pretrained(folders[name], device_map="neuron")
    moved = DiffusionPipeline.from_pretrained(folders[name]).to("neuron")
    for pipeline in (mapped, moved):
        assert pipeline.device == torch.device("neuron:0") and _placed(pipeline) == {torch.device("neuron:0")}
        result = compare_named(_images(pipeline, name), expected, "pipeline")
        assert result.outcome == "passed", result.message
    with linear_off_by(1e-3):
        perturbed = compare_named(_images(mapped, name), expected, "pipeline")
    assert perturbed.outcome == "failed" and "differ from the CPU's" in (perturbed.message or ""), perturbed.message


@pytest.mark.slow
def test_the_trained_adapter_loads_into_a_pipeline_on_neuron_like_on_the_cpu(
        folders: dict[str, Path], cpu_runs: dict[str, dict[str, Any]]) -> None:
    from diffusers import DiffusionPipeline

    name = "UNet2DConditionModel"
    adapter = Path(cpu_runs[name]["adapter"]).parent
    without = _images(DiffusionPipeline.from_pretrained(folders[name]), name)
    pipelines = {}
    for device in ("cpu", "neuron"):
        pipelines[device] = DiffusionPipeline.from_pretrained(folders[name], device_map=device)
        pipelines[device].load_lora_weights(adapter)
    assert _placed(pipelines["neuron"]) == {torch.device("neuron:0")}
    expected = _images(pipelines["cpu"], name)
    result = compare_named(_images(pipelines["neuron"], name), expected, "pipeline with the adapter")
    assert result.outcome == "passed", result.message
    assert compare_named(without, expected, "pipeline without the adapter").outcome == "failed", \
        "the adapter changes nothing: the comparison could not tell a pipeline that ignored it"


@pytest.mark.slow
@pytest.mark.distributed
def test_accelerate_launch_trains_on_two_neuron_devices_and_saves_the_adapter(tmp_path: Path) -> None:
    command = [str(SCRIPTS / "accelerate"), "launch", "--device", "neuron", "--num_processes", str(WORLD),
               "--main_process_port", "0", str(SCRIPT), "--tiny", "FluxTransformer2DModel",
               "--pretrained_model_name_or_path", "tiny-flux", "--output_dir", "flux-lora", "--max_train_steps", "3"]
    result = succeeded(run_launcher(tmp_path, command, timeout=300))
    state = json.loads((tmp_path / "flux-lora" / "trainer_state.json").read_text())
    assert state["world_size"] == WORLD and state["devices"] == [f"neuron:{rank}" for rank in range(WORLD)]
    assert len(state["losses"]) == 3 and all(loss == loss for loss in state["losses"])
    assert "step 3/3: loss" in result.stdout
    adapter = _adapter({"adapter": tmp_path / "flux-lora" / "pytorch_lora_weights.safetensors"})
    assert adapter and all(key.startswith("transformer.") and _is_adapter(key) for key in adapter)
    assert _up(adapter) and _trained(adapter) == _up(adapter)
