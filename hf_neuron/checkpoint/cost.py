"""Price-performance of a checkpoint at full size, estimated before renting: tokens a second and US dollars a million
tokens per instance family of ``compat/hardware.toml`` (Trainium and, for comparison, GPUs), from its
:class:`~hf_neuron.checkpoint.plan.Plan`. An estimate, not a measurement; every figure says what it assumed.

The formulas (each tested against a case worked out by hand; documented in ``docs/price-performance.md``):

* **FLOPs a token** (forward): ``2 x P + 2 x W x c`` — ``P`` the parameters a token uses (the active ones of a mixture
  of experts), ``W`` the plan's attention width (keys and values of every head, summed over the attention layers),
  ``c`` the tokens it attends to (Kaplan et al. 2020, with the scores and their weighted sum both counted). A training
  step costs 3 forwards (the backward twice one); LoRA 2 (no gradient of the frozen weights).
* **time** of a piece of work on ``d`` devices: ``max(FLOPs / (d x peak x u_c), bytes / (d x bandwidth x u_m))`` —
  a device's dense BF16 peak (FP8 for FP8 weights) and memory bandwidth are its chip's shared among the chip's
  devices; ``u_c`` and ``u_m`` the assumed utilisations (:class:`Utilisation`). Never faster than either roofline.
* **prefill** of one sequence of ``seq`` tokens: every token attends to ``seq / 2`` on average; the weights are read
  once. **decode**, ``b`` sequences a step, each at ``seq`` tokens: a step reads the weights (a mixture of experts:
  at most ``b`` tokens' active parameters) and each sequence's KV cache, and computes ``b`` tokens; tokens a second are
  ``b`` over the step's time. **training** (full fine-tune, LoRA) of ``batch x seq`` tokens a step: the step reads
  the use's memory (:class:`~hf_neuron.checkpoint.plan.Memory`) once.
* **devices**: the fewest whose memory holds the use (:func:`~hf_neuron.checkpoint.instances.placement`).
* **price**: the instance's on-demand price shared among its devices, times the devices used (the rest of the
  instance runs other replicas); US dollars a million tokens: ``price an hour / (tokens a second x 3600) x 1e6``.
  A family without a sourced price has no dollar figures (None).
* **utilisation defaults**: one pair for every model and family, the mean of what the published measurements of
  ``compat/hardware.toml`` imply — a measured time to first token against the compute roofline of its prefill, a
  measured time per output token against the memory roofline of its decode step (:func:`calibration`).
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from hf_neuron.checkpoint.instances import placement
from hf_neuron.checkpoint.plan import DTYPE_BYTES, Plan
from hf_neuron.compat.hardware import Family, Hardware, Measurement, load_hardware

__all__ = ["ESTIMATES", "Calibration", "CalibrationRow", "Estimate", "Utilisation", "Work", "calibration",
           "decode_work", "estimate", "estimates", "forward_flops", "prefill_work", "seconds", "training_work",
           "usd_per_million"]

Precision = Literal["bf16", "fp8"]
#: The tokens-a-second figures of an :class:`Estimate`, each with its dollars a million tokens.
ESTIMATES = ("prefill_tokens_per_s", "decode_tokens_per_s", "decode_tokens_per_s_batch", "train_tokens_per_s",
             "lora_train_tokens_per_s")
#: Training steps cost this many forwards: full fine-tuning (forward, backward for activations and for weights) and
#: LoRA (no gradient of the frozen weights).
_TRAIN_FORWARDS = {"full_fine_tune": 3, "lora": 2}


@dataclasses.dataclass(frozen=True)
class Utilisation:
    """The assumed fractions of a device's dense peak (``compute``) and memory bandwidth (``memory``) a workload
    reaches, and where they come from."""

    compute: float
    memory: float
    why: str


@dataclasses.dataclass(frozen=True)
class Work:
    """A piece of work: its FLOPs, the bytes it reads, and the tokens it yields."""

    flops: float
    bytes: float
    tokens: float


def forward_flops(parameters: float, attention_width: int, context: float) -> float:
    """FLOPs of one token's forward pass attending to ``context`` tokens (see the module docstring)."""
    return 2 * parameters + 2 * attention_width * context


def _used(plan: Plan) -> int:
    return plan.active_parameters or plan.parameters


def prefill_work(plan: Plan, tokens: int, element: float) -> Work:
    """One sequence of ``tokens`` prefilled: every token attends to half of them on average; the weights (of
    ``element`` bytes a parameter) are read once."""
    return Work(tokens * forward_flops(_used(plan), plan.attention_width, tokens / 2), plan.parameters * element,
                tokens)


def decode_work(plan: Plan, sequences: int, context: int, kv_bytes_per_sequence: float, element: float) -> Work:
    """One decode step of ``sequences`` sequences at ``context`` tokens each: the weights read (a mixture of experts:
    at most ``sequences`` tokens' active parameters), each sequence's KV cache read, one token each."""
    weights = min(plan.parameters, sequences * _used(plan)) * element
    return Work(sequences * forward_flops(_used(plan), plan.attention_width, context),
                weights + sequences * kv_bytes_per_sequence, sequences)


def training_work(plan: Plan, use: Literal["full_fine_tune", "lora"]) -> Work:
    """One training step of ``plan.batch x plan.seq`` tokens (``use``: full fine-tuning or LoRA): its forwards and
    backward, and the use's memory read once."""
    tokens = plan.batch * plan.seq
    flops = _TRAIN_FORWARDS[use] * tokens * forward_flops(_used(plan), plan.attention_width, plan.seq / 2)
    return Work(flops, getattr(plan.memory, use), tokens)


def _peak(family: Family, precision: Precision) -> float | None:
    chip = family.chip
    return chip.fp8_dense_tflops if precision == "fp8" else chip.bf16_dense_tflops


def seconds(work: Work, family: Family, devices: int, utilisation: Utilisation, precision: Precision = "bf16"
            ) -> float | None:
    """Time of ``work`` on ``devices`` of ``family`` (see the module docstring); None when the chip's peak or
    bandwidth is not sourced."""
    peak, bandwidth = _peak(family, precision), family.chip.bandwidth_tb_s
    if peak is None or bandwidth is None:
        return None
    share = devices / family.devices_per_chip
    compute = work.flops / (share * peak * 1e12 * utilisation.compute)
    memory = work.bytes / (share * bandwidth * 1e12 * utilisation.memory)
    return max(compute, memory)


def usd_per_million(usd_per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """US dollars a million tokens at ``usd_per_hour`` and ``tokens_per_s`` (None when either is None)."""
    if usd_per_hour is None or not tokens_per_s:
        return None
    return usd_per_hour / (tokens_per_s * 3600) * 1e6


@dataclasses.dataclass(frozen=True)
class Estimate:
    """One family's estimate for a checkpoint: the devices each use runs on (``devices`` for inference), tokens a
    second (:data:`ESTIMATES`), the price an hour of the inference devices, dollars a million tokens of each figure
    (``usd_per_million``: None without a price) and the assumptions."""

    family: str
    devices: int
    train_devices: int
    lora_devices: int
    batch: int
    prefill_tokens_per_s: float | None
    decode_tokens_per_s: float | None
    decode_tokens_per_s_batch: float | None
    train_tokens_per_s: float | None
    lora_train_tokens_per_s: float | None
    usd_per_hour: float | None
    usd_per_million: Mapping[str, float | None]
    assumptions: tuple[str, ...]

    @property
    def usd_per_million_output_tokens(self) -> float | None:
        """Dollars a million decoded tokens at ``batch`` sequences a step."""
        return self.usd_per_million["decode_tokens_per_s_batch"]

    def as_json(self) -> dict[str, Any]:
        """The object ``check --json`` prints under ``cost``, per family."""
        return {"devices": self.devices, "train_devices": self.train_devices, "lora_devices": self.lora_devices,
                "batch": self.batch, **{name: getattr(self, name) for name in ESTIMATES},
                "usd_per_hour": self.usd_per_hour,
                "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
                "usd_per_million": dict(self.usd_per_million), "assumptions": list(self.assumptions)}


def _rate(work: Work, family: Family, devices: int, utilisation: Utilisation) -> float | None:
    time = seconds(work, family, devices, utilisation)
    return None if time is None else work.tokens / time


def _device_price(family: Family) -> float | None:
    per_instance = family.devices_per_instance
    return None if family.usd_per_hour is None or per_instance is None else family.usd_per_hour / per_instance


def estimate(plan: Plan, family: Family, utilisation: Utilisation) -> Estimate:
    """``plan``'s price-performance on ``family`` (see the module docstring), at the plan's sequence and batch."""
    element = DTYPE_BYTES[plan.dtype]
    devices = {use: placement(size, family).cores for use, size in plan.memory.by_use().items()}
    kv_per_sequence = plan.memory.kv_cache / plan.batch
    rates = {
        "prefill_tokens_per_s": _rate(prefill_work(plan, plan.seq, element), family, devices["inference"],
                                      utilisation),
        "decode_tokens_per_s": _rate(decode_work(plan, 1, plan.seq, kv_per_sequence, element), family,
                                     devices["inference"], utilisation),
        "decode_tokens_per_s_batch": _rate(decode_work(plan, plan.batch, plan.seq, kv_per_sequence, element),
                                           family, devices["inference"], utilisation),
        "train_tokens_per_s": _rate(training_work(plan, "full_fine_tune"), family, devices["full_fine_tune"],
                                    utilisation),
        "lora_train_tokens_per_s": _rate(training_work(plan, "lora"), family, devices["lora"], utilisation),
    }
    device_price = _device_price(family)
    used = {"prefill_tokens_per_s": "inference", "decode_tokens_per_s": "inference",
            "decode_tokens_per_s_batch": "inference", "train_tokens_per_s": "full_fine_tune",
            "lora_train_tokens_per_s": "lora"}
    prices = {name: None if device_price is None else device_price * devices[use] for name, use in used.items()}
    chip = family.chip
    price = (f"on-demand {family.instance} at {family.usd_per_hour} USD an hour ({family.region}) shared among its "
             f"{family.devices_per_instance} devices" if device_price is not None
             else f"no price: {family.unsourced.get('usd_per_hour', 'not sourced')}")
    assumptions = (
        f"estimate, not a measurement: {chip.name} at {chip.bf16_dense_tflops} dense BF16 TFLOPS and "
        f"{chip.bandwidth_tb_s} TB/s a chip, {family.devices_per_chip} device(s) a chip",
        f"utilisation {utilisation.compute:.2f} of the dense peak and {utilisation.memory:.2f} of the memory "
        f"bandwidth ({utilisation.why})",
        f"{plan.seq} tokens a sequence, {plan.batch} sequence(s) a decode step and a training step, weights in "
        f"{plan.dtype}; decode at the full {plan.seq} tokens of context",
        price,
    )
    return Estimate(family.name, devices["inference"], devices["full_fine_tune"], devices["lora"], plan.batch,
                    **rates, usd_per_hour=prices["decode_tokens_per_s"],
                    usd_per_million={name: usd_per_million(prices[name], rate) for name, rate in rates.items()},
                    assumptions=assumptions)


@dataclasses.dataclass(frozen=True)
class CalibrationRow:
    """A published measurement beside the estimate: the utilisations it implies (its prefill's compute roofline
    time over its time to first token; its decode step's memory roofline time over its time per output token), the
    estimate's time to first token and per output token at the chosen utilisation, and their errors (estimate over
    measurement, less one)."""

    measurement: Measurement
    implied_compute: float
    implied_memory: float
    ttft_ms: float
    tpot_ms: float

    @property
    def ttft_error(self) -> float:
        return self.ttft_ms / self.measurement.ttft_ms - 1

    @property
    def tpot_error(self) -> float:
        return self.tpot_ms / self.measurement.tpot_ms - 1


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The utilisation defaults chosen from the published measurements, and each measurement beside its estimate."""

    utilisation: Utilisation
    rows: tuple[CalibrationRow, ...]


_ELEMENT = {"bfloat16": DTYPE_BYTES["bfloat16"], "float8": 1}
_PRECISION: Mapping[str, Precision] = {"bfloat16": "bf16", "float8": "fp8"}
_ROOFLINE = Utilisation(1.0, 1.0, "the roofline")


#: Plans a catalogued checkpoint (its id) at a sequence length, one sequence.
PlanOf = Callable[[str, int], Plan]


def _measured(measurement: Measurement, plan_of: PlanOf) -> tuple[Work, Work, Precision]:
    """A measurement's prefill and mean decode step, from its checkpoint planned at its mean decoding context."""
    context = measurement.input_tokens + measurement.output_tokens // 2
    plan = plan_of(measurement.checkpoint, context)
    element = _ELEMENT[measurement.weights_dtype]
    return (prefill_work(plan, measurement.input_tokens, element),
            decode_work(plan, 1, context, plan.memory.kv_cache, element), _PRECISION[measurement.weights_dtype])


def _plan_of(checkpoint: str, seq: int) -> Plan:
    from hf_neuron.checkpoint.plan import plan
    from hf_neuron.checkpoint.source import resolve
    from hf_neuron.compat.checkpoints import CHECKPOINTS_DIR

    return plan(resolve(str(CHECKPOINTS_DIR / checkpoint)), seq=seq, batch=1)


class _Worked(NamedTuple):
    measurement: Measurement
    family: Family
    prefill: Work
    decode: Work
    precision: Precision
    compute: float
    memory: float


def calibrate(hardware: Hardware, plan_of: PlanOf = _plan_of) -> Calibration:
    """The utilisation defaults from ``hardware``'s measurements (see the module docstring), and each measurement
    beside the estimate they give; ``plan_of(checkpoint, seq)`` plans a measurement's checkpoint."""
    worked = []
    for measurement in hardware.measurements:
        family = hardware.families[measurement.family]
        prefill, decode, precision = _measured(measurement, plan_of)
        devices = measurement.devices
        compute_bound = seconds(dataclasses.replace(prefill, bytes=0), family, devices, _ROOFLINE, precision)
        memory_bound = seconds(dataclasses.replace(decode, flops=0), family, devices, _ROOFLINE, precision)
        if compute_bound is None or memory_bound is None:
            continue
        worked.append(_Worked(measurement, family, prefill, decode, precision,
                              compute_bound * 1e3 / measurement.ttft_ms, memory_bound * 1e3 / measurement.tpot_ms))
    if not worked:
        return Calibration(Utilisation(1.0, 1.0, "no published measurement: the roofline"), ())
    names = ", ".join(dict.fromkeys(row.measurement.model for row in worked))
    utilisation = Utilisation(statistics.fmean(row.compute for row in worked),
                              statistics.fmean(row.memory for row in worked),
                              f"the mean of what {len(worked)} published measurements imply: {names}; "
                              "docs/price-performance.md")
    rows = []
    for measurement, family, prefill, decode, precision, compute, memory in worked:
        ttft = seconds(prefill, family, measurement.devices, utilisation, precision)
        tpot = seconds(decode, family, measurement.devices, utilisation, precision)
        assert ttft is not None and tpot is not None  # their family's figures were all there above
        rows.append(CalibrationRow(measurement, compute, memory, ttft * 1e3, tpot * 1e3))
    return Calibration(utilisation, tuple(rows))


@functools.cache
def calibration() -> Calibration:
    """:func:`calibrate` of ``compat/hardware.toml``, once per process."""
    return calibrate(load_hardware())


def estimates(plan: Plan, hardware: Hardware | None = None, utilisation: Utilisation | None = None
              ) -> dict[str, Estimate]:
    """``plan``'s :class:`Estimate` for every family of ``hardware`` (default ``compat/hardware.toml``, at the
    calibrated utilisation)."""
    hardware = hardware or load_hardware()
    utilisation = utilisation or calibration().utilisation
    return {name: estimate(plan, family, utilisation) for name, family in hardware.families.items()}
