"""Benchmark the reference neuron device against plain CPU execution; prints ratios (neuron / CPU).

Cases: a tiny Llama forward (per-op overhead dominates), a compute-bound forward (hidden 1024, 4 layers,
seq 256), a tiny Llama train step (forward, backward, AdamW), a one-operator backward (what autograd's device thread
costs every backward, without a target), and the cost that hf-neuron adds to
``import torch`` with the device off and on (built). Each case is timed in interleaved rounds
(``paired.py``): the median ratio, its 95% interval, and a verdict on the target (:data:`TARGETS`) only when the
interval is clear of it.

``--op-log`` measures instead what the operator log costs: the same three cases on the device, the log turned off
and on, interleaved in one process (run it with the switches of the profile to measure, e.g. the ``trainium``
profile's ``HF_NEURON_EMULATOR_DISPATCH=trainium``); it prints the median of each and the ratio (on / off).

    HF_NEURON_EMULATOR=1 python scripts/bench_device.py [--repeats N] [--op-log]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Callable

import torch
from paired import Comparison, interleaved  # beside this script

#: The targets for the reference device's time over the CPU's (a ratio), each met only when its interval is clear of it.
TARGETS = {"tiny forward": 1.05, "train step": 1.10, "compute-bound forward": 1.02}


def _llama(hidden: int, layers: int, heads: int, vocab: int = 1000) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 4, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=512,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def _forward(name: str, model: torch.nn.Module, seq: int, rounds: int) -> Comparison:
    ids = torch.randint(0, model.config.vocab_size, (1, seq))
    on_device = copy.deepcopy(model).to("neuron").eval()
    model.eval()
    device_ids = ids.to("neuron")
    with torch.no_grad():
        return interleaved(name, lambda: model(ids), lambda: on_device(device_ids).logits.cpu(), rounds)


def _train(name: str, model: torch.nn.Module, seq: int, rounds: int) -> Comparison:
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
    return interleaved(name, stepper(model, ids), stepper(on_device, ids.to("neuron")), rounds)


def _handoff(name: str, rounds: int) -> Comparison:
    """The fixed cost of a backward: a one-operator graph. Autograd runs the backward of every device but the CPU
    (the real backend's and CUDA's included) on a thread of its own, so the call waits for that thread to wake and
    to hand the result back; the CPU's runs on the calling thread."""
    leaves = [torch.ones(4, requires_grad=True), torch.ones(4, device="neuron", requires_grad=True)]
    return interleaved(name, lambda: (leaves[0] * 2).sum().backward(), lambda: (leaves[1] * 2).sum().backward(),
                       rounds)


def _op_log_cost(rounds: int) -> int:
    """The three cases on the device with the operator log off (A) and on (B), interleaved in this process."""
    from hf_neuron.device import runtime

    def logged(fn: Callable[[], object], log: bool) -> Callable[[], object]:
        def run() -> object:
            runtime.extension().set_op_log(log)
            return fn()
        return run

    torch.set_num_threads(1)
    tiny = _llama(64, 2, 4).to("neuron").eval()
    ids = torch.randint(0, 1000, (1, 16), device="neuron")
    model = _llama(64, 2, 4).to("neuron").train()
    batch = torch.randint(0, 1000, (2, 32), device="neuron")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)

    def step() -> object:
        loss = model(batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()

    def forward() -> object:
        with torch.no_grad():
            return tiny(ids).logits.cpu()

    rows = [interleaved("tiny Llama forward (1 thread)", logged(forward, False), logged(forward, True), rounds * 5),
            interleaved("tiny Llama train step (1 thread)", logged(step, False), logged(step, True), rounds * 2)]
    torch.set_num_threads(os.cpu_count() or 1)
    big = _llama(1024, 4, 16).to("neuron").eval()
    big_ids = torch.randint(0, 1000, (1, 256), device="neuron")

    def big_forward() -> object:
        with torch.no_grad():
            return big(big_ids).logits.cpu()

    rows.append(interleaved("compute-bound forward", logged(big_forward, False), logged(big_forward, True), rounds))
    runtime.extension().set_op_log(False)
    print("operator log off (A) / on (B), interleaved in one process: medians, ratio B/A and its 95% interval")
    print(f"{'case':52} {'off ms':>9} {'on ms':>9} {'ratio':>7}")
    for row in rows:
        print(row.line())
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10, help="rounds (the tiny cases run 5x and 2x as many)")
    parser.add_argument("--op-log", action="store_true", help="what the operator log costs (log off and on)")
    args = parser.parse_args()
    if not (hasattr(torch, "neuron") and torch.neuron.is_available()):
        print("no neuron device: run with HF_NEURON_EMULATOR=1", file=sys.stderr)
        return 2
    if args.op_log:
        return _op_log_cost(args.repeats)
    # Tiny models measure per-operator overhead: one thread, so that thread-pool wake-ups under load on a
    # shared machine do not swamp it.
    torch.set_num_threads(1)
    rows: list[tuple[Comparison, float | None]] = [
        (_forward("tiny Llama forward (h64, 2 layers, seq 16; 1 thread)", _llama(64, 2, 4), 16, args.repeats * 5),
         TARGETS["tiny forward"]),
        (_train("tiny Llama train step (AdamW; 1 thread)", _llama(64, 2, 4), 32, args.repeats * 2),
         TARGETS["train step"]),
        (_handoff("one-op backward (autograd's device thread; no target)", args.repeats * 50), None)]
    torch.set_num_threads(os.cpu_count() or 1)
    rows.append((_forward("compute-bound forward (h1024, 4 layers, seq 256)", _llama(1024, 4, 16), 256,
                          args.repeats), TARGETS["compute-bound forward"]))
    print("CPU (A) / reference device (B), interleaved: medians, ratio B/A and its 95% interval, verdict")
    print(f"{'case':52} {'cpu ms':>9} {'neuron ms':>9} {'ratio':>7}")
    for comparison, target in rows:
        print(comparison.line(target))

    print()
    import bench_import  # beside this script

    runs = max(5, args.repeats)
    bench_import.report(bench_import.measure(runs), runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
