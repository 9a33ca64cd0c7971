"""The ``ddp`` scenario: one DistributedDataParallel step on 2 processes equals one process on the whole batch.

The scenario launches torchrun with :data:`WORLD` processes, one device each (``neuron:0``, ``neuron:1``; on the
CPU re-run, the CPU with gloo). Each process runs this module (``python -m hf_neuron.matrix.scenarios.ddp``): it
loads the case's tiny checkpoint in train mode without dropout, wraps it in DDP, takes its share of the case's batch
(one row each), runs forward and backward, and saves its gradients. The scenario compares every rank's gradients
with those of a single process on the CPU on the whole batch: DDP averages the gradients of equal halves, which is
the gradient of the whole batch's mean loss. ``find_unused_parameters`` is on, so architectures that leave some
parameters without a gradient in a step (mixture-of-experts routing) reduce the rest correctly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hf_neuron.backends import neuron_module
from hf_neuron.matrix.scenarios.contract import (
    CaseContext,
    ScenarioResult,
    compare_named,
)

if TYPE_CHECKING:
    import torch

__all__ = ["LAUNCH_TIMEOUT_S", "WORLD", "ddp"]

#: Processes (and devices) of the run.
WORLD = 2
#: Seconds the 2-process run may take before it is killed (the matrix's case time limit also applies).
LAUNCH_TIMEOUT_S = 300.0


def _gradients(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


def _whole_batch_gradients(ctx: CaseContext) -> dict[str, torch.Tensor]:
    """A single process's gradients on the CPU, on the case's whole batch."""
    from hf_neuron.matrix.scenarios.text_models import (
        load_model,
        model_inputs,
        sample_ids,
    )

    model = load_model(ctx, "cpu", train=True)
    inputs = model_inputs(model, sample_ids(ctx, model))
    model(**inputs, labels=inputs["input_ids"]).loss.backward()
    return _gradients(model)


def ddp(ctx: CaseContext) -> ScenarioResult:
    """Every rank's gradients after one DDP step equal a single process's on the whole batch (float32 tolerance)."""
    import torch

    from hf_neuron.device.distributed.launch import root_cause, run, torchrun

    on_neuron = torch.device(ctx.device).type == "neuron"
    if on_neuron and neuron_module().device_count() < WORLD:
        return ScenarioResult.skipped(
            f"ddp needs {WORLD} neuron devices, this process sees {neuron_module().device_count()} "
            "(the reference device: set HF_NEURON_EMULATOR_DEVICES=2)"
        )
    ctx.checkpoint  # noqa: B018 - build it once here, before the ranks read it
    out = ctx.workdir / "ddp" / f"{ctx.model_type}-{ctx.device.partition(':')[0]}"
    out.mkdir(parents=True, exist_ok=True)
    case = {"model_type": ctx.model_type, "group": ctx.group, "device": ctx.device, "workdir": str(ctx.workdir),
            "seed": ctx.seed, "out": str(out)}
    try:
        result = run(torchrun("-m", __name__, json.dumps(case), nproc=WORLD), timeout=LAUNCH_TIMEOUT_S)
    except subprocess.TimeoutExpired as timeout:
        raise TimeoutError(f"the {WORLD}-process DDP run took more than {LAUNCH_TIMEOUT_S:g} s") from timeout
    if result.returncode != 0:
        cause = root_cause(result.stderr)
        raise RuntimeError(f"the {WORLD}-process DDP run failed (exit {result.returncode}): {cause}")
    expected = _whole_batch_gradients(ctx)
    results = [
        compare_named(torch.load(out / f"rank{rank}.pt"), expected, f"rank {rank}'s DDP gradient of",
                      reference="a single process's on the whole batch")
        for rank in range(WORLD)
    ]
    failed = [result for result in results if result.outcome != "passed"]
    return failed[0] if failed else max(results, key=lambda result: result.parity["value"] if result.parity else 0.0)


def _rank_step(case: dict[str, str]) -> None:
    """One rank of the run: DDP forward and backward on this rank's rows; saves its gradients (on the CPU)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from hf_neuron.matrix.scenarios.text_models import (
        load_model,
        model_inputs,
        sample_ids,
    )

    local_rank = int(os.environ["LOCAL_RANK"])
    on_neuron = torch.device(case["device"]).type == "neuron"
    device = f"neuron:{local_rank}" if on_neuron else "cpu"
    dist.init_process_group("neuron" if on_neuron else "gloo")
    ctx = CaseContext(model_type=case["model_type"], group=case["group"], scenario="ddp", device=device,
                      workdir=Path(case["workdir"]), seed=int(case["seed"]))
    model = load_model(ctx, device, train=True)
    rows = sample_ids(ctx, model).chunk(dist.get_world_size())[dist.get_rank()]
    inputs = model_inputs(model, rows)
    replica = DistributedDataParallel(model, find_unused_parameters=True)  # lives until backward has reduced
    replica(**inputs, labels=inputs["input_ids"]).loss.backward()
    torch.save({name: grad.cpu() for name, grad in _gradients(model).items()},
               Path(case["out"]) / f"rank{dist.get_rank()}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    _rank_step(json.loads(sys.argv[1]))
