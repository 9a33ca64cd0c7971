"""The scenario contract: what a scenario receives, what it returns, and how it compares with the CPU.

A scenario is a function ``def forward(ctx: CaseContext) -> ScenarioResult`` with one job. It runs its computation
on ``ctx.device`` and compares it with the same computation on the CPU, with the tolerance of
:data:`TOLERANCES` for the dtype (use :func:`compare`). It returns :meth:`ScenarioResult.passed`,
:meth:`~ScenarioResult.failed` (its check did not hold) or :meth:`~ScenarioResult.skipped` (not applicable, with a
reason); anything it raises is recorded as ``error`` with a fingerprint. The runner times it out, survives its
crashes, and, when it does not pass on the device, calls it again with ``ctx.device == "cpu"`` to learn whether
the architecture fails on the CPU alone (``cpu_outcome``): a scenario must therefore also work when ``ctx.device`` is
``"cpu"``.

Which groups run a scenario, and with which function, is its declaration's
(:mod:`hf_neuron.matrix.scenarios.registry`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.vocabulary.gaps import Gap
from hf_neuron.vocabulary.outcomes import ResultOutcome
from hf_neuron.vocabulary.records import Parity

if TYPE_CHECKING:
    import torch

__all__ = [
    "EXACT",
    "TOLERANCES",
    "CaseContext",
    "Scenario",
    "ScenarioResult",
    "Tolerance",
    "compare",
    "compare_named",
    "tolerance_for",
]


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """Largest accepted ``max |actual - expected|`` is ``atol + rtol * max |expected|``."""

    atol: float
    rtol: float

    def bound(self, expected_scale: float) -> float:
        return self.atol + self.rtol * expected_scale


#: For results that must not change at all (a model saved and loaded again on the same device).
EXACT = Tolerance(atol=0.0, rtol=0.0)

#: Parity tolerances, per dtype name, written down once. The reference device runs the CPU's kernels, so it
#: matches the CPU far more closely; these bounds are for the real device's different kernels and reductions, and
#: for the 16-bit types they are dominated by the relative term, scaled to the largest expected value: bfloat16
#: keeps 8 significant bits, so 5e-3 is about one unit in the last place there, float16 11 bits (a 1% error of
#: every linear layer's output fails bfloat16, 0.1% float32, as ``tests/test_matrix_mutation.py`` checks).
TOLERANCES: Mapping[str, Tolerance] = {
    "float32": Tolerance(atol=1e-4, rtol=1e-4),
    "float16": Tolerance(atol=1e-3, rtol=2e-3),
    "bfloat16": Tolerance(atol=1e-3, rtol=5e-3),
}


@dataclasses.dataclass(frozen=True)
class CaseContext:
    """What a scenario gets: the architecture, the device to run on, and where its tiny checkpoint is built.

    ``device`` is where this attempt runs; ``device_under_test`` is the run's device, which the CPU re-run of a
    failing case keeps, so that the re-run takes the device's code path (the same compile settings) on the CPU.
    """

    model_type: str
    group: str
    scenario: str
    device: str
    workdir: Path
    seed: int = 0
    device_under_test: str = ""

    def __post_init__(self) -> None:
        if not self.device_under_test:
            object.__setattr__(self, "device_under_test", self.device)

    @property
    def rerun_on_cpu(self) -> bool:
        """True for the CPU re-run of a case whose device under test is not the CPU."""
        return self.device == "cpu" and self.device_under_test.split(":")[0] != "cpu"

    @property
    def checkpoint(self) -> Path:
        """The architecture's tiny checkpoint directory, built on first use and shared by the run's workers.

        Workers may race to build the same architecture: the builders publish by atomic rename and never remove
        what another process may be reading. Once built, a checkpoint is used as it is for the rest of the run (the
        run's scratch directory is new, so nothing in it can be stale)."""
        from hf_neuron import tiny

        final = self.workdir / "checkpoints" / self.model_type
        return final if final.is_dir() else tiny.materialize(self.group, self.model_type, final, seed=self.seed)

    def tolerance(self, dtype: str) -> Tolerance:
        """The tolerance for ``dtype`` (``"float32"``, ``"bfloat16"``, ...)."""
        return tolerance_for(dtype)

    def on(self, device: str) -> CaseContext:
        """The same case on another device (the runner's CPU re-run uses ``ctx.on("cpu")``)."""
        return dataclasses.replace(self, device=device)


@dataclasses.dataclass(frozen=True)
class ScenarioResult:
    """What a scenario returns: its outcome, a parity measurement if it made one, a message saying why, the harness
    gap of an ``untested`` case, and scenario-specific ``details`` for the record."""

    outcome: ResultOutcome
    message: str | None = None
    parity: Parity | None = None
    gap: Gap | None = None
    details: Mapping[str, Any] | None = None

    @classmethod
    def passed(cls, parity: Parity | None = None, details: Mapping[str, Any] | None = None) -> ScenarioResult:
        return cls("passed", None, parity, details=details)

    @classmethod
    def failed(cls, message: str, parity: Parity | None = None) -> ScenarioResult:
        """The scenario ran and its check did not hold; ``message`` says which check and by how much."""
        return cls("failed", message, parity)

    @classmethod
    def skipped(cls, reason: str) -> ScenarioResult:
        """Not applicable to this model; ``reason`` is about the model (e.g. "not a mixture-of-experts model")."""
        return cls("skipped", reason, None)

    @classmethod
    def untested(cls, reason: str, gap: Gap) -> ScenarioResult:
        """The harness cannot test this case (``gap``, one of :data:`~hf_neuron.vocabulary.gaps.GAPS`)."""
        return cls("untested", reason, None, gap=gap)

    def with_details(self, details: Mapping[str, Any]) -> ScenarioResult:
        """This result, carrying ``details``."""
        return dataclasses.replace(self, details=details)

    @property
    def parity_missed(self) -> bool:
        return self.parity is not None and not self.parity["value"] <= self.parity["tolerance"]


def tolerance_for(dtype: str) -> Tolerance:
    """The :data:`TOLERANCES` row of ``dtype`` (``"float32"``, ``"bfloat16"``, ...)."""
    try:
        return TOLERANCES[dtype]
    except KeyError:
        raise KeyError(f"no tolerance for dtype {dtype!r}; known: {', '.join(TOLERANCES)}") from None


Scenario = Callable[[CaseContext], ScenarioResult]


def _measure(actual: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> Parity | int:
    """The max abs difference against ``tolerance`` (scaled by the largest finite expected value); values equal on
    both sides count as no difference, infinities and NaNs included. A record holds finite numbers only, so where a
    value is infinite or NaN on one side and not the same on the other, the count of such values instead."""
    import torch

    reference = expected.detach().to("cpu", torch.float64)
    computed = actual.detach().to("cpu", torch.float64)
    same = (computed == reference) | (computed.isnan() & reference.isnan())
    diff = torch.where(same, torch.zeros_like(reference), (computed - reference).abs())
    if not bool(diff.isfinite().all()):
        return int((~diff.isfinite()).sum())
    finite = reference[reference.isfinite()].abs()
    scale = finite.max().item() if finite.numel() else 0.0
    return Parity(metric="max_abs_diff", value=float(diff.max().item()) if diff.numel() else 0.0,
                  tolerance=tolerance.bound(scale))


def _tolerance_of(expected: torch.Tensor, tolerance: Tolerance | None) -> tuple[Tolerance, str]:
    """The bound to apply and its name: ``tolerance`` if given, else exact for integers and booleans, else the
    :data:`TOLERANCES` row of the dtype."""
    dtype = str(expected.dtype).removeprefix("torch.")
    if tolerance is None and not (expected.is_floating_point() or expected.is_complex()):
        tolerance = EXACT
    if tolerance is None:
        return tolerance_for(dtype), dtype
    if tolerance == EXACT:
        return tolerance, "exact"
    named = [name for name, row in TOLERANCES.items() if row == tolerance]
    return tolerance, named[0] if named else "given tolerance"


def _elsewhere(actual: torch.Tensor, device: str | None, what: str) -> ScenarioResult | None:
    """Failed when ``actual`` is not on the type of ``device`` (a scenario that silently ran on the CPU)."""
    if device is None or actual.device.type == device.split(":")[0]:
        return None
    return ScenarioResult.failed(f"{what} were computed on {actual.device}, not on {device}")


def compare(
    actual: torch.Tensor, expected: torch.Tensor, what: str, tolerance: Tolerance | None = None,
    reference: str = "the CPU's", *, device: str | None = None,
) -> ScenarioResult:
    """Passed when ``actual`` (on ``device``, when given) is within ``tolerance`` (default: the :data:`TOLERANCES`
    row of ``expected``'s dtype; exact for integer and boolean tensors) of ``expected``; the parity is the max abs
    difference. ``reference`` names where ``expected`` comes from, for the message."""
    if (elsewhere := _elsewhere(actual, device, what)) is not None:
        return elsewhere
    if tuple(actual.shape) != tuple(expected.shape):
        return ScenarioResult.failed(f"{what} have shape {tuple(actual.shape)}, {reference} {tuple(expected.shape)}")
    bound, name = _tolerance_of(expected, tolerance)
    parity = _measure(actual, expected, bound)
    if isinstance(parity, int):
        return ScenarioResult.failed(f"{what}: {parity} values are infinite or NaN where {reference} are not the same")
    result = ScenarioResult.passed(parity)
    if result.parity_missed:
        return ScenarioResult.failed(
            f"{what} differ from {reference}: max abs diff {parity['value']:.3g} > tolerance "
            f"{parity['tolerance']:.3g} ({name})",
            parity,
        )
    return result


def compare_named(
    actual: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor], what: str,
    tolerance: Tolerance | None = None, reference: str = "the CPU's", *, device: str | None = None,
) -> ScenarioResult:
    """:func:`compare` for each name of ``expected``; the result of the worst one (by difference / tolerance),
    named in the message. A name in only one of the two fails."""
    missing, extra = sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected))
    if missing:
        return ScenarioResult.failed(f"{what}: {len(missing)} missing on the device, e.g. {', '.join(missing[:3])}")
    if extra:
        return ScenarioResult.failed(f"{what}: {len(extra)} on the device only, e.g. {', '.join(extra[:3])}")
    results = {name: compare(actual[name], expected[name], f"{what} {name}", tolerance, reference, device=device)
               for name in expected}
    if not results:
        return ScenarioResult.passed()

    def badness(result: ScenarioResult) -> float:
        if result.parity is None:  # a shape mismatch
            return float("inf")
        value, bound = result.parity["value"], result.parity["tolerance"]
        return value / bound if bound > 0 else (0.0 if value == 0 else float("inf"))

    return max(results.values(), key=badness)
