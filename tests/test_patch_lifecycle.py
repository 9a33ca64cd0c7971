"""Every patch applies, has its effect, and reverting restores the original everywhere; out-of-range versions skip."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from _helpers_patches import (
    SLIDING_WINDOW_LENGTH_PATCHES,
    fake_distribution,
    placeholder_mask,
    pre_release_flex_attention,
    reinstalled,
    run,
    sliding_window_decoding,
)

from hf_neuron.patches import default_registry, installation
from hf_neuron.patches.bindings import modules_in
from hf_neuron.patches.libraries import LIBRARIES
from hf_neuron.patches.transformers import PLACEHOLDER_COUNT_CLASSES

Probe = Callable[[Path, Path], Any]


def _error(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - the error's type is the answer
        return type(error).__name__


def _safetensors(model: Path, tmp: Path) -> Any:
    from safetensors.torch import load_file

    return _error(lambda: str(load_file(model / "model.safetensors", device="neuron:1")["lm_head.weight"].device))


def _accelerate_detects(model: Path, tmp: Path) -> Any:
    from accelerate.utils import is_neuron_available

    return is_neuron_available()


def _launch_option(model: Path, tmp: Path) -> Any:
    from accelerate.commands.launch import launch_command_parser

    known, _unknown = launch_command_parser().parse_known_args(["--device", "cpu", "train.py"])
    return getattr(known, "device", None)


def _launch_forcing(model: Path, tmp: Path) -> Any:
    from accelerate.commands.launch import launch_command

    args = argparse.Namespace(device="cpu", cpu=False, num_processes=None)  # too few fields: stops right after
    _error(lambda: launch_command(args))
    return args.cpu, args.num_processes


def _on_neuron(call: Callable[[Any], Any]) -> Any:
    """``call(accelerator)`` with an Accelerator forced onto neuron (as `--device neuron` does)."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from accelerate.utils import patch_environment

    AcceleratorState._reset_state(reset_partial_state=True)  # a probe before may have left a CPU state
    with patch_environment(ACCELERATE_TORCH_DEVICE="neuron"):
        return _error(lambda: call(Accelerator))


def _rank_device(model: Path, tmp: Path) -> Any:
    return _on_neuron(lambda accelerator: str(accelerator().device))


def _fp16(model: Path, tmp: Path) -> Any:
    return _on_neuron(lambda accelerator: type(accelerator(mixed_precision="fp16").scaler).__name__)


def _scaler(model: Path, tmp: Path) -> Any:
    from accelerate.utils import get_grad_scaler

    scaler = get_grad_scaler()
    return scaler._device, scaler.is_enabled()


def _max_memory(model: Path, tmp: Path) -> Any:
    from accelerate.utils import get_max_memory

    return sorted(key for key in get_max_memory() if key != "cpu")


def _transformers_detects(model: Path, tmp: Path) -> Any:
    from transformers.utils import is_torch_neuron_available

    return is_torch_neuron_available()


def _available_devices(model: Path, tmp: Path) -> Any:
    from transformers.utils import get_available_devices

    return "neuron" in get_available_devices()


def _pipeline(model: Path, tmp: Path) -> Any:
    from transformers import pipeline

    return str(pipeline("text-generation", model=str(model)).device)


def _trainer(model: Path, tmp: Path) -> Any:
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    return Trainer(model=AutoModelForCausalLM.from_pretrained(model), args=TrainingArguments(tmp, report_to=[]))


def _saves_rng(model: Path, tmp: Path) -> Any:
    _trainer(model, tmp)._save_rng_state(str(tmp / "checkpoint"))
    return "neuron" in torch.load(tmp / "checkpoint" / "rng_state.pth", weights_only=False)


def _restores_rng(model: Path, tmp: Path) -> Any:
    trainer = _trainer(model, tmp)
    torch.neuron.manual_seed(1234)
    states = {"python": __import__("random").getstate(), "numpy": __import__("numpy").random.get_state(),
              "cpu": torch.random.get_rng_state(), "neuron": torch.neuron.get_rng_state()}
    (tmp / "checkpoint").mkdir()
    torch.save(states, tmp / "checkpoint" / "rng_state.pth")
    torch.neuron.manual_seed(99)
    trainer._load_rng_state(str(tmp / "checkpoint"))
    return torch.equal(torch.neuron.get_rng_state(), states["neuron"])


def _moe(model: Path, tmp: Path) -> Any:
    """A tiny MoE model's logits on neuron equal the CPU's (patched), or the error its forward raises."""
    from hf_neuron.tiny.transformers.models import build_model

    cpu = build_model("qwen3_moe", seed=0).eval()
    ids = torch.randint(4, 500, (2, 8))
    try:
        with torch.no_grad():
            on_neuron = cpu.to("neuron")(ids.to("neuron")).logits.cpu()
            return torch.equal(on_neuron, cpu.to("cpu")(ids).logits)
    except RuntimeError as error:
        return str(error).split(" not implemented")[0]


def _lstm(model: Path, tmp: Path) -> Any:
    """A two-layer bidirectional LSTM's output and gradients on neuron are the CPU's within float32 rounding
    (patched), or the error its forward raises (torch's fused LSTM cell has no kernel but CUDA's)."""
    torch.manual_seed(0)
    lstm, inputs = torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True), torch.randn(2, 5, 4)

    def step(device: str) -> tuple[torch.Tensor, ...]:
        lstm.zero_grad()
        output, (h, c) = lstm.to(device)(inputs.to(device))
        (output.sum() + h.sum() + c.sum()).backward()
        return output.cpu(), h.cpu(), c.cpu(), *(p.grad.cpu() for p in lstm.parameters())  # type: ignore[union-attr]

    expected = step("cpu")
    return _error(lambda: all(torch.allclose(a, e, atol=1e-5) for a, e in zip(step("neuron"), expected, strict=True)))


def _git_text_only_loss(model: Path, tmp: Path) -> Any:
    """GIT's training loss on text alone (no image), on neuron: the next-token loss over every logit (patched), or the
    error its loss raises (it drops as many logits as an image would have tokens)."""
    from transformers import GitConfig, GitForCausalLM

    torch.manual_seed(0)
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "image_size": 32, "patch_size": 8}
    config = GitConfig(vision_config=vision, vocab_size=100, hidden_size=32, intermediate_size=64,
                       num_hidden_layers=1, num_attention_heads=2)
    git, ids = GitForCausalLM(config).eval().to("neuron"), torch.randint(4, 100, (2, 8))
    expected = torch.nn.functional.cross_entropy(git(input_ids=ids.to("neuron")).logits[:, :-1].reshape(-1, 100).cpu(),
                                                 ids[:, 1:].reshape(-1))
    return _error(lambda: torch.allclose(git(input_ids=ids.to("neuron"), labels=ids.to("neuron")).loss.cpu(), expected))


def _reformer_bfloat16(model: Path, tmp: Path) -> Any:
    """A Reformer with axial position embeddings loaded onto neuron in bfloat16: its logits' dtype (patched), or the
    error its forward raises (the axial weights stay float32 and the first layer norm refuses the mix)."""
    from transformers import ReformerConfig, ReformerModelWithLMHead

    config = ReformerConfig(is_decoder=True, vocab_size=100, hidden_size=32, attention_head_size=8,
                            num_attention_heads=4, feed_forward_size=64, attn_layers=["local", "lsh"],
                            axial_pos_embds_dim=[16, 16], axial_pos_shape=[4, 8], max_position_embeddings=32,
                            local_attn_chunk_length=32, lsh_attn_chunk_length=32)
    ReformerModelWithLMHead(config).save_pretrained(tmp)
    reformer = ReformerModelWithLMHead.from_pretrained(tmp, dtype=torch.bfloat16, device_map="neuron")
    return _error(lambda: str(reformer(input_ids=torch.randint(4, 100, (1, 8), device="neuron")).logits.dtype))


class _Attention(torch.nn.Module):
    is_causal, num_key_value_groups = True, 1


def _flex_attention(model: Path, tmp: Path) -> Any:
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    query = torch.randn(1, 2, 16, 16, device="neuron")
    with pre_release_flex_attention():
        return _error(lambda: ALL_ATTENTION_FUNCTIONS["flex_attention"](_Attention().eval(), query, query, query,
                                                                        None))


def _flex_attention_mask(model: Path, tmp: Path) -> Any:
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    mask = ALL_MASK_ATTENTION_FUNCTIONS["flex_attention"]
    with pre_release_flex_attention():
        return _error(lambda: type(mask(batch_size=1, q_length=16, kv_length=16, device="neuron")).__name__)


def _unchosen_backend(model: Path, tmp: Path) -> Any:
    from transformers import CompileConfig

    return type(CompileConfig().backend).__name__


def _compile_config(model: Path, tmp: Path) -> Any:
    from transformers import AutoModelForCausalLM, CompileConfig

    on_neuron = AutoModelForCausalLM.from_pretrained(model, device_map="neuron")
    on_neuron.get_compiled_call(CompileConfig())  # torch.compile is lazy: nothing is compiled yet
    return str(on_neuron._last_compile_config.backend)


def _vibevoice_negative_branch(model: Path, tmp: Path) -> Any:
    from transformers import AutoModelForCausalLM, CompileConfig
    from transformers.models.vibevoice.generation_vibevoice import VibeVoiceGenerationMixin

    on_neuron = AutoModelForCausalLM.from_pretrained(model, device_map="neuron")
    VibeVoiceGenerationMixin._get_negative_compiled_call(on_neuron, CompileConfig())  # lazy: nothing compiles
    return str(on_neuron._last_negative_compile_config.backend)


def _glm5_topk_mask(model: Path, tmp: Path) -> Any:
    from transformers.models.glm5_next.modeling_glm5_next import Glm5NextTextAttention

    attention = types.SimpleNamespace(config=types.SimpleNamespace(_attn_implementation="sdpa"))
    topk = torch.tensor([[[0, 2, 2, -1]]], device="neuron")  # a repeated hit, and one the indexer left out
    torch._dynamo.reset()
    build = torch.compile(lambda t: Glm5NextTextAttention.build_attention_mask_from_topk(attention, t, None, 4),
                          backend="neuron")
    return _error(lambda: build(topk).cpu().tolist())


def _sliding_window(model: Path, tmp: Path) -> Any:
    return sliding_window_decoding()[:2]


def _tensor_check_in_a_graph(model: Path, tmp: Path) -> Any:
    """Whether a compiled function that checks a tensor condition as LLaVA's forward does (its module's own binding
    of ``torch_compilable_check``) breaks its graph."""
    from transformers.models.llava import modeling_llava

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()

    @torch.compile(backend="neuron", dynamic=False)
    def checked(x: torch.Tensor) -> torch.Tensor:
        modeling_llava.torch_compilable_check(x.sum() == x.numel(), "image tokens and features do not match")
        return x * 2

    checked(torch.ones(3, device="neuron"))
    return sum(torch._dynamo.utils.counters["graph_break"].values()) > 0


def _placeholder_count(module: str, name: str) -> Probe:
    def probe(model: Path, tmp: Path) -> Any:
        """Whether ``<name>.get_placeholder_mask`` compiled on neuron breaks its graph (its boolean-index count)."""
        return placeholder_mask(module, name)[0] > 0

    return probe


def _advice_in_a_graph(method: str) -> Probe:
    def probe(model: Path, tmp: Path) -> Any:
        """Whether a compiled function that gives transformers' once-only advice (``logger.<method>(...)``, as LED's
        forward does) breaks its graph."""
        from transformers.utils import logging as hf_logging

        logger = hf_logging.get_logger("hf_neuron_test.advice")
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()

        @torch.compile(backend="neuron", dynamic=False)
        def advised(x: torch.Tensor) -> torch.Tensor:
            getattr(logger, method)("advice")
            return x * 2

        advised(torch.ones(3, device="neuron"))
        return sum(torch._dynamo.utils.counters["graph_break"].values()) > 0

    return probe


def _peft(model: Path, tmp: Path) -> Any:
    from peft.utils import infer_device

    return infer_device()


def _sparse_adapter_layer(kind: str) -> Any:
    from peft import FrodConfig, ShiraConfig, get_peft_model

    config = ShiraConfig(r=2, target_modules=["0"]) if kind == "shira" else FrodConfig(target_modules=["0"])
    return get_peft_model(torch.nn.Sequential(torch.nn.Linear(8, 8)), config).to("neuron").base_model.model[0]


def _shira(model: Path, tmp: Path) -> Any:
    return _error(lambda: _sparse_adapter_layer("shira").get_delta_weight("default").layout)


def _frod_tensors(model: Path, tmp: Path) -> Any:
    layer = _sparse_adapter_layer("frod")
    return _error(lambda: layer._get_frod_tensors("default", device="neuron", dtype=torch.float32)[2].layout)


def _frod_product(model: Path, tmp: Path) -> Any:
    layer = _sparse_adapter_layer("frod")
    return _error(lambda: tuple(layer._sparse_activation_mm(torch.ones(2, 3, device="neuron"),
                                                            torch.zeros(4, 3, device="neuron")).shape))


def _trl(model: Path, tmp: Path) -> Any:
    from trl.trainer.utils import get_peak_flops_per_device

    return _on_neuron(lambda accelerator: get_peak_flops_per_device(accelerator(), "bfloat16"))


class _DeviceMapOf:
    """An architecture whose `from_pretrained` returns the `device_map` it was asked for."""

    @staticmethod
    def from_pretrained(model_id: str, **kwargs: Any) -> Any:
        return kwargs["device_map"]


def _trl_device_map(model: Path, tmp: Path) -> Any:
    from trl.trainer.utils import create_model_from_path

    return _on_neuron(lambda accelerator: create_model_from_path(str(model), _DeviceMapOf))


def _diffusers(model: Path, tmp: Path) -> Any:
    from diffusers.utils import is_torch_neuronx_available

    return is_torch_neuronx_available()


def _spectrogram_encoder(name: str) -> Probe:
    """The spectrogram pipeline's note or context encoder on a padded batch: its masked position must get no
    attention (the output of the unmasked positions does not change when the masked token does)."""

    def probe(model: Path, tmp: Path) -> Any:
        from diffusers.pipelines.deprecated.spectrogram_diffusion import continuous_encoder, notes_encoder

        sizes = {"d_model": 16, "dropout_rate": 0.0, "num_layers": 1, "num_heads": 2, "d_kv": 8, "d_ff": 32,
                 "feed_forward_proj": "gated-gelu"}
        torch.manual_seed(0)
        mask = torch.tensor([[1, 1, 1, 0]])
        if name == "notes":
            encoder = notes_encoder.SpectrogramNotesEncoder(max_length=4, vocab_size=8, **sizes).eval()
            inputs = [torch.tensor([[1, 2, 3, 4]]), torch.tensor([[1, 2, 3, 7]])]
        else:
            encoder = continuous_encoder.SpectrogramContEncoder(input_dims=4, targets_context_length=4,
                                                                **sizes).eval()
            first = torch.randn(1, 4, 4)
            inputs = [first, torch.cat([first[:, :3], torch.randn(1, 1, 4)], dim=1)]
        try:
            with torch.no_grad():
                outputs = [encoder(x, mask)[0][:, :3] for x in inputs]
        except AttributeError as error:
            return type(error).__name__
        return torch.allclose(*outputs, atol=1e-6)

    return probe


#: patch id -> (probe, its answer with the patch, its answer without)
EFFECTS: dict[str, tuple[Probe, Any, Any]] = {
    "torch.integer-histc-on-neuron": (_moe, True, '"histogram_cpu"'),
    "torch.lstm-of-native-operators-on-neuron": (_lstm, True, "NotImplementedError"),
    "safetensors.open-on-neuron": (_safetensors, "neuron:1", "SafetensorError"),
    "accelerate.detect-neuron-by-device": (_accelerate_detects, True, False),
    "accelerate.launch-device-option": (_launch_option, "cpu", None),
    "accelerate.launch-forces-device": (_launch_forcing, (True, 1), (False, None)),
    "accelerate.rank-device-has-an-index": (_rank_device, "neuron:0", "neuron"),
    "accelerate.fp16-on-neuron": (_fp16, "GradScaler", "ValueError"),
    "accelerate.grad-scaler-on-neuron": (_scaler, ("neuron", True), ("cuda", False)),
    "accelerate.max-memory-on-neuron": (_max_memory, [0, 1], []),
    "transformers.detect-neuron-by-device": (_transformers_detects, True, False),
    "transformers.available-devices-include-neuron": (_available_devices, True, False),
    "transformers.pipeline-places-on-neuron": (_pipeline, "neuron:0", "cpu"),
    "transformers.trainer-saves-neuron-rng": (_saves_rng, True, False),
    "transformers.trainer-restores-neuron-rng": (_restores_rng, True, False),
    "transformers.flex-attention-explains-neuron": (_flex_attention, "NotImplementedError", "ValueError"),
    "transformers.flex-attention-mask-explains-neuron": (_flex_attention_mask, "NotImplementedError", "InductorError"),
    "transformers.compile-config-remembers-unchosen-backend": (_unchosen_backend, "UnchosenBackend", "str"),
    "transformers.compile-config-uses-device-backend": (_compile_config, "neuron", "inductor"),
    "transformers.vibevoice-negative-branch-uses-device-backend": (_vibevoice_negative_branch, "neuron", "inductor"),
    "transformers.glm5-next-topk-mask-compiles-on-neuron": (_glm5_topk_mask, [[[[True, False, True, False]]]],
                                                            "BackendCompilerFailed"),
    **dict.fromkeys([*SLIDING_WINDOW_LENGTH_PATCHES, "transformers.padding-mask-takes-a-tensor-offset"],
                    (_sliding_window, (1, 0), (6, 0))),  # graphs and breaks of 6 decoding steps: one, or one a step
    "transformers.tensor-checks-stay-out-of-neuron-graphs": (_tensor_check_in_a_graph, False, True),
    **{f"transformers.placeholder-count-without-boolean-index-{module.replace('_', '-')}":
       (_placeholder_count(module, name), False, True) for module, name in PLACEHOLDER_COUNT_CLASSES},
    "transformers.warning-once-skipped-in-compiled-graphs": (_advice_in_a_graph("warning_once"), False, True),
    "transformers.info-once-skipped-in-compiled-graphs": (_advice_in_a_graph("info_once"), False, True),
    "transformers.git-text-only-training-loss": (_git_text_only_loss, True, "ValueError"),
    "transformers.reformer-axial-positions-in-model-dtype": (_reformer_bfloat16, "torch.bfloat16", "RuntimeError"),
    "peft.infer-device-neuron": (_peft, "neuron", "cpu"),
    "peft.shira-dense-delta-on-neuron": (_shira, torch.strided, "RuntimeError"),
    "peft.frod-dense-s-on-neuron": (_frod_tensors, torch.strided, "RuntimeError"),
    "peft.frod-dense-product-on-neuron": (_frod_product, (2, 4), "NotImplementedError"),
    "trl.loads-model-on-the-process-device": (_trl_device_map, None, "auto"),
    "trl.peak-flops-by-device": (_trl, None, "AssertionError"),
    "diffusers.detect-neuron-by-device": (_diffusers, True, False),
    "diffusers.notes-encoder-builds-its-attention-mask": (_spectrogram_encoder("notes"), True, "AttributeError"),
    "diffusers.continuous-encoder-builds-its-attention-mask": (_spectrogram_encoder("context"), True,
                                                               "AttributeError"),
}


def test_every_patch_has_an_effect_probe() -> None:
    assert list(EFFECTS) == [patch.id for patch in default_registry().patches()]


def _binding(patch_id: str) -> tuple[Any, str]:
    patch = next(p for p in default_registry().patches() if p.id == patch_id)
    *path, name = patch.attribute.split(".")
    owner: Any = importlib.import_module(patch.module)
    for part in path:
        owner = getattr(owner, part)
    return owner, name


@pytest.mark.parametrize("patch_id", list(EFFECTS))
@pytest.mark.filterwarnings("ignore:torch.cuda.amp.GradScaler is enabled, but CUDA is not available")
@pytest.mark.usefixtures("neuron")
def test_patch_applies_has_its_effect_and_reverts_everywhere(patch_id: str, tiny_llama: Path, tmp_path: Path) -> None:
    probe, patched, unpatched = EFFECTS[patch_id]
    owner, name = _binding(patch_id)
    registry = installation().finder.registry  # type: ignore[union-attr]
    assert registry.state(patch_id).status == "applied"
    original, replacement = registry.objects(patch_id)
    assert getattr(owner, name) is replacement
    holders = [(module, key) for module in modules_in(LIBRARIES) for key, value in vars(module).items()
               if value is replacement]
    assert probe(tiny_llama, tmp_path / "patched") == patched
    with reinstalled():
        assert getattr(owner, name, None) is original  # what a patch added is gone; an inherited one is its class's
        assert all(getattr(module, key, None) is original for module, key in holders)
        assert probe(tiny_llama, tmp_path / "reverted") == unpatched
    assert installation().finder.registry.state(patch_id).status == "applied"  # type: ignore[union-attr]
    assert getattr(owner, name) is not original


def _targets(library: str) -> list[str]:
    return sorted({patch.module for patch in default_registry().patches() if patch.library == library})


@pytest.mark.parametrize("library", LIBRARIES)
def test_library_version_outside_the_range_is_skipped_and_still_imports(library: str, tmp_path: Path) -> None:
    code = f"""
        import importlib, json
        import torch  # the autoload installs the patches
        from hf_neuron.patches import installation
        modules = [importlib.import_module(name) for name in {_targets(library)!r}]
        states = installation().finder.registry.states()
        print(json.dumps([[s.patch.id, s.status, s.detail] for s in states if s.patch.library == {library!r}]))
    """
    path = os.pathsep.join([str(fake_distribution(tmp_path, library, "0.0.1")), os.environ.get("PYTHONPATH", "")])
    result = run(code, env={"PYTHONPATH": path})
    states = json.loads(result.stdout.splitlines()[-1])
    assert states and all(status == "version-out-of-range" for _id, status, _detail in states)
    assert all(detail.startswith(f"{library} 0.0.1 is not in >=") for _id, _status, detail in states)
