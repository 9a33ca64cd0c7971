"""Matrix profiles: what the device under test is asked to be, so that a verdict predicts Trainium.

On the reference device a profile is a set of its fidelity switches (``HF_NEURON_EMULATOR_*``), set for the run's
workers before they import torch. ``trainium`` (the default of every run) predicts the torch-neuronx release
``hf_neuron/device/trainium_sources.toml`` names (``predicts``): it turns on the real backend's behaviours of that
release that a CPU-kernel device would otherwise hide, the rules of :mod:`hf_neuron.device.trainium_rules` that hold
for it (64-bit computed in 32 bits, only contiguous memory formats, the Neuron compiler's rejections in
``torch.compile(backend="neuron")``, the real backend's dispatch routes, the operator log that says which operators
would fall back to the CPU), and off those that held for an older release only (random numbers drawn from the CPU's
generator: the pre-release tree's). ``cpu-parity`` is the plain parity run:
CPU semantics and kernel choices, the lenient compile contract, the operator log still on. On the real backend a
profile changes nothing: the hardware is what it is, and the records only say which profile the run asked for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, MutableMapping

from hf_neuron import settings
from hf_neuron.device.trainium_rules import profile_switches
from hf_neuron.errors import InputError
from hf_neuron.vocabulary.trainium_sources import predicted_release

__all__ = ["DEFAULT_PROFILE", "PROFILES", "Profile", "apply_profile"]


@dataclasses.dataclass(frozen=True)
class Profile:
    """A named set of reference-device switches, and what it is for."""

    name: str
    description: str
    switches: Mapping[str, str]
    #: The id of the torch-neuronx release (``trainium_sources.toml``) whose behaviours the profile's verdicts
    #: predict; None for a profile that predicts none (plain CPU parity).
    predicts: str | None = None


PROFILES: dict[str, Profile] = {
    profile.name: profile
    for profile in (
        Profile("trainium", "the real backend's documented behaviours on the reference device, as the release it "
                "predicts has them", profile_switches(predicted_release().id), predicted_release().id),
        Profile("cpu-parity", "the reference device as the CPU computes: plain parity", {
            "HF_NEURON_EMULATOR_64BIT": "exact",
            "HF_NEURON_EMULATOR_MEMORY_FORMATS": "any",
            "HF_NEURON_EMULATOR_COMPILE_CONTRACT": "lenient",
            "HF_NEURON_EMULATOR_DISPATCH": "cpu",
            "HF_NEURON_EMULATOR_RNG": "device",
            "HF_NEURON_EMULATOR_OP_LOG": "1",
        }),
    )
}
DEFAULT_PROFILE = "trainium"


def _value(variable: str, raw: str) -> object:
    return settings.read(variable, {variable: raw})


def apply_profile(name: str, environ: MutableMapping[str, str]) -> Profile:
    """Set ``name``'s switches in ``environ`` (the run's, inherited by its workers); a switch the user set to
    another value is a conflict, refused rather than overridden."""
    if name not in PROFILES:
        raise InputError(f"--profile {name!r} is not a profile: use one of {', '.join(PROFILES)}")
    profile = PROFILES[name]
    for variable, value in profile.switches.items():
        given = environ.get(variable)
        if given is not None and _value(variable, given) != _value(variable, value):
            raise InputError(
                f"{variable}={given!r} conflicts with --profile {name}, which sets {value!r}: unset it, or choose "
                f"the profile that matches ({', '.join(PROFILES)})"
            )
        environ[variable] = value
    return profile
