"""The scenario set the matrix runs by default (``SCENARIOS``, in run order), for every catalog group it covers.

Each scenario follows :mod:`hf_neuron.matrix.scenarios.contract`: one job, the device compared with the CPU, torch
and the Hugging Face libraries imported inside the functions. Transformers models — text (groups ``decoder`` and
``encoder-decoder``) and vision-language (``image-text``) — run every scenario with the same bodies
(:mod:`~hf_neuron.matrix.scenarios.text`, :mod:`~hf_neuron.matrix.scenarios.training`,
:mod:`~hf_neuron.matrix.scenarios.ddp`), their differences routed through the shared helpers of
:mod:`~hf_neuron.matrix.scenarios.text_models` (auto class, inputs, LoRA targets); diffusion backbones run
``forward`` and ``generate`` (:mod:`~hf_neuron.matrix.scenarios.diffusion`). Add a scenario by writing its function
and listing it here under its name from :data:`~hf_neuron.matrix.records.SCENARIO_NAMES`.
"""

from __future__ import annotations

from hf_neuron.compat.catalog import TRANSFORMERS_GROUPS
from hf_neuron.matrix.scenarios import ddp, diffusion, text, training
from hf_neuron.matrix.scenarios.contract import PerGroup, Scenario

__all__ = ["SCENARIOS"]


def _text(scenario: Scenario, requires: str | None = None) -> PerGroup:
    return PerGroup(dict.fromkeys(TRANSFORMERS_GROUPS, scenario), requires)


SCENARIOS: dict[str, Scenario] = {
    "load": _text(text.load),
    "forward": PerGroup({**_text(text.forward).implementations, "diffusion": diffusion.forward}),
    "generate": PerGroup({**_text(text.generate).implementations,
                          "diffusion": diffusion.generate}),
    "train": _text(training.train),
    "lora": _text(training.lora),
    "bf16": _text(text.bf16),
    "compile": _text(text.compile_forward),
    "save": _text(text.save),
    "ddp": _text(ddp.ddp),
    "sdpa": _text(text.sdpa, requires="sdpa"),
    "flex_attention": _text(text.flex_attention, requires="flex-attention"),
    "generate_compiled": _text(text.generate_compiled),
    "train_aux_loss": _text(training.train_aux_loss, requires="router-logits"),
}
