"""Benchmark the reference neuron device against plain CPU execution; prints ratios (neuron / CPU).

Cases: a tiny Llama forward (per-op overhead dominates), a compute-bound forward (hidden 1024, 4 layers,
seq 256), a tiny Llama train step (forward, backward, AdamW), the same step with its backward on the calling thread
and with every thread on one core, and a one-operator backward (what autograd's device thread costs every backward;
these three without a target), and the
cost that hf-neuron adds to ``import torch`` with the device off and on (built). Each case is timed in interleaved
rounds (``paired.py``): the median ratio, its 95% interval, and a verdict on the target (:data:`TARGETS`) only when
the interval is clear of it.

``--op-log`` measures instead what the operator log costs: the same three cases on the device, the log turned off
and on, interleaved in one process (run it with the switches of the profile to measure, e.g. the ``trainium``
profile's ``HF_NEURON_EMULATOR_DISPATCH=trainium``); it prints the median of each and the ratio (on / off).

``--instructions`` counts instead the tiny cases' instructions under callgrind (valgrind), and with ``--cache-sim``
its simulated cache misses and mispredicted branches: counts, which barely move between runs.

    HF_NEURON_EMULATOR=1 python scripts/bench_device.py [--repeats N] [--op-log | --instructions [--cache-sim]]
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import TypeVar

import torch
from paired import Comparison, interleaved  # beside this script

from hf_neuron import cpus

T = TypeVar("T")

#: The targets for the reference device's time over the CPU's (a ratio), each met only when its interval is clear of it.
TARGETS = {"tiny forward": 1.05, "train step": 1.10, "compute-bound forward": 1.02}
#: Rounds per ``--repeats`` of each case: a tiny step takes milliseconds, so many rounds narrow its interval cheaply.
ROUNDS = {"tiny forward": 20, "train step": 10, "compute-bound forward": 3}


def _llama(hidden: int, layers: int, heads: int, vocab: int = 1000) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 4, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=512,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def _forward_step(model: torch.nn.Module, seq: int, device: str) -> Callable[[], object]:
    """A forward of a copy of `model` on `device` (a batch of one `seq` long), its logits brought to the CPU."""
    torch.manual_seed(1)
    ids = torch.randint(0, model.config.vocab_size, (1, seq), device=device)
    on_device = copy.deepcopy(model).to(device).eval()

    def step() -> object:
        with torch.no_grad():
            return on_device(ids).logits.cpu()

    return step


def _train_step(model: torch.nn.Module, seq: int, device: str) -> Callable[[], object]:
    """A training step of a copy of `model` on `device` (two sequences `seq` long): forward, backward, AdamW."""
    torch.manual_seed(1)
    ids = torch.randint(0, model.config.vocab_size, (2, seq), device=device)
    on_device = copy.deepcopy(model).to(device).train()
    optimizer = torch.optim.AdamW(on_device.parameters(), lr=1e-4, foreach=False)

    def step() -> object:
        loss = on_device(ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()

    return step


#: The tiny cases (per-operator overhead), by their key in TARGETS: their name, their step, and its sequence length.
TINY = {
    "tiny forward": ("tiny Llama forward (h64, 2 layers, seq 16; 1 thread)", _forward_step, 16),
    "train step": ("tiny Llama train step (AdamW; 1 thread)", _train_step, 32),
}


def _tiny_step(case: str, device: str) -> Callable[[], object]:
    _, step, seq = TINY[case]
    return step(_llama(64, 2, 4), seq, device)


def _tiny(case: str, rounds: int) -> Comparison:
    return interleaved(TINY[case][0], _tiny_step(case, "cpu"), _tiny_step(case, "neuron"), rounds)


def _count_child(case: str, device: str, iterations: int) -> int:
    """Under callgrind: the instructions of `iterations` steps only (collection turned on around them)."""
    torch.set_num_threads(1)
    step = _tiny_step(case, device)
    for _ in range(3):
        step()
    subprocess.run(["callgrind_control", "--instr=on", str(os.getpid())], check=True, capture_output=True)
    for _ in range(iterations):
        step()
    subprocess.run(["callgrind_control", "--instr=off", str(os.getpid())], check=True, capture_output=True)
    return 0


#: What ``--cache-sim`` counts beside instructions, by callgrind's events: each a sum of events, with its name.
SIMULATED = {"I1 misses": ("I1mr",), "D1 misses": ("D1mr", "D1mw"), "LL misses": ("ILmr", "DLmr", "DLmw"),
             "mispredicted branches": ("Bcm", "Bim")}


def callgrind_totals(text: str) -> dict[str, int]:
    """The totals of a callgrind output file, by event (``events:`` names them, ``totals:`` counts them)."""
    lines = text.splitlines()
    events = next((line.split()[1:] for line in lines if line.startswith("events:")), None)
    totals = next((line.split()[1:] for line in lines if line.startswith("totals:")), None)
    if events is None or totals is None or len(events) != len(totals):
        raise ValueError("not a callgrind output file: it needs an 'events:' line and a 'totals:' line that match")
    return dict(zip(events, map(int, totals), strict=True))


def _counts(case: str, device: str, iterations: int, cache_sim: bool) -> dict[str, int]:
    """What one step of `case` executes on `device` (instructions, and with `cache_sim` the simulated cache misses
    and mispredicted branches: SIMULATED), counted by callgrind in a fresh interpreter."""
    simulation = ["--cache-sim=yes", "--branch-sim=yes"] if cache_sim else []
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "callgrind.out")
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", *simulation, f"--callgrind-out-file={out}",
             sys.executable, __file__, "--count-child", case, device, str(iterations)],
            check=True, capture_output=True)
        with open(out, encoding="utf-8") as output:
            totals = callgrind_totals(output.read())
    counts = {"instructions": totals["Ir"]}
    if cache_sim:
        counts.update({name: sum(totals[event] for event in events) for name, events in SIMULATED.items()})
    return {name: count // iterations for name, count in counts.items()}


def _instruction_ratios(cache_sim: bool) -> int:
    """The tiny cases' instructions on the device over the CPU's: a count, not a time, so nearly the same on a
    loaded machine as on an idle one, and a change far smaller than a time's interval can resolve shows. It leaves
    out what a time includes beside instructions (waiting for autograd's device thread, caches); `cache_sim` adds
    callgrind's simulated cache misses and mispredicted branches, which tell where a time's excess over the
    instructions' goes (a simulation of a generic cache, not this processor's)."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind (callgrind) is not installed: apt-get install valgrind", file=sys.stderr)
        return 2
    print("per step, counted by callgrind (a count barely moves between runs): CPU, neuron, neuron / CPU")
    for case, iterations in (("tiny forward", 10), ("train step", 3)):
        cpu, neuron = (_counts(case, device, iterations, cache_sim) for device in ("cpu", "neuron"))
        print(f"{TINY[case][0]}  (target for its time: <= {TARGETS[case]:.2f})")
        for name in cpu:
            print(f"  {name:50} {cpu[name]:>12,} {neuron[name]:>12,} {neuron[name] / max(cpu[name], 1):7.3f}")
    return 0


def _on_calling_thread(step: Callable[[], object]) -> Callable[[], object]:
    """`step` with autograd's device threads turned off: the device's backward runs on the calling thread, as the
    CPU's always does (no change on the CPU)."""
    def run() -> object:
        with torch.autograd.set_multithreading_enabled(False):
            return step()
    return run


def _train_on_calling_thread(rounds: int) -> Comparison:
    """The train step with the backward on the calling thread on both sides: what the device's own dispatch costs a
    train step, apart from the hand-off to autograd's device thread and the other core's caches. Not what a user runs,
    so no target."""
    name = "train step, backward on the calling thread (no target)"
    return interleaved(name, _on_calling_thread(_tiny_step("train step", "cpu")),
                       _on_calling_thread(_tiny_step("train step", "neuron")), rounds)


def _threads() -> list[int]:
    """The ids of this process's threads (Linux)."""
    return [int(tid) for tid in os.listdir("/proc/self/task")]


def _set_affinity_of_every_thread(cores: set[int]) -> None:
    """Every thread of this process on `cores`; a thread that ends between the listing and its turn is passed over."""
    for tid in _threads():
        try:
            os.sched_setaffinity(tid, cores)
        except ProcessLookupError:
            continue


def _on_one_core(run: Callable[[], T]) -> T | None:
    """`run` with every thread of this process (autograd's device thread included) on one core, both sides alike;
    None where threads cannot be pinned (not Linux) or only one core is allowed (then nothing would change)."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    if len(allowed) < 2:
        return None
    _set_affinity_of_every_thread({min(allowed)})
    try:
        return run()
    finally:
        _set_affinity_of_every_thread(allowed)


def _train_on_one_core(rounds: int) -> Comparison | None:
    """The train step with every thread on one core: autograd's device thread still takes the device's backward, but
    wakes on the core whose caches hold the forward's results. Apart from the unpinned step, it tells what the core
    the scheduler gives that thread costs from what the hand-off costs. Not what a user runs, so no target."""
    name = "train step, every thread on one core (no target)"
    return _on_one_core(lambda: interleaved(name, _tiny_step("train step", "cpu"), _tiny_step("train step", "neuron"),
                                            rounds))


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
    forward, step = (_tiny_step(case, "neuron") for case in ("tiny forward", "train step"))
    rows = [interleaved("tiny Llama forward (1 thread)", logged(forward, False), logged(forward, True),
                        rounds * ROUNDS["tiny forward"]),
            interleaved("tiny Llama train step (1 thread)", logged(step, False), logged(step, True),
                        rounds * ROUNDS["train step"])]
    torch.set_num_threads(cpus.usable())
    big_forward = _forward_step(_llama(1024, 4, 16), 256, "neuron")
    rows.append(interleaved("compute-bound forward", logged(big_forward, False), logged(big_forward, True),
                            rounds * ROUNDS["compute-bound forward"]))
    runtime.extension().set_op_log(False)
    print("operator log off (A) / on (B), interleaved in one process: medians, ratio B/A and its 95% interval")
    print(f"{'case':52} {'off ms':>9} {'on ms':>9} {'ratio':>7}")
    for row in rows:
        print(row.line())
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10, help="rounds (each case runs ROUNDS times as many)")
    parser.add_argument("--op-log", action="store_true", help="what the operator log costs (log off and on)")
    parser.add_argument("--instructions", action="store_true",
                        help="the tiny cases' instruction counts under callgrind instead of times (needs valgrind)")
    parser.add_argument("--cache-sim", action="store_true",
                        help="with --instructions: callgrind's simulated cache misses and mispredicted branches too "
                             "(about twice as long)")
    parser.add_argument("--count-child", nargs=3, metavar=("CASE", "DEVICE", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cache_sim and not args.instructions:
        parser.error("--cache-sim goes with --instructions")
    if not (hasattr(torch, "neuron") and torch.neuron.is_available()):
        print("no neuron device: run with HF_NEURON_EMULATOR=1", file=sys.stderr)
        return 2
    if args.count_child:
        case, device, steps = args.count_child
        return _count_child(case, device, int(steps))
    if args.op_log:
        return _op_log_cost(args.repeats)
    if args.instructions:
        return _instruction_ratios(args.cache_sim)
    # Tiny models measure per-operator overhead: one thread, so that thread-pool wake-ups under load on a
    # shared machine do not swamp it.
    torch.set_num_threads(1)
    rows: list[tuple[Comparison, float | None]] = [
        (_tiny("tiny forward", args.repeats * ROUNDS["tiny forward"]), TARGETS["tiny forward"]),
        (_tiny("train step", args.repeats * ROUNDS["train step"]), TARGETS["train step"]),
        (_train_on_calling_thread(args.repeats * ROUNDS["train step"]), None)]
    one_core = _train_on_one_core(args.repeats * ROUNDS["train step"])
    if one_core is not None:
        rows.append((one_core, None))
    rows.append((_handoff("one-op backward (autograd's device thread; no target)", args.repeats * 50), None))
    torch.set_num_threads(cpus.usable())
    big = _llama(1024, 4, 16)
    rows.append((interleaved("compute-bound forward (h1024, 4 layers, seq 256)", _forward_step(big, 256, "cpu"),
                             _forward_step(big, 256, "neuron"),
                             args.repeats * ROUNDS["compute-bound forward"]), TARGETS["compute-bound forward"]))
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
