"""transformers' test backend for ``neuron``: ``TRANSFORMERS_TEST_BACKEND=hf_neuron.testing.transformers_backend``.

``transformers.testing_utils`` imports this module first thing (before it reads the device spec, and before any
test module is imported). Importing it checks that a neuron backend is present and hooks the :data:`ADAPTATIONS`
into imports: what transformers' own test modules need for ``neuron`` beyond the device spec. Each is a
:class:`~hf_neuron.patches.registry.Patch` of the library ``tests`` (the test tree's top package), applied by a
registry of its own right after its test module executes (the post-import hook, so a test file that copies the name
with ``from ...test_modeling_common import f`` gets the adapted one), and says why it exists and which upstream
change would make it unnecessary. One that cannot be applied (the upstream test changed) is logged and left out, its
state says why: the tests it was for then fail, visibly.
"""

from __future__ import annotations

from hf_neuron.patches import Installation, hook
from hf_neuron.patches.registry import Patch, Registry, installed_version
from hf_neuron.testing.device import require_neuron
from hf_neuron.testing.tolerance import route_tolerance_lookup

__all__ = ["ADAPTATIONS", "install", "registry"]

#: The test tree whose modules the adaptations change, and the distribution whose version the tree is of.
_TESTS, _OF = "tests", "transformers"

ADAPTATIONS: tuple[Patch, ...] = (
    Patch(
        id="tests.tolerance-row-for-neuron",
        library=_TESTS,
        module="tests.test_modeling_common",
        attribute="_test_eager_matches_sdpa_inference",
        versions=">=5.0,<6",
        reason="test_eager_matches_sdpa_inference_* choose atol/rtol with `if torch_device in ['cpu', 'cuda'] ... "
        "elif torch_device in ['hpu', 'npu', 'tpu'] ... else: atol = 1e-7`: neuron gets 1e-7 even in float16, where "
        "eager and SDPA differ by ~1e-5 on the CPU as well. On neuron the lookup uses the CPU's row (reference "
        "device) or the accelerators' row (real backend).",
        upstream_fix="tests/test_modeling_common.py: look the tolerances up by a row a device spec can name (e.g. a "
        "`TOLERANCE_DEVICE` spec attribute, or 'neuron' added to the accelerator list) instead of fixed device lists",
        replace=route_tolerance_lookup,
        needs_device=False,  # install() checked for the device
    ),
)


def registry() -> Registry:
    """A registry of the adaptations, versioned by the installed transformers (whose tag the test tree is)."""
    return Registry.from_patches(ADAPTATIONS, version_of=lambda library: installed_version(_OF),
                                 device_ready=lambda: True)


def install() -> Installation:
    """Check for a neuron device, then hook the adaptations into imports."""
    require_neuron()
    return hook(registry())


install()
