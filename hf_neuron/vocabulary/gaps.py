"""Why the harness could not test a case (outcome ``untested``): each gap is the matrix's to close, not the model's or
neuron's, and the report lists them as "harness gaps to close"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

__all__ = ["GAPS", "GAP_MEANINGS", "Gap"]

Gap = Literal["inputs", "pipeline-recipe", "lora-targets", "tiny-build", "devices", "checks", "memory-budget"]
#: The closed set of harness gaps.
GAPS: tuple[Gap, ...] = get_args(Gap)

#: What each gap means, as the report and the reviewed data files' readers say it.
GAP_MEANINGS: Mapping[str, str] = {
    "inputs": "inputs the matrix cannot build for the model",
    "pipeline-recipe": "no pipeline recipe for the diffusion backbone",
    "lora-targets": "LoRA target modules PEFT refuses",
    "tiny-build": "the tiny model does not build",
    "devices": "fewer devices than the scenario needs",
    "checks": "scenario checks that do not fit the model",
    "memory-budget": "a checkpoint's real-width slice too big for the run's memory budget in this case (training "
                     "needs more)",
}
