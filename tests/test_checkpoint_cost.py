"""A checkpoint's estimated price-performance (``hf-neuron check --cost``): each formula held to a case worked out by
hand, the calibration to two hand-made measurements, and every catalogued checkpoint's estimate to the roofline of
``compat/hardware.toml``'s figures (the bound computed here from the data file, not by the estimator)."""

from __future__ import annotations

import datetime
import math
from typing import Any

import pytest

from hf_neuron.checkpoint.cost import (
    Utilisation,
    Work,
    calibrate,
    decode_work,
    estimate,
    estimates,
    forward_flops,
    prefill_work,
    seconds,
    usd_per_million,
)
from hf_neuron.checkpoint.plan import DTYPE_BYTES, Memory, Plan, plan
from hf_neuron.checkpoint.source import resolve
from hf_neuron.compat.hardware import Chip, Family, Hardware, Measurement, Source, load_hardware

_ROOFLINE = Utilisation(1.0, 1.0, "the roofline")


def _family(*, price: float | None = None, devices_per_chip: int = 4) -> Family:
    chip = Chip("T", "trainium", bf16_dense_tflops=100, fp8_dense_tflops=200, memory_gib=96, bandwidth_tb_s=1,
                sources={}, unsourced={})
    return Family("t", chip, devices_per_chip, instance="t.big", chips_per_instance=2, usd_per_hour=price,
                  region=None if price is None else "r", sources={}, unsourced={})


def _plan(*, active: int | None = None, batch: int = 2) -> Plan:
    """1e9 parameters in bfloat16 (2e9 bytes of weights), 1e8 bytes of KV cache for 2 sequences of 1000 tokens."""
    memory = Memory(inference=2_100_000_000, full_fine_tune=16_000_000_000, lora=2_500_000_000,
                    weights=2_000_000_000, kv_cache=100_000_000, activations=0, adapter_parameters=0)
    return Plan(1_000_000_000, active, "bfloat16", memory, {}, seq=1000, batch=batch, lora_rank=16,
                attention_width=1000)


def test_forward_flops_by_hand() -> None:
    assert forward_flops(10, 3, 4) == 2 * 10 + 2 * 3 * 4


def test_the_time_of_work_is_the_slower_of_its_two_rooflines() -> None:
    family = _family()  # 100 TFLOPS and 1 TB/s a chip, 4 devices a chip: 2 devices have half of it
    work = Work(flops=1e14, bytes=1e12, tokens=1)
    assert seconds(work, family, 2, Utilisation(0.5, 0.25, "")) == pytest.approx(8.0)  # memory: 1e12 / (0.5e12 x .25)
    assert seconds(work, family, 2, Utilisation(0.1, 1.0, "")) == pytest.approx(20.0)  # compute: 1e14 / (0.5e14 x .1)
    assert seconds(Work(2e14, 0, 1), family, 4, _ROOFLINE, "fp8") == pytest.approx(1.0)  # 200 TFLOPS at FP8
    unsourced = Family("u", Chip("U", "gpu", None, None, 80, 1, {}, {}), 1, None, None, None, None, {}, {})
    assert seconds(work, unsourced, 1, _ROOFLINE) is None


def test_prefill_decode_and_a_mixture_of_experts_read_by_hand() -> None:
    found = _plan()
    prefill = prefill_work(found, 1000, 2)
    assert (prefill.flops, prefill.bytes, prefill.tokens) == (1000 * (2e9 + 2 * 1000 * 500), 2e9, 1000)
    decode = decode_work(found, 2, 1000, 5e7, 2)
    assert (decode.flops, decode.bytes, decode.tokens) == (2 * (2e9 + 2 * 1000 * 1000), 2e9 + 2 * 5e7, 2)
    moe = _plan(active=100_000_000)  # a token uses a tenth of the parameters: 2 tokens read at most 2 tenths
    assert decode_work(moe, 2, 1000, 0, 2).bytes == 2 * 100_000_000 * 2
    assert decode_work(moe, 64, 1000, 0, 2).bytes == 1_000_000_000 * 2  # never more than all the weights


def test_usd_per_million_tokens_by_hand() -> None:
    assert usd_per_million(6.88, 80) == pytest.approx(6.88 / (80 * 3600) * 1e6)
    assert usd_per_million(None, 80) is None and usd_per_million(6.88, None) is None


def test_an_estimate_by_hand() -> None:
    found = estimate(_plan(), _family(price=16.0), _ROOFLINE)
    assert (found.devices, found.batch) == (1, 2)  # 2.1e9 bytes fit one 24 GiB device
    # prefill: 2.001e12 FLOPs on a quarter of 100 TFLOPS (0.08004 s) outlast 2e9 bytes at 0.25 TB/s (0.008 s)
    assert found.prefill_tokens_per_s == pytest.approx(1000 / 0.08004)
    # decode, one sequence: 2e9 + 5e7 bytes at 0.25 TB/s (0.0082 s); two: 2e9 + 1e8 bytes (0.0084 s) for 2 tokens
    assert found.decode_tokens_per_s == pytest.approx(1 / 0.0082)
    assert found.decode_tokens_per_s_batch == pytest.approx(2 / 0.0084)
    # full fine-tune: 16e9 bytes need 1 device (ceil(16e9 / 24 GiB)); 3 forwards of 2000 tokens at 500 of context
    assert found.train_devices == 1
    assert found.train_tokens_per_s == pytest.approx(2000 / (3 * 2000 * (2e9 + 2 * 1000 * 500) / 0.25e14))
    # LoRA: 2 forwards (no gradient of the frozen weights), 2.5e9 bytes read a step (0.01 s) under the FLOPs' 0.32 s
    assert (found.lora_devices, found.lora_train_tokens_per_s) == (1, pytest.approx(2000 / 0.32016))
    # 16 USD an hour for 8 devices: 2 USD an hour for the one used
    assert found.usd_per_hour == 2.0
    assert found.usd_per_million_output_tokens == pytest.approx(2.0 / (2 / 0.0084 * 3600) * 1e6)
    assert "estimate, not a measurement" in found.assumptions[0]
    assert estimate(_plan(), _family(), _ROOFLINE).usd_per_million_output_tokens is None  # no price, no dollars


def test_the_calibration_by_hand() -> None:
    """Two measurements of one model, the second twice as slow: the defaults are the mean of what they imply, and
    the estimate is 4/3 of the first and 2/3 of the second."""
    family = _family()
    source = Source("s", "https://example.com", datetime.date(2026, 12, 6), "a page")
    measured = [Measurement("m", "c", "t", 4, "bfloat16", 1000, 2, ttft_ms=ttft, tpot_ms=tpot, source="s")
                for ttft, tpot in ((1000.0, 10.0), (2000.0, 20.0))]
    hardware = Hardware({"s": source}, {"T": family.chip}, {"t": family}, tuple(measured))
    found = calibrate(hardware, plan_of=lambda checkpoint, seq: _plan(batch=1))
    compute = 1000 * forward_flops(1e9, 1000, 500) / 1e14  # the prefill on a whole chip at its peak: 20.01 ms
    memory = (2e9 + 1e8) / 1e12  # a decode step: the weights and the KV cache of one sequence, 2.1 ms
    assert found.utilisation.compute == pytest.approx((compute / 1.0 + compute / 2.0) / 2)
    assert found.utilisation.memory == pytest.approx((memory / 0.010 + memory / 0.020) / 2)
    first, second = found.rows
    assert (first.ttft_error, second.ttft_error) == (pytest.approx(1 / 3), pytest.approx(-1 / 3))
    assert (first.tpot_error, second.tpot_error) == (pytest.approx(1 / 3), pytest.approx(-1 / 3))


def _over_the_roofline(found: Plan, utilisation: Utilisation | None = None) -> list[str]:
    """Each figure of ``found``'s estimates faster than the bound the data file's figures allow on its devices:
    prefill and training by the dense BF16 peak over 2 FLOPs a used parameter a forward (3 forwards a training step,
    2 for LoRA), decode by that and by the bandwidth over the weights' bytes a step reads at least."""
    over = []
    used = found.active_parameters or found.parameters
    element = DTYPE_BYTES[found.dtype]
    for name, row in estimates(found, utilisation=utilisation).items():
        chip = load_hardware().families[name].chip
        per_chip = load_hardware().families[name].devices_per_chip
        if chip.bf16_dense_tflops is None or chip.bandwidth_tb_s is None:
            continue
        peak, bandwidth = chip.bf16_dense_tflops * 1e12 / per_chip, chip.bandwidth_tb_s * 1e12 / per_chip
        read = min(found.parameters, found.batch * used) * element  # the weights a decode step reads at least
        compute = row.devices * peak / (2 * used)
        bounds = {"prefill_tokens_per_s": compute,
                  "decode_tokens_per_s": min(row.devices * bandwidth / (used * element), compute),
                  "decode_tokens_per_s_batch": min(row.devices * bandwidth * found.batch / read, compute),
                  "train_tokens_per_s": row.train_devices * peak / (3 * 2 * used),
                  "lora_train_tokens_per_s": row.lora_devices * peak / (2 * 2 * used)}
        over += [f"{name} {figure}: {getattr(row, figure):.4g} > {bound:.4g}"
                 for figure, bound in bounds.items() if not getattr(row, figure) <= bound * (1 + 1e-9)]
    return over


def test_a_utilisation_over_one_breaks_the_roofline() -> None:
    llama = plan(resolve("compat/checkpoints/meta-llama/Llama-3.1-8B"))
    assert _over_the_roofline(llama) == []
    assert len(_over_the_roofline(llama, Utilisation(1.5, 1.5, "more than the hardware has"))) >= 5
    assert len(_over_the_roofline(plan(resolve("compat/checkpoints/meta-llama/Llama-3.1-8B"), batch=8),
                                  Utilisation(1.5, 1.5, "more than the hardware has"))) >= 5


@pytest.mark.slow
def test_no_catalogued_checkpoint_is_estimated_over_its_roofline() -> None:
    from hf_neuron.compat.checkpoints import load_checkpoints

    over: dict[str, Any] = {}
    for checkpoint in load_checkpoints():
        found = plan(resolve(str(checkpoint.config_path)))
        rows = estimates(found)
        assert all(row.decode_tokens_per_s and math.isfinite(row.decode_tokens_per_s) for row in rows.values())
        if problems := _over_the_roofline(found):
            over[checkpoint.id] = problems
    assert over == {}
