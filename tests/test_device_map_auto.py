"""`device_map="auto"` places on neuron using `torch.neuron.mem_get_info`; `max_memory` takes neuron keys."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from _helpers_patches import run

pytestmark = pytest.mark.usefixtures("neuron")




def test_device_map_auto_places_on_neuron_like_the_cpu(tiny_llama: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_llama, device_map="auto")
    cpu = AutoModelForCausalLM.from_pretrained(tiny_llama)
    assert set(model.hf_device_map.values()) <= {0, 1} and model.hf_device_map["model.embed_tokens"] == 0
    assert {p.device.type for p in model.parameters()} == {"neuron"}
    ids = torch.arange(1, 17)[None]
    with torch.no_grad():
        assert (model(ids.to("neuron")).logits.cpu() - cpu(ids).logits).abs().max().item() < 1e-5


def test_max_memory_is_the_free_device_memory() -> None:
    code = """
        import torch
        from accelerate.utils import get_max_memory
        held = torch.empty(2**20, device="neuron:1")
        memory = get_max_memory()
        print(sorted(k for k in memory if k != "cpu"), memory[0], memory[1], memory["cpu"] > 0)
    """
    result = run(code, env={"HF_NEURON_EMULATOR_DEVICES": "2", "HF_NEURON_EMULATOR_MEMORY_GB": "1"})
    assert result.stdout.split() == ["[0,", "1]", str(2**30), str(2**30 - 4 * 2**20), "True"]


def test_max_memory_accepts_neuron_keys() -> None:
    from accelerate.utils import get_max_memory

    assert get_max_memory({"neuron:1": "1GB", "cpu": "2GB", 0: 100}) == {0: 100, 1: 10**9, "cpu": 2 * 10**9}
    assert list(get_max_memory({"disk": 1, torch.device("neuron", 1): 5, "neuron:0": 7})) == [0, 1, "disk"]
    with pytest.raises(ValueError, match=r"Device 7 is not recognized, available devices are neuron indices 0\.\.1"):
        get_max_memory({"neuron:7": "1GB"})


def test_max_memory_keeps_an_integer_index_it_does_not_have_as_accelerate_does(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """accelerate's own tests balance memory over indices 0 and 1 on a one-device machine: kept, with a warning."""
    from accelerate.utils import get_max_memory

    with caplog.at_level("WARNING", logger="accelerate.utils.modeling"):
        assert get_max_memory({0: 100, 5: 200, "cpu": 300}) == {0: 100, 5: 200, "cpu": 300}
    assert "Device 5 is not available, available devices are [0, 1]" in caplog.text
