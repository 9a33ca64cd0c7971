"""transformers' test backend for ``neuron``: ``TRANSFORMERS_TEST_BACKEND=hf_neuron.testing.transformers_backend``.

``transformers.testing_utils`` imports this module first thing (before it reads the device spec, and before any
test module is imported). Importing it checks that a neuron backend is present and registers the
:data:`ADAPTATIONS`: what transformers' own test modules need for ``neuron`` beyond the device spec. Each is applied
right after its test module executes (a post-import hook, so a test file that copies the name with
``from ...test_modeling_common import f`` gets the adapted one), and says why it exists and which upstream change
would make it unnecessary. One that cannot be applied (the upstream test changed) is reported on stderr and left
out: the tests it was for then fail, visibly.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import Callable
from typing import Any

from hf_neuron.import_hooks import when_imported
from hf_neuron.testing.device import require_neuron
from hf_neuron.testing.tolerance import route_tolerance_lookup

__all__ = ["ADAPTATIONS", "Adaptation", "install"]


@dataclasses.dataclass(frozen=True)
class Adaptation:
    """One replacement of one function of one upstream test module, built from the original by ``replace``."""

    id: str
    module: str
    attribute: str
    reason: str
    upstream_fix: str
    replace: Callable[[Any], Any]

    def apply(self, module: types.ModuleType) -> None:
        """Replace the attribute in ``module``; report on stderr, and leave it, when that is impossible."""
        try:
            setattr(module, self.attribute, self.replace(getattr(module, self.attribute)))
        except (AttributeError, LookupError, OSError, SyntaxError) as exc:
            print(f"hf-neuron: test adaptation {self.id} not applied to {self.module}: {exc}", file=sys.stderr)


ADAPTATIONS: tuple[Adaptation, ...] = (
    Adaptation(
        id="tolerance-row-for-neuron",
        module="tests.test_modeling_common",
        attribute="_test_eager_matches_sdpa_inference",
        reason="test_eager_matches_sdpa_inference_* choose atol/rtol with `if torch_device in ['cpu', 'cuda'] ... "
        "elif torch_device in ['hpu', 'npu', 'tpu'] ... else: atol = 1e-7`: neuron gets 1e-7 even in float16, where "
        "eager and SDPA differ by ~1e-5 on the CPU as well. On neuron the lookup uses the CPU's row (reference "
        "device) or the accelerators' row (real backend).",
        upstream_fix="tests/test_modeling_common.py: look the tolerances up by a row a device spec can name (e.g. a "
        "`TOLERANCE_DEVICE` spec attribute, or 'neuron' added to the accelerator list) instead of fixed device lists",
        replace=route_tolerance_lookup,
    ),
)


def install() -> None:
    """Check for a neuron device, then register every adaptation's post-import hook."""
    require_neuron()
    for adaptation in ADAPTATIONS:
        when_imported(adaptation.module, adaptation.apply)


install()
