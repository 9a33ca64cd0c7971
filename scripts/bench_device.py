"""Benchmark the reference neuron device against plain CPU execution; prints ratios (neuron / CPU).

Cases: a tiny Llama forward (per-op overhead dominates), a compute-bound forward (hidden 1024, 4 layers,
seq 256), a tiny Llama train step (forward, backward, AdamW), and the cost that hf-neuron adds to
``import torch`` with the device off and on (built). Targets from the issue: <= 1.10x compute-bound,
<= 1.5x tiny forward, <= 30 ms import cost when off.

``--op-log`` measures instead what the operator log costs: the same three cases on the device, the log turned off
and on alternately in one process (run it with the switches of the profile to measure, e.g. the ``trainium``
profile's ``HF_NEURON_EMULATOR_DISPATCH=trainium``); it prints the median time of each and their ratio (on / off).

    HF_NEURON_EMULATOR=1 python scripts/bench_device.py [--repeats N] [--op-log]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from collections.abc import Callable

import torch


def _paired_medians(cpu: Callable[[], object], neuron: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median seconds of each, sampled alternately after a warm-up, so load on the machine hits both alike."""
    for _ in range(max(3, repeats // 5)):
        cpu()
        neuron()
    samples: dict[Callable[[], object], list[float]] = {cpu: [], neuron: []}
    for _ in range(repeats):
        for fn in (cpu, neuron):
            start = time.perf_counter()
            fn()
            samples[fn].append(time.perf_counter() - start)
    return statistics.median(samples[cpu]), statistics.median(samples[neuron])


def _llama(hidden: int, layers: int, heads: int, vocab: int = 1000) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 4, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=512,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def _forward_ratio(model: torch.nn.Module, seq: int, repeats: int) -> tuple[float, float]:
    ids = torch.randint(0, model.config.vocab_size, (1, seq))
    on_device = copy.deepcopy(model).to("neuron").eval()
    model.eval()
    device_ids = ids.to("neuron")
    with torch.no_grad():
        return _paired_medians(lambda: model(ids), lambda: on_device(device_ids).logits.cpu(), repeats)


def _train_ratio(model: torch.nn.Module, seq: int, repeats: int) -> tuple[float, float]:
    ids = torch.randint(0, model.config.vocab_size, (2, seq))

    def stepper(m: torch.nn.Module, batch: torch.Tensor) -> Callable[[], object]:
        optimizer = torch.optim.AdamW(m.parameters(), lr=1e-4, foreach=False)

        def step() -> object:
            loss = m(batch, labels=batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            return loss.item()

        return step

    on_device = copy.deepcopy(model).to("neuron").train()
    model.train()
    return _paired_medians(stepper(model, ids), stepper(on_device, ids.to("neuron")), repeats)


_OP_LOG_CASES = ("tiny Llama forward (1 thread)", "tiny Llama train step (1 thread)", "compute-bound forward")


def _op_log_cost(repeats: int) -> int:
    """The three cases on the device with the operator log off and on, alternately in this process; medians, ratio."""
    from hf_neuron.device import runtime

    def paired(fn: Callable[[], object], count: int) -> tuple[float, float]:
        samples: dict[bool, list[float]] = {False: [], True: []}
        for i in range(max(3, count // 5) + count):
            for log in (False, True) if i % 2 == 0 else (True, False):
                runtime.extension().set_op_log(log)
                start = time.perf_counter()
                fn()
                if i >= max(3, count // 5):  # the first rounds warm up
                    samples[log].append(time.perf_counter() - start)
        runtime.extension().set_op_log(False)
        return statistics.median(samples[False]), statistics.median(samples[True])

    torch.set_num_threads(1)
    tiny = _llama(64, 2, 4).to("neuron").eval()
    ids = torch.randint(0, 1000, (1, 16), device="neuron")
    with torch.no_grad():
        rows = [paired(lambda: tiny(ids).logits.cpu(), repeats * 5)]
    model = _llama(64, 2, 4).to("neuron").train()
    batch = torch.randint(0, 1000, (2, 32), device="neuron")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)

    def step() -> object:
        loss = model(batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()

    rows.append(paired(step, repeats * 2))
    torch.set_num_threads(os.cpu_count() or 1)
    big = _llama(1024, 4, 16).to("neuron").eval()
    big_ids = torch.randint(0, 1000, (1, 256), device="neuron")
    with torch.no_grad():
        rows.append(paired(lambda: big(big_ids).logits.cpu(), repeats))
    print("operator log off / on, alternating in one process (median of each)")
    print(f"{'case':40} {'off ms':>9} {'on ms':>9} {'on/off':>7}")
    for name, (off, on) in zip(_OP_LOG_CASES, rows, strict=True):
        print(f"{name:40} {off * 1e3:9.2f} {on * 1e3:9.2f} {on / off:7.3f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--op-log", action="store_true", help="what the operator log costs (log off and on)")
    args = parser.parse_args()
    if not (hasattr(torch, "neuron") and torch.neuron.is_available()):
        print("no neuron device: run with HF_NEURON_EMULATOR=1", file=sys.stderr)
        return 2
    if args.op_log:
        return _op_log_cost(args.repeats)
    rows: list[tuple[str, float, float, str]] = []
    # Tiny models measure per-operator overhead: one thread, so that thread-pool wake-ups under load on a
    # shared machine do not swamp it.
    torch.set_num_threads(1)
    cpu, neuron = _forward_ratio(_llama(64, 2, 4), 16, args.repeats * 5)
    rows.append(("tiny Llama forward (h64, 2 layers, seq 16; 1 thread)", cpu, neuron, "<= 1.50"))
    cpu, neuron = _train_ratio(_llama(64, 2, 4), 32, args.repeats * 2)
    rows.append(("tiny Llama train step (AdamW; 1 thread)", cpu, neuron, "-"))
    torch.set_num_threads(os.cpu_count() or 1)
    cpu, neuron = _forward_ratio(_llama(1024, 4, 16), 256, args.repeats)
    rows.append(("compute-bound forward (h1024, 4 layers, seq 256)", cpu, neuron, "<= 1.10"))

    print(f"{'case':56} {'cpu ms':>9} {'neuron ms':>10} {'ratio':>7}  target")
    for name, cpu_s, neuron_s, target in rows:
        print(f"{name:56} {cpu_s * 1e3:9.2f} {neuron_s * 1e3:10.2f} {neuron_s / cpu_s:7.2f}  {target}")

    print()
    import bench_import  # beside this script

    runs = max(5, args.repeats)
    bench_import.report(bench_import.measure(runs), runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
