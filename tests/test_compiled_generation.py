"""Compiled generation on neuron: ``generate(compile_config=CompileConfig())`` compiles with the device's backend when
the user chose none, and a user's explicit backend is kept (``transformers.compile-config-*`` patches)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
from _helpers_patches import SLIDING_WINDOW_LENGTH_PATCHES, reinstalled, sliding_window_decoding, without

NEW_TOKENS = 4

pytestmark = pytest.mark.usefixtures("neuron")


def _generate(model: Any, compile_config: Any) -> torch.Tensor:
    input_ids = torch.arange(1, 6, device=model.device).unsqueeze(0)
    return model.generate(input_ids, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
                          cache_implementation="static", compile_config=compile_config)


def _models(checkpoint: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM

    return (AutoModelForCausalLM.from_pretrained(checkpoint, device_map="neuron").eval(),
            AutoModelForCausalLM.from_pretrained(checkpoint).eval())


def test_a_compile_config_without_a_backend_compiles_with_the_neuron_backend(tiny_llama: Path) -> None:
    from transformers import CompileConfig

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()  # what tests before it compiled in this process (reset keeps the counters)
    on_neuron, on_cpu = _models(tiny_llama)
    tokens = _generate(on_neuron, CompileConfig())
    assert torch.equal(tokens.cpu(), _generate(on_cpu, None))
    assert on_neuron._last_compile_config == CompileConfig(backend="neuron", dynamic=False, mode="default")
    compiled = torch._dynamo.utils.counters["aot_autograd"]["total"]  # the neuron backend's compilations
    assert compiled == 1, f"one graph for the {NEW_TOKENS - 1} decoding steps (one shape), not one a token"


def test_a_users_choices_are_kept(tiny_llama: Path) -> None:
    from transformers import CompileConfig

    on_neuron, _ = _models(tiny_llama)
    _generate(on_neuron, CompileConfig(fullgraph=True))
    assert on_neuron._last_compile_config == CompileConfig(fullgraph=True, backend="neuron", dynamic=False,
                                                           mode="default")
    _generate(on_neuron, CompileConfig(backend="aot_eager"))
    assert on_neuron._last_compile_config == CompileConfig(backend="aot_eager")
    with pytest.raises(Exception, match="Neuron backend does not support dynamic=True"):
        _generate(on_neuron, CompileConfig(dynamic=True))  # the device's backend, with the user's dynamic=True


def test_an_explicit_inductor_backend_compiles_with_the_backend_the_device_selects(tiny_llama: Path) -> None:
    """TorchNeuron (2.33 and later) selects its backend on a Neuron device, and torch.compile cannot tell Inductor by
    name from no backend: the user's CompileConfig is kept, its mode warned about and ignored."""
    from transformers import CompileConfig

    torch._dynamo.reset()
    on_neuron, on_cpu = _models(tiny_llama)
    with pytest.warns(UserWarning, match="does not support mode='reduce-overhead', falling back to default mode"):
        tokens = _generate(on_neuron, CompileConfig(backend="inductor"))
    assert torch.equal(tokens.cpu(), _generate(on_cpu, None))
    assert on_neuron._last_compile_config == CompileConfig(backend="inductor")
    assert torch._dynamo.utils.counters["aot_autograd"]["total"] >= 1  # the neuron backend's compilations


def test_without_the_shim_a_compile_config_keeps_its_cuda_graph_mode(tiny_llama: Path) -> None:
    """The input that breaks the backend choice: the patches reverted (``HF_NEURON_PATCHES=0`` does the same), the
    docs' ``CompileConfig()`` reaches the device with Inductor's name and mode='reduce-overhead', which the backend
    the device selects warns about and ignores; with the shim it has the device's settings (no warning)."""
    from transformers import CompileConfig

    torch._dynamo.reset()
    with reinstalled():
        on_neuron, _ = _models(tiny_llama)
        assert type(CompileConfig().backend) is str
        with pytest.warns(UserWarning, match="does not support mode='reduce-overhead'"):
            _generate(on_neuron, CompileConfig())
    assert on_neuron._last_compile_config == CompileConfig()


def test_the_unchosen_backend_is_inductor_everywhere_but_on_neuron(tiny_llama: Path) -> None:
    from transformers import CompileConfig

    config = CompileConfig()
    assert config.backend == "inductor" and config == CompileConfig(backend="inductor")
    assert type(copy.deepcopy(config).backend) is type(config.backend), "generate deep-copies its configuration"
    assert type(CompileConfig(backend="inductor").backend) is str
    _, on_cpu = _models(tiny_llama)
    on_cpu.get_compiled_call(config)  # off neuron the user's config is used as given (lazily: nothing compiles)
    assert on_cpu._last_compile_config is config


#: The patches that keep a static sliding-window layer's length in a tensor (they apply together), and the one that
#: takes the tensor offset it gives the mask.
SLIDING_WINDOW_PATCHES = [*SLIDING_WINDOW_LENGTH_PATCHES, "transformers.padding-mask-takes-a-tensor-offset"]


@pytest.mark.parametrize("prompt", [3, 6], ids=["prompt-within-window", "prompt-past-window"])
def test_a_sliding_window_decodes_in_one_graph_and_computes_what_transformers_does(prompt: int) -> None:
    """The same results and the same ``cumulative_length`` as transformers' layer, which stops advancing it once the
    window is full (after a prompt longer than the window it stays 0; a model that writes there, DiffusionGemma,
    would write out of bounds were it the true length)."""
    graphs, breaks, patched = sliding_window_decoding(prompt=prompt)
    assert (graphs, breaks) == (1, 0), "one graph for six steps that fill the window and roll it"
    with reinstalled():
        graphs, breaks, original = sliding_window_decoding(prompt=prompt)
    assert (graphs, breaks) == (6, 0), "transformers' own layer: a graph a step (Dynamo guards on its int length)"
    assert patched == original


def _reset_and_cropped(layer_class: type) -> list[list[float]]:
    """A static sliding-window layer on neuron (window 4): decoded past its window, reset and decoded again; then a
    croppable one (cache 4) cropped by two tokens and decoded again. Its length, mask offset and transformers'
    ``cumulative_length`` after each step, eagerly."""
    import torch

    def state(layer: object) -> list[float]:
        _, offset = layer.get_mask_sizes(1)  # type: ignore[attr-defined]
        return [float(layer.get_seq_length()), float(offset), float(layer.cumulative_length),  # type: ignore[attr-defined]
                float(layer.keys.sum())]  # type: ignore[attr-defined]

    token = torch.ones(1, 2, 1, 8, device="neuron")
    trace: list[list[float]] = []
    for max_cache_len, prompt, cut in ((8, 2, 0), (4, 2, -2)):
        layer = layer_class(max_cache_len=max_cache_len, sliding_window=4)
        for _ in range(2):
            layer.update(token.expand(1, 2, prompt, 8), token.expand(1, 2, prompt, 8))
            for index in range(max_cache_len - prompt):
                layer.update(token * index, token * index)
                trace.append(state(layer))
            if cut:
                layer.crop(cut)
            else:
                layer.reset()
            trace.append(state(layer))
    return trace


def test_a_sliding_window_reset_or_cropped_starts_again_where_transformers_does() -> None:
    """``reset()`` and ``crop()`` move the layer's tensor length with its Python one: with either reverted, the layer
    falls back to transformers' (all five apply together), so the trace is transformers' too; the check that fails
    is the tensor length read after a reset (the next prompt would otherwise start past the window)."""
    from transformers.cache_utils import StaticSlidingWindowLayer

    patched = _reset_and_cropped(StaticSlidingWindowLayer)
    with reinstalled():
        original = _reset_and_cropped(StaticSlidingWindowLayer)
    assert patched == original


@pytest.mark.parametrize("patch_id", SLIDING_WINDOW_PATCHES)
def test_each_sliding_window_patch_turned_off_brings_the_recompiles_back(patch_id: str) -> None:
    """One of the length patches reverted, the others fall back with it (a layer keeps its length in a tensor only
    where all five apply): a graph a step again. The mask patch reverted, the tensor offset breaks the graph."""
    with without(patch_id):
        graphs, breaks, _ = sliding_window_decoding()
    if patch_id.startswith("transformers.padding-mask"):
        assert breaks >= 1, (graphs, breaks)
    else:
        assert (graphs, breaks) == (6, 0)


def test_gemma2_decodes_in_one_graph_and_over_budget_without_the_patch(tmp_path: Path) -> None:
    """The matrix's graph budget on a sliding-window decoder (its window of 16 filled: a 12-token prompt, 6 and 10
    new tokens): one graph each with the patches; one a token (capped by Dynamo's recompile limit) without."""
    from hf_neuron.matrix.case.observe import watch_torch_compile
    from hf_neuron.matrix.scenarios.contract import CaseContext
    from hf_neuron.matrix.scenarios.registry import load_scenarios
    from hf_neuron.tiny.transformers.checkpoint import materialize

    watch_torch_compile()
    scenario = load_scenarios()["generate_compiled"]
    ctx = CaseContext("gemma2", "decoder", "generate_compiled", "neuron", materialize("gemma2", tmp_path / "gemma2"))
    result = scenario(ctx)
    assert result.outcome == "passed", result.message
    assert result.legs[1]["details"]["graphs_per_generation"] == {"6": 1, "10": 1}, result.legs
    with without(SLIDING_WINDOW_PATCHES[0]):
        result = scenario(ctx)
    assert result.outcome == "failed" and "recompiles as it decodes" in (result.message or ""), result.message
    assert "cumulative_length_int ==" in result.legs[1]["details"]["recompile_reasons"][0], result.legs
