"""The ``ddp`` scenario: one DistributedDataParallel step on 2 processes equals one process on the whole batch, for
every library (:func:`data_parallel`), and the long-lived ranks that serve it and the other multi-process scenarios
(:class:`Ranks`).

The ranks are long-lived: the first multi-process case of a worker starts ``torchrun`` with :data:`WORLD` processes
(``python -m hf_neuron.matrix.scenarios.ddp``), one device each (``neuron:0``, ``neuron:1``; on the CPU, gloo), and
the following cases of that worker hand them a request each, so a case pays for a model load and a step, not for
starting processes and importing torch and the libraries. A request names the *rank step* every rank runs
(``"step": "module:function"``, called with the request and the rank's device), so the same ranks serve ``ddp`` and,
for diffusion, ``tp``.

What differs between libraries is a library's :class:`DdpParts`, named by the module that defines it as
``DDP_PARTS`` (:func:`parts_named`) (:mod:`~hf_neuron.matrix.scenarios.text_models` for the transformers groups,
:mod:`~hf_neuron.matrix.scenarios.diffusion` for diffusion backbones): how a rank builds the model, the case's whole
batch, a rank's share of it and the loss. The launch, the step and the comparison are here: each rank builds the
model in train mode, wraps it in DDP, takes its share of the case's batch (one row each), runs forward and backward,
saves its gradients, and reports its device and its peak device memory; the scenario compares every rank's gradients
with those of a single process on the CPU on the whole batch: DDP averages the gradients of equal halves, which is
the gradient of the whole batch's mean loss. ``find_unused_parameters`` is on, so architectures that leave some
parameters without a gradient in a step (mixture-of-experts routing) reduce the rest correctly. It does not apply to
a model without a training loss (the ranks report the library's reason instead of stepping). A model that draws random
numbers in its training step (the noise of a flow-matching head, a sampled latent) cannot be held to a single process:
when the comparison fails and a single process's gradients move with nothing but the seed of its step, the case is
untested (gap ``checks``), not failed (:func:`~hf_neuron.matrix.scenarios.contract.unless_random`, the rule of every
comparison with the CPU); the check is only made when the comparison fails, so it costs a passing case nothing.

A rank that fails takes the whole group down (the ``neuron`` backend's failure handling): the case records its
error, and the next case starts new ranks. A request that does not finish in time ends the ranks too.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from hf_neuron.backends import neuron_module
from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult, compare_named, unless_random, worst_of
from hf_neuron.matrix.scenarios.training import gradients

if TYPE_CHECKING:
    import torch

__all__ = ["LAUNCH_TIMEOUT_S", "WORLD", "DdpParts", "Ranks", "data_parallel", "ddp", "fewer_devices", "on_ranks",
           "parts_named", "rank_context", "rank_step"]

#: Processes (and devices) of the run.
WORLD = 2
#: Seconds the ranks may take to start and run one request before they are ended (the case's limit also applies).
LAUNCH_TIMEOUT_S = 300.0
_POLL_S = 0.05
_STOP = "stop"


class DdpParts(Protocol):
    """What a library gives the ``ddp`` scenario: its model, batch, split and loss (``DDP_PARTS`` of its module)."""

    def model(self, ctx: CaseContext, device: str) -> torch.nn.Module:
        """The case's tiny model on ``device``, in train mode, with no training-time randomness."""

    def no_training_loss(self, model: torch.nn.Module) -> str | None:
        """Why ``model`` has no training loss (the scenario does not apply), or None."""

    def batch(self, ctx: CaseContext, model: torch.nn.Module) -> Any:
        """The case's whole batch, on the CPU, the same for every rank and device (``model`` is on the rank's)."""

    def rows(self, batch: Any, rank: int, world: int) -> Any:
        """Rank ``rank``'s equal share of ``batch`` out of ``world``."""

    def loss(self, replica: torch.nn.Module, model: torch.nn.Module, batch: Any) -> torch.Tensor:
        """The mean training loss of ``batch`` (or a share of it) through ``replica`` (``model`` itself, or its DDP
        wrapper), on ``model``'s device."""


def parts_named(name: str) -> DdpParts:
    """The parts ``name`` names: ``module`` (a dotted module name) for its ``DDP_PARTS``, ``module:attribute`` for
    another of its attributes."""
    module, _, attribute = name.partition(":")
    parts: DdpParts = getattr(importlib.import_module(module), attribute or "DDP_PARTS")
    return parts


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
        self.control = Path(tempfile.mkdtemp(prefix=f"ranks-{device_type}-", dir=workdir))
        self._log: IO[str] = open(self.control / "ranks.log", "w")  # noqa: SIM115 - the ranks' stderr, for errors
        command = torchrun("-m", __name__, str(self.control), device_type, str(os.getpid()), nproc=WORLD)
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._log, text=True,
                                         start_new_session=True)
        self._next = 0

    def alive(self) -> bool:
        return self._process.poll() is None

    def _failure(self, what: str) -> Exception:
        from hf_neuron.device.distributed.launch import failed_run

        self.close()
        stderr = (self.control / "ranks.log").read_text(errors="replace")
        return failed_run(f"the {WORLD}-process {what} run", self._process.returncode, stderr)

    def run(self, request: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
        """Run ``request`` (its ``step`` names the rank step) on every rank; their reports, by rank. Raises with the
        ranks' error when they fail, and ends them when the request does not finish within ``timeout`` seconds (or
        the caller is interrupted)."""
        number, self._next = self._next, self._next + 1
        what = str(request.get("what", "multi-process"))
        done = self.control / f"done-{number}.json"
        _write_atomically(self.control / f"req-{number}.json", request)
        deadline = time.monotonic() + timeout
        finished = False
        try:
            while not done.exists():
                if not self.alive():
                    raise self._failure(what)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the {WORLD}-process {what} run took more than {timeout:g} s")
                time.sleep(_POLL_S)
            finished = True
        finally:
            if not finished:
                self.close()  # a rank may still be inside the step: these ranks cannot serve another request
        reports: list[dict[str, Any]] = json.loads(done.read_text())
        return reports

    def close(self) -> None:
        """End the ranks (and anything they started): torchrun's process group and each rank, which torchrun starts
        in a session of its own (a rank stuck in a collective would outlive torchrun)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
        for pid_file in self.control.glob("rank*.pid"):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            pid_file.unlink()
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


def fewer_devices(ctx: CaseContext, scenario: str) -> ScenarioResult | None:
    """Untested (gap ``devices``) when ``ctx`` is on neuron and this process sees fewer than :data:`WORLD` devices;
    else None."""
    import torch

    if torch.device(ctx.device).type == "neuron" and neuron_module().device_count() < WORLD:
        return ScenarioResult.untested(
            f"{scenario} needs {WORLD} neuron devices, this process sees {neuron_module().device_count()} "
            "(the reference device: set HF_NEURON_EMULATOR_DEVICES=2)", "devices"
        )
    return None


def on_ranks(ctx: CaseContext, step: str, what: str, **fields: Any) -> tuple[Path, list[dict[str, Any]]]:
    """Run the rank step ``step`` (``"module:function"``) for ``ctx`` on this worker's ranks of its device type; the
    directory the ranks write to and their reports. The request carries the case and ``fields``; ``what`` names the
    run in its errors."""
    import torch

    device_type = torch.device(ctx.device).type
    ctx.checkpoint  # noqa: B018 - build it once here, before the ranks read it
    out = ctx.scratch_path
    out.mkdir(parents=True, exist_ok=True)
    request = {"step": step, "what": what, "model_type": ctx.model_type, "group": ctx.group, "scenario": ctx.scenario,
               "workdir": str(ctx.workdir), "seed": ctx.seed, "out": str(out), **fields}
    return out, _serving(device_type, ctx.workdir).run(request, LAUNCH_TIMEOUT_S)


def data_parallel(ctx: CaseContext, parts: str) -> ScenarioResult:
    """The ``ddp`` scenario of the library whose :class:`DdpParts` the module ``parts`` defines: every rank's
    gradients after one DDP step equal a single process's on the whole batch (float32 tolerance); the details name
    each rank's device and peak device memory, as the ranks report them."""
    import torch

    if (fewer := fewer_devices(ctx, "ddp")) is not None:
        return fewer
    out, reports = on_ranks(ctx, f"{__name__}:rank_step", "DDP", parts=parts)
    if (reason := reports[0].get("no_training_loss")) is not None:
        return ScenarioResult.skipped(reason)
    if (reason := reports[0].get("unbuildable")) is not None:
        return ScenarioResult.untested(reason, "inputs")
    library = parts_named(parts)
    expected = _whole_batch_gradients(ctx, library)
    results = [
        compare_named(torch.load(out / f"rank{rank}.pt"), expected, f"rank {rank}'s DDP gradient of",
                      reference="a single process's on the whole batch")
        for rank in range(WORLD)
    ]

    def reseeded(seed: int) -> ScenarioResult:
        return compare_named(_whole_batch_gradients(ctx, library, reseed=seed), expected, "the CPU gradient of",
                             reference="the same step's under the case's seed")

    result = unless_random(worst_of(results), reseeded, ctx.seed, "training step",
                           "DDP's halves draw other numbers than one process on the whole batch, so their gradients "
                           "cannot be held to a single process's")
    return result.with_details({"ranks": reports})


def _whole_batch_gradients(ctx: CaseContext, library: DdpParts, *, reseed: int | None = None) -> dict[str, Any]:
    """A single CPU process's gradients on the case's whole batch (with the random state seeded ``reseed`` just before
    the step, when given: :func:`~hf_neuron.matrix.scenarios.contract.unless_random`'s re-run)."""
    import torch

    reference = library.model(ctx, "cpu")
    batch = library.batch(ctx, reference)
    with torch.random.fork_rng(devices=[]):
        if reseed is not None:
            torch.manual_seed(reseed)
        library.loss(reference, reference, batch).backward()
    return gradients(reference)


def ddp(ctx: CaseContext) -> ScenarioResult:
    """The transformers groups' ``ddp``: :func:`data_parallel` with
    :data:`hf_neuron.matrix.scenarios.text_models.DDP_PARTS`."""
    return data_parallel(ctx, "hf_neuron.matrix.scenarios.text_models")


def rank_context(request: dict[str, Any], device: str) -> CaseContext:
    """The case of ``request`` on this rank's ``device``."""
    return CaseContext(model_type=request["model_type"], group=request["group"], scenario=request["scenario"],
                       device=device,
                       workdir=Path(request["workdir"]), seed=int(request["seed"]))


def rank_step(request: dict[str, Any], device: str) -> dict[str, Any]:
    """This rank's share of a ``ddp`` request: DDP forward and backward on its rows; saves its gradients (on the CPU)
    and reports its rank, device and peak device memory (or, for a model without a training loss, why, without a
    step; for a batch the library cannot build or split, why)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from hf_neuron.tiny import UnbuildableInputError

    parts = parts_named(request["parts"])
    on_neuron = device.startswith("neuron")
    if on_neuron:
        neuron_module().reset_peak_memory_stats(device)
    ctx = rank_context(request, device)
    model = parts.model(ctx, device)
    if (reason := parts.no_training_loss(model)) is not None:
        return {"rank": dist.get_rank(), "no_training_loss": reason}
    try:
        rows = parts.rows(parts.batch(ctx, model), dist.get_rank(), dist.get_world_size())
    except UnbuildableInputError as gap:  # the same on every rank: none steps
        return {"rank": dist.get_rank(), "unbuildable": str(gap)}
    replica = DistributedDataParallel(model, find_unused_parameters=True)  # lives until backward has reduced
    parts.loss(replica, model, rows).backward()
    torch.save({name: grad.cpu() for name, grad in gradients(model).items()},
               Path(request["out"]) / f"rank{dist.get_rank()}.pt")
    peak = int(neuron_module().max_memory_allocated(device)) if on_neuron else None
    return {"rank": dist.get_rank(), "device": str(next(model.parameters()).device), "peak_memory_bytes": peak}


def _step_named(name: str) -> Any:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


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
    _write_atomically(control / f"rank{local_rank}.pid", os.getpid())  # for Ranks.close
    device = f"neuron:{local_rank}" if device_type == "neuron" else "cpu"
    dist.init_process_group("neuron" if device_type == "neuron" else "gloo")
    number = 0
    while True:
        box = [_next_request(control, number, parent) if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        request = box[0]
        if request == _STOP or not isinstance(request, dict):
            break
        report = _step_named(request["step"])(request, device)
        reports: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(reports, report)
        if dist.get_rank() == 0:
            _write_atomically(control / f"done-{number}.json", reports)
        number += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    _serve(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
