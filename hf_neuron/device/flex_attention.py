"""torch's FlexAttention on the reference device, as the released TorchNeuron runs it (rule ``flex-attention`` of
:mod:`hf_neuron.device.trainium_rules`, switch ``HF_NEURON_EMULATOR_FLEX_ATTENTION``).

torch's ``flex_attention`` refuses tensors of any device outside its list (CUDA, CPU, XPU, HPU, MPS): "FlexAttention is
only supported on ...". The pre-release TorchNeuron tree left that check to the user to patch; the 2.34 release notes
say FlexAttention runs on Neuron (faster, with more masks). With the switch at ``device`` (2.33 and later, the
default), the check accepts a neuron query, as it must for FlexAttention to run there; the attention itself then runs
as torch computes it for any device: eagerly its dense reference (the full scores matrix, ``score_mod`` applied, the
block mask's ``mask_mod`` as -inf, softmax), compiled with the ``neuron`` backend (selected by itself on the device)
the captured flex-attention operator, computed the same dense way, which is what the pre-release tree's compiler pass
lowered it to. ``refused`` (the pre-release tree) leaves torch's check as it is.

The switch is read once, when torch's module is first imported in a device process (as every setting of the device
is read once), so that Dynamo, which traces the check inside a compiled ``flex_attention``, sees no settings lookup.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

__all__ = ["MODULE", "accept_neuron", "register", "register_when_flex_attention_loads"]

#: torch's module that defines ``flex_attention`` and its device check.
MODULE = "torch.nn.attention.flex_attention"
_CHECK = "_validate_device"


def accept_neuron(validate: Callable[..., Any]) -> Callable[..., Any]:
    """torch's device check of ``flex_attention`` with a neuron query accepted; any other device checked as before."""

    @functools.wraps(validate)
    def _validate_device(query: Any, key: Any, value: Any) -> None:
        if query.device.type != "neuron":
            validate(query, key, value)

    _validate_device._accepts_neuron = True  # type: ignore[attr-defined]
    return _validate_device


def register(module: types.ModuleType) -> None:
    """Have torch's ``flex_attention`` accept neuron tensors when the switch says the device runs it; idempotent."""
    from hf_neuron import settings

    check = getattr(module, _CHECK, None)
    if (check is not None and not getattr(check, "_accepts_neuron", False)
            and settings.read("HF_NEURON_EMULATOR_FLEX_ATTENTION") == "device"):
        setattr(module, _CHECK, accept_neuron(check))


def register_when_flex_attention_loads() -> None:
    """Register now if torch's module is loaded, else right after it is first imported."""
    from hf_neuron import import_hooks

    import_hooks.when_imported(MODULE, register)
