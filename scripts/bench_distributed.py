"""Benchmark DDP on the reference device: step time with 1 and 2 processes, and the share of communication.

Each process trains a small Llama with DDP on its own batch (weak scaling: 2 processes do twice the work per step).
A step is forward, backward and AdamW. Synchronised steps alternate with ``no_sync()`` steps (the same computation
without DDP's gradient all-reduce); the communication share is ``(synced - no_sync) / synced``. The collectives are
also timed alone: an all-reduce of all the gradients at once and of 4 MiB, on neuron tensors through the ``neuron``
backend against CPU tensors through a plain gloo group (what the backend adds to gloo).

    HF_NEURON_EMULATOR=1 python scripts/bench_distributed.py [--steps N] [--hidden H] [--layers L] [--seq S]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

RESULT = "RESULT "


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return 1000 * statistics.median(samples)


def _worker(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from transformers import LlamaConfig, LlamaForCausalLM

    dist.init_process_group("neuron")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("neuron", torch.neuron.current_device())
    config = LlamaConfig(vocab_size=1000, hidden_size=args.hidden, intermediate_size=4 * args.hidden,
                         num_hidden_layers=args.layers, num_attention_heads=4, num_key_value_heads=4,
                         attn_implementation="eager")
    torch.manual_seed(0)
    model = DistributedDataParallel(LlamaForCausalLM(config).to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 1000, (args.batch, args.seq), generator=torch.Generator().manual_seed(rank)).to(device)

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    def local_step() -> None:
        with model.no_sync():
            step()

    for _ in range(3):
        step()
        local_step()
    synced, local = [], []
    for _ in range(args.steps):  # alternated, so that load on the machine hits both alike
        synced.append(_median_ms(step, 1))
        local.append(_median_ms(local_step, 1))
    gradient_numel = sum(p.numel() for p in model.parameters())
    gloo = dist.new_group(backend="gloo")
    timings = {"step_ms": statistics.median(synced), "local_step_ms": statistics.median(local),
               "gradient_mib": gradient_numel * 4 / 2**20}
    for name, numel in (("all_reduce_gradients", gradient_numel), ("all_reduce_4mib", 2**20)):
        on_device, on_cpu = torch.ones(numel, device=device), torch.ones(numel)
        timings[f"{name}_neuron_ms"] = _median_ms(functools.partial(dist.all_reduce, on_device), 20)
        timings[f"{name}_gloo_cpu_ms"] = _median_ms(functools.partial(dist.all_reduce, on_cpu, group=gloo), 20)
    if rank == 0:
        print(RESULT + json.dumps({"processes": world, **timings}), flush=True)
    dist.destroy_process_group()


def _launch(args: argparse.Namespace, processes: int) -> dict[str, float]:
    from hf_neuron.device.distributed.launch import root_cause, run, torchrun

    options = [f"--{name}={getattr(args, name)}" for name in ("steps", "hidden", "layers", "batch", "seq")]
    environ = {**os.environ, "HF_NEURON_EMULATOR": "1", "HF_NEURON_EMULATOR_DEVICES": str(max(2, processes))}
    result = run(torchrun(__file__, "--worker", *options, nproc=processes), timeout=1800, env=environ)
    if result.returncode != 0:
        sys.exit(f"{processes}-process run failed: {root_cause(result.stderr)}")
    line = next(line for line in result.stdout.splitlines() if line.startswith(RESULT))
    return json.loads(line.removeprefix(RESULT))


def _report(runs: list[dict[str, float]], args: argparse.Namespace) -> None:
    print(f"Llama hidden {args.hidden}, {args.layers} layers, batch {args.batch} x {args.seq} tokens per process; "
          f"gradients {runs[0]['gradient_mib']:.1f} MiB; medians of {args.steps} steps")
    print(f"{'processes':>9}  {'step ms':>8}  {'no_sync ms':>10}  {'comm share':>10}  {'samples/s':>9}")
    for r in runs:
        share = max(0.0, (r["step_ms"] - r["local_step_ms"]) / r["step_ms"])
        rate = r["processes"] * args.batch / (r["step_ms"] / 1000)
        print(f"{r['processes']:>9}  {r['step_ms']:>8.1f}  {r['local_step_ms']:>10.1f}  {share:>10.0%}  {rate:>9.1f}")
    two = runs[-1]
    print(f"2-process step / 1-process step: {two['step_ms'] / runs[0]['step_ms']:.2f}x")
    for name, label in (("all_reduce_gradients", f"all_reduce {two['gradient_mib']:.1f} MiB"),
                        ("all_reduce_4mib", "all_reduce 4 MiB")):
        print(f"{label} (2 processes): neuron backend {two[f'{name}_neuron_ms']:.2f} ms, "
              f"plain gloo on CPU tensors {two[f'{name}_gloo_cpu_ms']:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args)
    else:
        _report([_launch(args, processes) for processes in (1, 2)], args)


if __name__ == "__main__":
    main()
