"""The `neuron` c10d backend: registration, and every collective on neuron tensors and objects, right on every rank."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.distributed as dist
from _helpers import run
from _helpers_distributed import launch, rank_results, succeeded

# Each rank runs every collective and writes, per check, the values (and device) it ends up with.
COLLECTIVES = """
import json, torch, torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

dev = torch.device("neuron", torch.neuron.current_device())
dist.init_process_group(device_id=dev)  # no backend: the accelerator's default
rank, world = dist.get_rank(), dist.get_world_size()
out = {"backend": dist.get_backend_config(), "group": type(dist.group.WORLD).__name__, "device": str(dev)}

def keep(name, *tensors):
    out[name] = [t.tolist() for t in tensors]
    out[name + ".devices"] = sorted({str(t.device) for t in tensors})

def full(value, n=2):
    return torch.full((n,), float(value), device=dev)

t = torch.arange(4.0, device=dev) + rank; dist.all_reduce(t); keep("all_reduce", t)
t = full(rank + 1); dist.all_reduce(t, op=dist.ReduceOp.AVG); keep("all_reduce_avg", t)
t = full(rank + 1); dist.all_reduce(t, op=dist.ReduceOp.MAX); keep("all_reduce_max", t)
t = (torch.arange(6.0, device=dev).reshape(2, 3) * (rank + 1)).t(); dist.all_reduce(t); keep("all_reduce_strided", t)
t = full(rank + 1); dist.all_reduce(t, async_op=True).wait(); keep("all_reduce_async", t)
t = full(rank); dist.broadcast(t, src=1); keep("broadcast", t)
t = full(rank + 1); dist.reduce(t, dst=0, op=dist.ReduceOp.AVG)
if rank == 0:
    keep("reduce_avg", t)
chunks = [torch.empty(2, device=dev) for _ in range(world)]
dist.all_gather(chunks, full(rank)); keep("all_gather", *chunks)
flat = torch.empty(2 * world, device=dev); dist.all_gather_into_tensor(flat, full(rank)); keep("all_gather_flat", flat)
rows = torch.empty(world, 3, device=dev)
dist.all_gather_into_tensor(rows, full(rank, 3).reshape(1, 3)); keep("all_gather_rows", rows)
t = torch.empty(2, device=dev); dist.reduce_scatter_tensor(t, torch.arange(4.0, device=dev) * (rank + 1))
keep("reduce_scatter", t)
t = torch.empty(2, device=dev)
dist.reduce_scatter_tensor(t, torch.arange(4.0, device=dev) * (rank + 1), op=dist.ReduceOp.AVG)
keep("reduce_scatter_avg", t)
t = torch.empty(2, device=dev)
dist.reduce_scatter_tensor(t, torch.arange(4.0, device=dev) * (rank + 1), op=dist._make_nccl_premul_sum(0.5))
keep("reduce_scatter_premul", t)
t = torch.empty(2, device=dev); dist.reduce_scatter(t, [full(rank + 10 * k) for k in range(world)])
keep("reduce_scatter_list", t)
t = torch.empty(4, device=dev); dist.all_to_all_single(t, torch.arange(4.0, device=dev) + 10 * rank)
keep("all_to_all_single", t)
outs = [torch.empty(1, device=dev) for _ in range(world)]
dist.all_to_all(outs, [full(10 * rank + k, 1) for k in range(world)]); keep("all_to_all", *outs)
gathered = [torch.empty(2, device=dev) for _ in range(world)] if rank == 0 else None
dist.gather(full(rank), gathered, dst=0)
if rank == 0:
    keep("gather", *gathered)
t = torch.empty(2, device=dev); dist.scatter(t, [full(k + 5) for k in range(world)] if rank == 0 else None, src=0)
keep("scatter", t)
t = full(rank)
if rank == 0:
    dist.send(t + 7, dst=1)
else:
    dist.recv(t, src=0)
keep("send_recv", t)
big, received = full(rank, 1 << 20), torch.empty(1 << 20, device=dev)  # 4 MiB both ways at once
works = [dist.isend(big, 1 - rank), dist.irecv(received, 1 - rank)]
for work in works:
    work.wait()
keep("isend_irecv", received[:2])
with dist._coalescing_manager(device=dev, async_ops=True) as manager:
    a, b = full(rank + 1), full(rank + 1, 3)
    dist.all_reduce(a); dist.all_reduce(b)
manager.wait(); keep("coalesced", a, b)
keep("functional_all_reduce", funcol.all_reduce(full(rank + 1), "sum", dist.group.WORLD).wait())
mesh = init_device_mesh("neuron", (world,))
sharded = distribute_tensor(torch.arange(8.0, device=dev).reshape(4, 2), mesh, [Shard(0)])
keep("dtensor", sharded.to_local(), sharded.full_tensor())
pair = dist.new_group([0, 1])
t = full(rank + 1); dist.all_reduce(t, group=pair); keep("subgroup_all_reduce", t)
dist.barrier(device_ids=[dev.index])  # as accelerate's wait_for_everyone calls it

objects = [{"from": rank, "items": [rank, "x"]}] if rank == 0 else [None]
dist.broadcast_object_list(objects, src=0); out["broadcast_object_list"] = objects
everyone = [None] * world; dist.all_gather_object(everyone, ("rank", rank)); out["all_gather_object"] = everyone
collected = [None] * world if rank == 0 else None; dist.gather_object({"r": rank}, collected, dst=0)
out["gather_object"] = collected
mine = [None]; dist.scatter_object_list(mine, [f"for {k}" for k in range(world)] if rank == 0 else None, src=0)
out["scatter_object_list"] = mine
json.dump(out, open(f"rank{rank}.json", "w"))
dist.destroy_process_group()
"""

# check -> what every rank must hold (rank -> value when it differs per rank); only on rank 0 for rooted results.
EXPECTED: dict[str, Any] = {
    "all_reduce": [[1.0, 3.0, 5.0, 7.0]],
    "all_reduce_avg": [[1.5, 1.5]],
    "all_reduce_max": [[2.0, 2.0]],
    "all_reduce_strided": [[[0.0, 9.0], [3.0, 12.0], [6.0, 15.0]]],
    "all_reduce_async": [[3.0, 3.0]],
    "broadcast": [[1.0, 1.0]],
    "all_gather": [[0.0, 0.0], [1.0, 1.0]],
    "all_gather_flat": [[0.0, 0.0, 1.0, 1.0]],
    "all_gather_rows": [[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]],
    "reduce_scatter": {0: [[0.0, 3.0]], 1: [[6.0, 9.0]]},
    "reduce_scatter_avg": {0: [[0.0, 1.5]], 1: [[3.0, 4.5]]},
    "reduce_scatter_premul": {0: [[0.0, 1.5]], 1: [[3.0, 4.5]]},
    "reduce_scatter_list": {0: [[1.0, 1.0]], 1: [[21.0, 21.0]]},
    "all_to_all_single": {0: [[0.0, 1.0, 10.0, 11.0]], 1: [[2.0, 3.0, 12.0, 13.0]]},
    "all_to_all": {0: [[0.0], [10.0]], 1: [[1.0], [11.0]]},
    "scatter": {0: [[5.0, 5.0]], 1: [[6.0, 6.0]]},
    "send_recv": {0: [[0.0, 0.0]], 1: [[7.0, 7.0]]},
    "isend_irecv": {0: [[1.0, 1.0]], 1: [[0.0, 0.0]]},
    "coalesced": [[3.0, 3.0], [3.0, 3.0, 3.0]],
    "functional_all_reduce": [[3.0, 3.0]],
    "subgroup_all_reduce": [[3.0, 3.0]],
    "dtensor": {0: [[[0.0, 1.0], [2.0, 3.0]], [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]],
                1: [[[4.0, 5.0], [6.0, 7.0]], [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]]},
}
ROOTED = {"reduce_avg": [[1.5, 1.5]], "gather": [[0.0, 0.0], [1.0, 1.0]]}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("collectives")
    succeeded(launch(directory, COLLECTIVES))
    return rank_results(directory)


def test_backend_is_registered_for_neuron_tensors() -> None:
    assert "neuron" in dist.Backend.backend_list
    assert dist.Backend.default_device_backend_map["neuron"] == "neuron"
    assert dist.Backend.backend_capability["neuron"] == ["neuron"]
    assert torch._C._get_accelerator().type == "neuron"


def test_backend_is_not_registered_without_the_reference_device() -> None:
    result = run(
        "import torch.distributed as dist; print('neuron' in dist.Backend.backend_list)", {"HF_NEURON_EMULATOR": "0"}
    )
    assert result.stdout.strip() == "False", result.stderr


@pytest.mark.distributed
def test_init_process_group_without_backend_picks_neuron(results: list[dict[str, Any]]) -> None:
    for rank, result in enumerate(results):
        assert (result["backend"], result["group"], result["device"]) == (
            "neuron:neuron", "NeuronProcessGroup", f"neuron:{rank}")


@pytest.mark.distributed
@pytest.mark.parametrize("check", sorted(EXPECTED))
def test_collective_values_on_every_rank(results: list[dict[str, Any]], check: str) -> None:
    for rank, result in enumerate(results):
        expected = EXPECTED[check][rank] if isinstance(EXPECTED[check], dict) else EXPECTED[check]
        assert result[check] == expected, f"rank {rank}"
        assert result[f"{check}.devices"] == [f"neuron:{rank}"], f"rank {rank}: results left the device"


@pytest.mark.distributed
@pytest.mark.parametrize("check", sorted(ROOTED))
def test_rooted_collective_values_on_the_root(results: list[dict[str, Any]], check: str) -> None:
    assert results[0][check] == ROOTED[check]
    assert check not in results[1]


@pytest.mark.distributed
def test_object_collectives(results: list[dict[str, Any]]) -> None:
    for rank, result in enumerate(results):
        assert result["broadcast_object_list"] == [{"from": 0, "items": [0, "x"]}]
        assert result["all_gather_object"] == [["rank", 0], ["rank", 1]]
        assert result["scatter_object_list"] == [f"for {rank}"]
    assert results[0]["gather_object"] == [{"r": 0}, {"r": 1}]
    assert results[1]["gather_object"] is None


def test_the_group_reports_the_device_type_it_serves() -> None:
    """FSDP's sharded state dict asks the group for its device (accelerate's merge-weights test did, on two devices):
    c10d registers no device for a backend that is a ProcessGroup subclass, so the group reports its own."""
    import datetime
    import warnings

    from hf_neuron.device.distributed.process_group import NeuronProcessGroup

    group = NeuronProcessGroup(dist.HashStore(), 0, 1, datetime.timedelta(seconds=30), backend_name="neuron")
    assert group._device_types == [torch.device("neuron")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # _get_pg_default_device says it will be deprecated
        assert dist.distributed_c10d._get_pg_default_device(group) == torch.device("neuron")
