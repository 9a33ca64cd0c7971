"""The ``ddp`` scenario: one DistributedDataParallel step on 2 processes equals one process on the whole batch.

The ranks are long-lived: the first ``ddp`` case of a worker starts ``torchrun`` with :data:`WORLD` processes
(``python -m hf_neuron.matrix.scenarios.ddp``), one device each (``neuron:0``, ``neuron:1``; on the CPU, gloo), and
the following cases of that worker hand them a request each, so a case pays for a model load and a step, not for
starting processes and importing torch and transformers (:class:`Ranks`). For a request, each rank loads the case's
tiny checkpoint in train mode without dropout, wraps it in DDP, takes its share of the case's batch (one row each),
runs forward and backward, saves its gradients, and reports its device and its peak device memory. The scenario
compares every rank's gradients with those of a single process on the CPU on the whole batch: DDP averages the
gradients of equal halves, which is the gradient of the whole batch's mean loss. ``find_unused_parameters`` is on,
so architectures that leave some parameters without a gradient in a step (mixture-of-experts routing) reduce the
rest correctly. The step's labels are the model's group's; it does not apply to a model without a training loss
(the ranks report the group's reason instead of stepping).

A rank that fails takes the whole group down (the ``neuron`` backend's failure handling): the case records its
error, and the next case starts new ranks. A request that does not finish in time ends the ranks too.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from hf_neuron.backends import neuron_module
from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult, compare_named, worst_of

if TYPE_CHECKING:
    import torch

__all__ = ["LAUNCH_TIMEOUT_S", "WORLD", "Ranks", "ddp"]

#: Processes (and devices) of the run.
WORLD = 2
#: Seconds the ranks may take to start and run one request before they are ended (the case's limit also applies).
LAUNCH_TIMEOUT_S = 300.0
_POLL_S = 0.05
_STOP = "stop"


def _gradients(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}


def _whole_batch_gradients(ctx: CaseContext) -> dict[str, torch.Tensor]:
    """A single process's gradients on the CPU, on the case's whole batch."""
    from hf_neuron.matrix.scenarios.text_models import load_model, model_inputs, sample_ids, training_inputs

    model = load_model(ctx, "cpu", train=True)
    inputs = model_inputs(model, sample_ids(ctx, model))
    model(**training_inputs(model, inputs)).loss.backward()
    return _gradients(model)


def _write_atomically(path: Path, data: Any) -> None:
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    staging.write_text(json.dumps(data))
    os.replace(staging, path)


class Ranks:
    """:data:`WORLD` long-lived ranks on one device type, serving requests through files in a control directory.

    ``req-N.json`` (written by the scenario) -> rank 0 reads it and broadcasts it -> every rank runs it ->
    ``done-N.json`` (written by rank 0 with every rank's report). The ranks end on a ``stop`` request, when their
    parent process is gone, or when :meth:`close` kills them.
    """

    def __init__(self, device_type: str, workdir: Path) -> None:
        from hf_neuron.device.distributed.launch import torchrun

        self.device_type = device_type
        self.control = Path(tempfile.mkdtemp(prefix=f"ddp-{device_type}-", dir=workdir))
        self._log: IO[str] = open(self.control / "ranks.log", "w")  # noqa: SIM115 - the ranks' stderr, for errors
        command = torchrun("-m", __name__, str(self.control), device_type, str(os.getpid()), nproc=WORLD)
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._log, text=True,
                                         start_new_session=True)
        self._next = 0

    def alive(self) -> bool:
        return self._process.poll() is None

    def _failure(self) -> RuntimeError:
        from hf_neuron.device.distributed.launch import root_cause

        self.close()
        stderr = (self.control / "ranks.log").read_text(errors="replace")
        return RuntimeError(f"the {WORLD}-process DDP run failed (exit {self._process.returncode}): "
                            f"{root_cause(stderr)}")

    def run(self, request: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
        """Run ``request`` on every rank; their reports, by rank. Raises with the ranks' error when they fail, and
        ends them when the request does not finish within ``timeout`` seconds (or the caller is interrupted)."""
        number, self._next = self._next, self._next + 1
        done = self.control / f"done-{number}.json"
        _write_atomically(self.control / f"req-{number}.json", request)
        deadline = time.monotonic() + timeout
        finished = False
        try:
            while not done.exists():
                if not self.alive():
                    raise self._failure()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the {WORLD}-process DDP run took more than {timeout:g} s")
                time.sleep(_POLL_S)
            finished = True
        finally:
            if not finished:
                self.close()  # a rank may still be inside the step: these ranks cannot serve another request
        reports: list[dict[str, Any]] = json.loads(done.read_text())
        return reports

    def close(self) -> None:
        """End the ranks (and anything they started)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()
        self._log.close()


_ranks: dict[str, Ranks] = {}


def _close_all() -> None:
    for ranks in _ranks.values():
        ranks.close()


atexit.register(_close_all)


def _serving(device_type: str, workdir: Path) -> Ranks:
    """The ranks of this process for ``device_type``, started if there are none alive."""
    ranks = _ranks.get(device_type)
    if ranks is None or not ranks.alive():
        ranks = _ranks[device_type] = Ranks(device_type, workdir)
    return ranks


def ddp(ctx: CaseContext) -> ScenarioResult:
    """Every rank's gradients after one DDP step equal a single process's on the whole batch (float32 tolerance);
    the details name each rank's device and peak device memory, as the ranks report them."""
    import torch

    device_type = torch.device(ctx.device).type
    if device_type == "neuron" and neuron_module().device_count() < WORLD:
        return ScenarioResult.untested(
            f"ddp needs {WORLD} neuron devices, this process sees {neuron_module().device_count()} "
            "(the reference device: set HF_NEURON_EMULATOR_DEVICES=2)", "devices"
        )
    ctx.checkpoint  # noqa: B018 - build it once here, before the ranks read it
    out = ctx.workdir / "ddp" / f"{ctx.model_type}-{device_type}"
    out.mkdir(parents=True, exist_ok=True)
    request = {"model_type": ctx.model_type, "group": ctx.group, "workdir": str(ctx.workdir), "seed": ctx.seed,
               "out": str(out)}
    reports = _serving(device_type, ctx.workdir).run(request, LAUNCH_TIMEOUT_S)
    if (reason := reports[0].get("no_training_loss")) is not None:
        return ScenarioResult.skipped(reason)
    expected = _whole_batch_gradients(ctx)
    results = [
        compare_named(torch.load(out / f"rank{rank}.pt"), expected, f"rank {rank}'s DDP gradient of",
                      reference="a single process's on the whole batch")
        for rank in range(WORLD)
    ]
    return worst_of(results).with_details({"ranks": reports})


def _rank_step(request: dict[str, Any], device: str) -> dict[str, Any]:
    """This rank's share of a request: DDP forward and backward on its rows; saves its gradients (on the CPU) and
    reports its rank, device and peak device memory (or, for a model without a training loss, why, without a
    step)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from hf_neuron.matrix.scenarios.text_models import (
        load_model,
        model_inputs,
        no_training_loss,
        sample_ids,
        training_inputs,
    )

    on_neuron = device.startswith("neuron")
    if on_neuron:
        neuron_module().reset_peak_memory_stats(device)
    ctx = CaseContext(model_type=request["model_type"], group=request["group"], scenario="ddp", device=device,
                      workdir=Path(request["workdir"]), seed=int(request["seed"]))
    model = load_model(ctx, device, train=True)
    if (reason := no_training_loss(model)) is not None:
        return {"rank": dist.get_rank(), "no_training_loss": reason}
    rows = sample_ids(ctx, model).chunk(dist.get_world_size())[dist.get_rank()]
    inputs = model_inputs(model, rows)
    replica = DistributedDataParallel(model, find_unused_parameters=True)  # lives until backward has reduced
    replica(**training_inputs(model, inputs)).loss.backward()
    torch.save({name: grad.cpu() for name, grad in _gradients(model).items()},
               Path(request["out"]) / f"rank{dist.get_rank()}.pt")
    peak = int(neuron_module().max_memory_allocated(device)) if on_neuron else None
    return {"rank": dist.get_rank(), "device": str(next(model.parameters()).device), "peak_memory_bytes": peak}


def _next_request(control: Path, number: int, parent: int) -> dict[str, Any] | str:
    """Rank 0: wait for request ``number`` (a stop when the parent process is gone)."""
    path = control / f"req-{number}.json"
    while not path.exists():
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            return _STOP
        time.sleep(_POLL_S)
    request: dict[str, Any] | str = json.loads(path.read_text())
    return request


def _serve(control: Path, device_type: str, parent: int) -> None:
    """One rank of :class:`Ranks`: join the group, then run requests until told to stop."""
    import torch.distributed as dist

    local_rank = int(os.environ["LOCAL_RANK"])
    device = f"neuron:{local_rank}" if device_type == "neuron" else "cpu"
    dist.init_process_group("neuron" if device_type == "neuron" else "gloo")
    number = 0
    while True:
        box = [_next_request(control, number, parent) if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        request = box[0]
        if request == _STOP or not isinstance(request, dict):
            break
        report = _rank_step(request, device)
        reports: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(reports, report)
        if dist.get_rank() == 0:
            _write_atomically(control / f"done-{number}.json", reports)
        number += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    _serve(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
