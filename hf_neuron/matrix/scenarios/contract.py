"""The scenario contract: what a scenario receives, what it returns, and how it compares with the CPU.

A scenario is a function ``def forward(ctx: CaseContext) -> ScenarioResult`` with one job. It runs its computation
on ``ctx.device`` and compares it with the same computation on the CPU, with the tolerance of
:data:`TOLERANCES` for the dtype (use :func:`compare`). It returns :meth:`ScenarioResult.passed`,
:meth:`~ScenarioResult.failed` (its check did not hold) or :meth:`~ScenarioResult.skipped` (not applicable, with a
reason); anything it raises is recorded as ``error`` with a fingerprint. The runner times it out, survives its
crashes, and, when it does not pass on the device, calls it again with ``ctx.device == "cpu"`` to learn whether
the architecture fails on the CPU alone (``cpu_outcome``): a scenario must therefore also work when ``ctx.device`` is
``"cpu"``.

A model that draws random numbers in the computation compared (a sampled latent, a vocoder's noise, a flow-matching
head's) cannot be held to the CPU: the neuron device draws from its own generator, so a failed comparison of such a
computation says nothing about the device. :func:`unless_random` makes such a failure ``untested`` (gap ``checks``)
when the CPU's result moves with nothing but its seed; every scenario whose comparison a draw can move applies it.

Which groups run a scenario, and with which function, is its declaration's
(:mod:`hf_neuron.matrix.scenarios.registry`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron.vocabulary.gaps import Gap
from hf_neuron.vocabulary.outcomes import ResultOutcome
from hf_neuron.vocabulary.records import DEVICE_STEPS, Leg, Parity

if TYPE_CHECKING:
    import torch

    from hf_neuron.checkpoint.slice import SliceRequest

__all__ = [
    "ACCURACY_RATIOS",
    "EXACT",
    "TOLERANCES",
    "VISIBLE_CPU_ERROR",
    "CaseContext",
    "Scenario",
    "ScenarioResult",
    "Tolerance",
    "as_accurate",
    "beyond_tolerance",
    "compare",
    "compare_named",
    "mask_limit",
    "measure",
    "tolerance_for",
    "unless_random",
    "worst_of",
]


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """An element passes when ``|actual - expected| <= atol + rtol * |expected|`` (``torch.testing.assert_close``'s
    rule), each element against its own expected value: a large value elsewhere in the tensor loosens nothing."""

    atol: float
    rtol: float

    def bound(self, expected: float) -> float:
        """The largest difference accepted for an element whose expected value is ``expected``."""
        return self.atol + self.rtol * abs(expected)


#: For results that must not change at all (a model saved and loaded again on the same device).
EXACT = Tolerance(atol=0.0, rtol=0.0)

#: Parity tolerances, per dtype name, written down once. The reference device runs the CPU's kernels, so it
#: matches the CPU far more closely; these bounds are for the real device's different kernels and reductions. Each
#: element is held to its own bound, so for the 16-bit types the relative term must cover a rounding of the element
#: itself: bfloat16 keeps 8 significant bits, one unit in the last place is 2**-8 to 2**-7 of a value, and 1.6e-2
#: (``torch.testing``'s bfloat16 default) is about two; float16 keeps 11. A 1% error of every linear layer's output
#: still fails bfloat16, 0.1% float32, as ``tests/test_matrix_mutation.py`` checks.
TOLERANCES: Mapping[str, Tolerance] = {
    "float32": Tolerance(atol=1e-4, rtol=1e-4),
    "float16": Tolerance(atol=1e-3, rtol=2e-3),
    "bfloat16": Tolerance(atol=1e-3, rtol=1.6e-2),
}


@dataclasses.dataclass(frozen=True)
class CaseContext:
    """What a scenario gets: the architecture, the device to run on, and where its tiny checkpoint is built.

    ``device`` is where this attempt runs; ``device_under_test`` is the run's device, which the CPU re-run of a
    failing case keeps, so that the re-run takes the device's code path (the same compile settings) on the CPU.
    ``slice_request`` is set for a case of a checkpoint's real-width slice: its checkpoint is that slice.
    """

    model_type: str
    group: str
    scenario: str
    device: str
    workdir: Path
    seed: int = 0
    device_under_test: str = ""
    slice_request: SliceRequest | None = None

    def __post_init__(self) -> None:
        if not self.device_under_test:
            object.__setattr__(self, "device_under_test", self.device)

    @property
    def rerun_on_cpu(self) -> bool:
        """True for the CPU re-run of a case whose device under test is not the CPU."""
        return self.device == "cpu" and self.device_under_test.split(":")[0] != "cpu"

    @property
    def checkpoint(self) -> Path:
        """The architecture's tiny checkpoint directory (a checkpoint case's: its real-width slice), built on first use
        and shared by the run's workers.

        Workers may race to build the same architecture: the builders publish by atomic rename and never remove
        what another process may be reading. Once built, a checkpoint is used as it is for the rest of the run (the
        run's scratch directory is new, so nothing in it can be stale)."""
        from hf_neuron import tiny

        if self.slice_request is not None:
            from hf_neuron.checkpoint.facts import SLICES, prepare

            return prepare(self.slice_request).materialize(self.workdir / SLICES, self.seed)
        final = self.workdir / "checkpoints" / self.model_type
        return final if final.is_dir() else tiny.materialize(self.group, self.model_type, final, seed=self.seed)

    @property
    def scratch_path(self) -> Path:
        """This case's own directory for what it writes on its device (a saved model, a trainer's output, its ranks'
        reports), under the run's scratch directory: named by scenario, model (or checkpoint) and device type, never
        at random, so that an error naming a file there reads the same on the device and in the CPU re-run (the two
        fingerprint the same, the device name being normalised). No two workers run one case at once."""
        import torch

        from hf_neuron.checkpoint.facts import slice_directory

        model = self.model_type if self.slice_request is None else slice_directory(Path(), self.slice_request.id).name
        return self.workdir / "cases" / self.scenario / model / torch.device(self.device).type

    @contextlib.contextmanager
    def scratch(self) -> Iterator[Path]:
        """:attr:`scratch_path`, empty, removed when the block ends."""
        path = self.scratch_path
        shutil.rmtree(path, ignore_errors=True)  # what a case killed on its time limit left
        path.mkdir(parents=True)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def tolerance(self, dtype: str) -> Tolerance:
        """The tolerance for ``dtype`` (``"float32"``, ``"bfloat16"``, ...)."""
        return tolerance_for(dtype)

    def on(self, device: str) -> CaseContext:
        """The same case on another device (the runner's CPU re-run uses ``ctx.on("cpu")``)."""
        return dataclasses.replace(self, device=device)


@dataclasses.dataclass(frozen=True)
class ScenarioResult:
    """What a scenario returns: its outcome, a parity measurement if it made one, a message saying why, the harness
    gap of an ``untested`` case, scenario-specific ``details`` for the record, and the ``legs`` it is made of
    (:meth:`of_legs`)."""

    outcome: ResultOutcome
    message: str | None = None
    parity: Parity | None = None
    gap: Gap | None = None
    details: Mapping[str, Any] | None = None
    legs: tuple[Leg, ...] = ()

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

    @classmethod
    def of_legs(cls, legs: Sequence[tuple[str, ScenarioResult]]) -> ScenarioResult:
        """The result of a case made of ``legs`` (name, result), each applying or not on its own: the first failed
        leg's result, else the first untested one's; skipped (with every leg's reason) only when no leg applies;
        else passed with the worst parity of the legs. The result lists every leg, and the steps its legs ran on the
        device (:data:`~hf_neuron.vocabulary.records.DEVICE_STEPS`, where they say)."""
        listed = tuple(Leg(name=name, outcome=result.outcome, reason=result.message, parity=result.parity,
                           details=None if result.details is None else dict(result.details))
                       for name, result in legs)
        results = [result for _, result in legs]
        steps = [details[DEVICE_STEPS] for details in (result.details or {} for result in results)
                 if DEVICE_STEPS in details]
        counted = {DEVICE_STEPS: sum(steps)} if steps else {}
        for outcome in ("failed", "untested"):
            found = next((result for result in results if result.outcome == outcome), None)
            if found is not None:
                chosen = dataclasses.replace(found, legs=listed)
                return chosen.adding_details(counted) if counted else chosen
        applied = [result for result in results if result.outcome == "passed"]
        if not applied:
            return cls("skipped", "; ".join(f"{name}: {result.message}" for name, result in legs), legs=listed,
                       details=counted or None)
        return cls("passed", parity=max((result.parity for result in applied if result.parity is not None),
                                        key=_share, default=None), legs=listed, details=counted or None)

    def with_details(self, details: Mapping[str, Any]) -> ScenarioResult:
        """This result, carrying ``details``."""
        return dataclasses.replace(self, details=details)

    def adding_details(self, details: Mapping[str, Any]) -> ScenarioResult:
        """This result, carrying ``details`` beside those it has."""
        return dataclasses.replace(self, details={**(self.details or {}), **details})

    @property
    def parity_missed(self) -> bool:
        return self.parity is not None and not self.parity["value"] <= self.parity["tolerance"]


def _share(parity: Parity) -> float:
    """How much of its tolerance a parity used (above 1: missed)."""
    value, bound = parity["value"], parity["tolerance"]
    return value / bound if bound > 0 else (0.0 if value == 0 else float("inf"))


def tolerance_for(dtype: str) -> Tolerance:
    """The :data:`TOLERANCES` row of ``dtype`` (``"float32"``, ``"bfloat16"``, ...)."""
    try:
        return TOLERANCES[dtype]
    except KeyError:
        raise KeyError(f"no tolerance for dtype {dtype!r}; known: {', '.join(TOLERANCES)}") from None


Scenario = Callable[[CaseContext], ScenarioResult]


@dataclasses.dataclass(frozen=True)
class Measured:
    """An element-by-element comparison: of ``positions`` elements, ``compared`` were held to the tolerance (finite
    on the CPU, below half the dtype's largest value); the others (masks near the dtype's limit, infinities, NaN)
    had to be equal, and ``unequal`` were not. Of the compared ones, ``not_finite`` are infinite or NaN on the device
    and ``outside`` broke the tolerance. ``diff``, ``bound`` and ``expected`` are those of the element whose
    difference took the largest share of its bound; ``max_abs_diff`` is the largest finite difference."""

    positions: int
    compared: int
    unequal: int
    not_finite: int
    outside: int
    diff: float
    bound: float
    expected: float
    max_abs_diff: float

    def parity(self) -> Parity:
        """The record's parity: the worst element's difference and its bound, with the counts behind them."""
        return Parity(metric="max_abs_diff_over_bound", value=self.diff, tolerance=self.bound,
                      compared=self.compared, positions=self.positions)


def mask_limit(tensor: torch.Tensor) -> float:
    """Half the largest value of ``tensor``'s dtype (infinity for integers): a value at or beyond it is a mask (a
    model's ``finfo.min`` in place of a score it rules out), never held to a tolerance or an accuracy."""
    import torch

    return torch.finfo(tensor.dtype).max / 2 if tensor.is_floating_point() else float("inf")


def _held(values: torch.Tensor, limit: float) -> torch.Tensor:
    """Where ``values`` are held to a tolerance or an accuracy: finite and below ``limit`` (:func:`mask_limit`); the
    rest (masks, infinities, NaN) must be equal."""
    return values.isfinite() & (values.abs() < limit)


def _same(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Where ``actual`` equals ``expected``, NaN counting as equal to NaN."""
    return (actual == expected) | (actual.isnan() & expected.isnan())


def measure(actual: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> Measured:
    """Compare ``actual`` with ``expected`` element by element under ``tolerance`` (the same shape; complex values
    as their real and imaginary parts), in float64.

    Where every element of both is finite and held to the tolerance (the usual case), it takes a path of few passes
    over the values (a real checkpoint's gradients hold hundreds of millions), and none at all in float64 where the
    two are equal bit for bit (the reference device runs the CPU's kernels); anywhere else (masks, infinities, NaN, a
    zero bound) the path that tells each element's kind apart. All give the same result."""
    import torch

    if expected.is_complex():
        actual, expected = torch.view_as_real(actual.resolve_conj()), torch.view_as_real(expected.resolve_conj())
    limit = mask_limit(expected)
    if (same := _equal(actual, expected, tolerance, limit)) is not None:
        return same
    reference = expected.detach().to("cpu", torch.float64, copy=True).reshape(-1)
    computed = actual.detach().to("cpu", torch.float64, copy=True).reshape(-1)
    if not reference.numel():
        return Measured(0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0)
    largest = float(torch.linalg.vector_norm(reference, float("inf")))
    bounded = tolerance.atol > 0 or tolerance == EXACT
    if bounded and largest < limit and math.isfinite(float(torch.linalg.vector_norm(computed, float("inf")))):
        return _measure_held(computed, reference, tolerance)
    return _measure_everywhere(computed, reference, tolerance, limit)


def _equal(actual: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance, limit: float) -> Measured | None:
    """:func:`measure` of two tensors of one dtype and shape that are equal bit for bit, every element finite and held
    (every difference zero: the worst element is the first, as ``argmax`` of zeros says); None otherwise."""
    import torch

    if actual.dtype != expected.dtype or actual.shape != expected.shape or not expected.numel():
        return None
    reference = expected.detach().to("cpu").reshape(-1)
    if not torch.equal(actual.detach().to("cpu").reshape(-1), reference):
        return None
    largest = float(torch.linalg.vector_norm(reference.to(torch.float64), float("inf")))
    if not largest < limit or not (tolerance.atol > 0 or tolerance == EXACT):
        return None
    first = float(reference[0])
    bound = 0.0 if tolerance == EXACT else tolerance.atol + tolerance.rtol * abs(first)
    positions = reference.numel()
    return Measured(positions, positions, 0, 0, 0, 0.0, bound, first, 0.0)


def _measure_held(computed: torch.Tensor, reference: torch.Tensor, tolerance: Tolerance) -> Measured:
    """:func:`measure` where every element is finite and held, and every bound positive (or every bound zero:
    exact). ``computed`` is a float64 copy, overwritten; ``reference`` a float64 copy."""
    import torch

    positions = reference.numel()
    diff = computed.sub_(reference).abs_()
    if tolerance == EXACT:  # every bound is zero: the worst element is the largest difference
        worst = int(diff.argmax())
        largest = float(diff[worst])
        return Measured(positions, positions, 0, 0, int((diff > 0).sum()), largest, 0.0, float(reference[worst]),
                        largest)
    bound = reference.abs().mul_(tolerance.rtol).add_(tolerance.atol)
    outside = int((diff > bound).sum())
    max_abs_diff = float(diff.max())
    worst = int(torch.div(diff, bound).argmax())
    return Measured(positions, positions, 0, 0, outside, float(diff[worst]), float(bound[worst]),
                    float(reference[worst]), max_abs_diff)


def _measure_everywhere(computed: torch.Tensor, reference: torch.Tensor, tolerance: Tolerance,
                        limit: float) -> Measured:
    """:func:`measure` telling each element's kind apart: held to the tolerance (finite, below ``limit``) or to be
    equal (masks, infinities, NaN)."""
    import torch

    held = _held(reference, limit)
    same = _same(computed, reference)
    finite = held & computed.isfinite()
    diff = torch.where(finite, computed - reference, torch.zeros_like(reference)).abs()
    bound = tolerance.atol + tolerance.rtol * torch.where(held, reference, torch.zeros_like(reference)).abs()
    share = torch.where(bound > 0, diff / bound.clamp_min(torch.finfo(torch.float64).tiny),
                        torch.where(diff > 0, float("inf"), 0.0))
    share = torch.where(finite, share, torch.zeros_like(share))
    if bool(share.isinf().any()):  # exact bounds broken: the largest difference among them
        share = torch.where(share.isinf(), diff, torch.zeros_like(diff))
    compared = int(held.sum())
    worst = int(share.argmax()) if compared else 0
    return Measured(
        positions=reference.numel(), compared=compared, unequal=int((~held & ~same).sum()),
        not_finite=int((held & ~computed.isfinite()).sum()), outside=int((finite & (diff > bound)).sum()),
        diff=float(diff[worst]) if compared else 0.0, bound=float(bound[worst]) if compared else 0.0,
        expected=float(reference[worst]) if compared else 0.0,
        max_abs_diff=float(diff.max()) if compared else 0.0,
    )


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
    """Passed when ``actual`` (on ``device``, when given) agrees with ``expected`` element by element: within
    ``tolerance`` (default: the :data:`TOLERANCES` row of ``expected``'s dtype; exact for integer and boolean
    tensors) where ``expected`` is finite and below half its dtype's largest value, equal everywhere else (masks,
    infinities, NaN). A comparison left with nothing to hold to the tolerance, or of empty tensors, is ``untested``
    (gap ``checks``): it checked nothing. ``reference`` names where ``expected`` comes from, for the message."""
    if (elsewhere := _elsewhere(actual, device, what)) is not None:
        return elsewhere
    if tuple(actual.shape) != tuple(expected.shape):
        return ScenarioResult.failed(f"{what} have shape {tuple(actual.shape)}, {reference} {tuple(expected.shape)}")
    if expected.numel() == 0:
        return ScenarioResult.untested(f"{what}: {reference} are empty (shape {tuple(expected.shape)}): no value to "
                                       "compare", "checks")
    bound, name = _tolerance_of(expected, tolerance)
    found = measure(actual, expected, bound)
    if found.unequal:
        return ScenarioResult.failed(
            f"{what}: {found.unequal} of the {found.positions - found.compared} masked, infinite or NaN values of "
            f"{reference} differ on the device")
    if found.compared == 0 and found.positions and bound != EXACT:
        return ScenarioResult.untested(
            f"{what}: every one of the {found.positions} values of {reference} is a mask near the dtype's limit, "
            "infinite or NaN: no value to hold to the tolerance", "checks")
    if found.not_finite:
        return ScenarioResult.failed(
            f"{what}: {found.not_finite} values are infinite or NaN on the device where {reference} are finite")
    parity = found.parity()
    if found.outside and bound == EXACT:
        return ScenarioResult.failed(
            f"{what} differ from {reference}: {found.outside} of {found.compared} values differ (exact); the largest "
            f"difference {found.diff:.3g} (expected {found.expected:.3g})", parity)
    if found.outside:
        return ScenarioResult.failed(
            f"{what} differ from {reference}: {found.outside} of {found.compared} values beyond |a - e| <= "
            f"{bound.atol:g} + {bound.rtol:g}·|e| ({name}); the worst {found.diff:.3g} where {found.bound:.3g} is "
            f"allowed (expected {found.expected:.3g}); max abs diff {found.max_abs_diff:.3g}",
            parity,
        )
    return ScenarioResult.passed(parity)


#: How much less accurate than the CPU's a 16-bit result may be, measured against the CPU's float32 computation
#: (:func:`as_accurate`): the root mean square of its error, and its largest, each as a ratio to the CPU's. Measured on
#: the reference device's trainium dispatch (its fused attention and composite kernels beside the CPU's; falcon,
#: moonshine, ovis2, speecht5 and llama tiny models in bfloat16): 1.00-1.05 and 1.00-1.09; with every linear layer's
#: output 0.5% off, 1.33-1.83 and 1.37-1.93; 1% off, 1.79-2.86 and 1.70-3.30.
ACCURACY_RATIOS: Mapping[str, float] = {"root mean square": 1.25, "largest": 1.5}

#: The CPU's own 16-bit error (root mean square, relative to its float32 result's) up to which :data:`ACCURACY_RATIOS`
#: can see a device's error: at 1%, a device error of 0.75% of the output fails the root-mean-square ratio. A tiny
#: model further from float32 than that in 16 bits (a random Flux backbone is 7.4% away, a Kandinsky 3 UNet 48%;
#: the text models 0.6-0.8%) cannot tell a device's error from rounding: its 16-bit comparison is untested.
VISIBLE_CPU_ERROR = 0.01


def beyond_tolerance(result: ScenarioResult) -> bool:
    """Whether ``result`` failed an element-by-element comparison within tolerance (not a shape, a mask, a NaN)."""
    return result.outcome == "failed" and result.parity is not None and \
        result.parity["metric"] == "max_abs_diff_over_bound"


def as_accurate(actual: torch.Tensor, expected: torch.Tensor, exact: torch.Tensor, what: str) -> ScenarioResult:
    """A 16-bit ``actual`` that differs from the CPU's 16-bit ``expected`` beyond :data:`TOLERANCES` held to what
    its dtype can do instead: passed when it is as close to ``exact`` (the CPU's float32 computation of the same
    inputs) as ``expected`` is, within :data:`ACCURACY_RATIOS`, over the elements :func:`compare` holds to a
    tolerance in both CPU results (finite, below :func:`mask_limit`); failed where a mask, infinity or NaN of
    ``expected`` differs on the device, where the device is not finite but ``expected`` is, where it is less
    accurate, or where the CPU's own error is nothing (then any difference is the device's); untested (gap
    ``checks``) where the CPU's own error is more than :data:`VISIBLE_CPU_ERROR` (no device error could be seen). Two
    kernels of equal accuracy differ by a unit in the last place of their intermediate values, which cancellation
    turns into differences far beyond an element's own bound at small outputs. A mask measures no accuracy: the
    16-bit ``finfo.min`` is 1.3e36 from float32's, which would make every ratio 1."""
    a, e, r = (tensor.detach().cpu().double() for tensor in (actual, expected, exact))
    if not (a.shape == e.shape == r.shape):
        return ScenarioResult.failed(f"{what}: shapes {tuple(a.shape)}, {tuple(e.shape)}, float32 {tuple(r.shape)}")
    masked = ~_held(e, mask_limit(expected))
    unequal = int((masked & ~_same(a, e)).sum())
    if unequal:
        return ScenarioResult.failed(f"{what}: {unequal} of the {int(masked.sum())} masked, infinite or NaN values of "
                                     "the CPU's differ on the device")
    if not_finite := int((~masked & ~a.isfinite()).sum()):
        return ScenarioResult.failed(f"{what}: {not_finite} values are infinite or NaN on the device where the CPU's "
                                     "are finite")
    held = ~masked & _held(r, mask_limit(exact))
    mine, cpus = (a - r).abs()[held], (e - r).abs()[held]
    if not cpus.numel() or float(cpus.max()) == 0.0:
        return ScenarioResult.failed(f"{what} differ from the CPU's, which equal its float32 computation: no "
                                     "accuracy of its own to hold the device to")
    scale = float(r[held].pow(2).mean().sqrt())
    own = float(cpus.pow(2).mean().sqrt()) / scale if scale else float("inf")
    if own > VISIBLE_CPU_ERROR:
        return ScenarioResult.untested(
            f"{what} differ from the CPU's beyond the element-by-element bound, and the CPU's own are {own:.1%} from "
            f"its float32 computation (root mean square), more than {VISIBLE_CPU_ERROR:.0%}: this model's 16-bit "
            "result cannot tell a device's error from rounding", "checks")
    ratios = {"root mean square": float(mine.pow(2).mean().sqrt() / cpus.pow(2).mean().sqrt()),
              "largest": float(mine.max() / cpus.max())}
    share = max(ratios[name] / bound for name, bound in ACCURACY_RATIOS.items())
    parity = Parity(metric="error_ratio_to_the_cpus_over_bound", value=share, tolerance=1.0,
                    compared=int(held.sum()), positions=a.numel())
    said = ", ".join(f"{name} {ratios[name]:.3g} (at most {bound:g})" for name, bound in ACCURACY_RATIOS.items())
    if share > 1.0:
        return ScenarioResult.failed(f"{what} differ from the CPU's and are less accurate than the CPU's against its "
                                     f"float32 computation: error ratios {said}", parity)
    return ScenarioResult.passed(parity, details={"held_to_float32": said})


def compare_named(
    actual: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor], what: str,
    tolerance: Tolerance | None = None, reference: str = "the CPU's", *, device: str | None = None,
    tolerances: Mapping[str, Tolerance] | None = None,
) -> ScenarioResult:
    """:func:`compare` for each name of ``expected``, tensor by tensor (one tensor's values loosen no other's check);
    the result of the worst one (by difference / bound), named in the message. A name in only one of the two fails;
    a tensor with nothing to hold to the tolerance counts only when no tensor has (then the result is
    ``untested``, as it is when there is no tensor at all). A name's own entry of ``tolerances``, where it has one,
    is its tolerance in place of ``tolerance``."""
    missing, extra = sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected))
    if missing:
        return ScenarioResult.failed(f"{what}: {len(missing)} missing on the device, e.g. {', '.join(missing[:3])}")
    if extra:
        return ScenarioResult.failed(f"{what}: {len(extra)} on the device only, e.g. {', '.join(extra[:3])}")
    own = tolerances or {}
    results = {name: compare(actual[name], expected[name], f"{what} {name}", own.get(name, tolerance), reference,
                             device=device)
               for name in expected}
    if not results:
        return ScenarioResult.untested(f"{what}: {reference} has no tensor: nothing to compare", "checks")
    return worst_of(list(results.values()))


def worst_of(results: Sequence[ScenarioResult]) -> ScenarioResult:
    """The result that counts for comparisons that must all hold: the one that used most of its tolerance (a failure
    before any pass), leaving out those that had nothing to compare unless none had (then the first of them)."""
    checked = [result for result in results if result.outcome != "untested"]
    if not checked:  # not one comparison had a value to hold to the tolerance
        return results[0]
    return max(checked, key=lambda result: (result.outcome != "passed",
                                            float("inf") if result.parity is None else _share(result.parity)))


def unless_random(result: ScenarioResult, reseeded: Callable[[int], ScenarioResult], seed: int, what: str,
                  consequence: str) -> ScenarioResult:
    """``result`` (a comparison with the CPU's computation under ``seed``), except that a failed one is ``untested``
    (gap ``checks``) when the CPU's computation moves when nothing but its seed changes: ``reseeded(other)`` compares
    the CPU's computation seeded ``other`` with the one seeded ``seed``, and anything but a pass means the model draws
    random numbers in ``what`` (the message says what moved and, with ``consequence``, why the comparison cannot
    hold). The check runs only when the comparison fails, so it costs a passing case nothing; a deterministic
    computation keeps its failure."""
    if result.outcome != "failed":
        return result
    moved = reseeded(seed + 1)
    if moved.outcome == "passed":
        return result
    return ScenarioResult.untested(f"the model's {what} draws random numbers ({moved.message}): {consequence}",
                                   "checks")
