"""The scenario set the matrix runs by default (``SCENARIOS``, in run order), for every catalog group it covers.

Each scenario follows :mod:`hf_neuron.matrix.scenarios`: one job, the device compared with the CPU, torch and the
Hugging Face libraries imported inside the functions. Text models (groups ``decoder`` and ``encoder-decoder``) run
every scenario (:mod:`~hf_neuron.matrix.scenarios_text`, :mod:`~hf_neuron.matrix.scenarios_training`,
:mod:`~hf_neuron.matrix.scenario_ddp`); diffusion
backbones run ``forward`` and ``generate`` (:mod:`~hf_neuron.matrix.scenarios_diffusion`); the ``multimodal`` group
has no scenario yet, so it has no case. Add a scenario by writing its function and listing it here under its name
from :data:`~hf_neuron.matrix.scenarios.SCENARIO_NAMES`.
"""

from __future__ import annotations

from hf_neuron.matrix import scenario_ddp, scenarios_diffusion, scenarios_text, scenarios_training
from hf_neuron.matrix.scenarios import PerGroup, Scenario

__all__ = ["SCENARIOS", "TEXT_GROUPS"]

#: Catalog groups the text scenarios take: models that read and write token ids alone.
TEXT_GROUPS: tuple[str, ...] = ("decoder", "encoder-decoder")


def _text(scenario: Scenario) -> PerGroup:
    return PerGroup({group: scenario for group in TEXT_GROUPS})


SCENARIOS: dict[str, Scenario] = {
    "load": _text(scenarios_text.load),
    "forward": PerGroup({**_text(scenarios_text.forward).implementations, "diffusion": scenarios_diffusion.forward}),
    "generate": PerGroup({**_text(scenarios_text.generate).implementations,
                          "diffusion": scenarios_diffusion.generate}),
    "train": _text(scenarios_training.train),
    "lora": _text(scenarios_training.lora),
    "bf16": _text(scenarios_text.bf16),
    "compile": _text(scenarios_text.compile_forward),
    "save": _text(scenarios_text.save),
    "ddp": _text(scenario_ddp.ddp),
}
