"""FSDP2 (`fully_shard`) on 2 reference devices: the loss curve of a tiny Llama matches the single-process one."""

from __future__ import annotations

from typing import Any

import pytest
from _helpers_distributed import launch, rank_results, succeeded

pytestmark = pytest.mark.distributed

STEPS = 4

# Each rank: the single-process run on the whole batches (on its device), then the FSDP2 run on its half of each.
FSDP_CURVE = f"""
import json, torch, torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from hf_neuron.tiny.transformers.models import build_model

dist.init_process_group("neuron")
rank, world = dist.get_rank(), dist.get_world_size()
dev = torch.device("neuron", torch.neuron.current_device())
generator = torch.Generator().manual_seed(1)
batches = [torch.randint(0, 100, (2 * world, 16), generator=generator) for _ in range({STEPS})]

def train(model, rows_of):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for batch in batches:
        rows = rows_of(batch).to(dev)
        loss = model(input_ids=rows, labels=rows).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return losses

single = train(build_model("llama", seed=0).train().to(dev), lambda batch: batch)
sharded = build_model("llama", seed=0).train().to(dev)
for layer in sharded.model.layers:
    fully_shard(layer)
fully_shard(sharded)
local = train(sharded, lambda batch: batch.chunk(world)[rank])
for loss in local:
    dist.all_reduce(loss, op=dist.ReduceOp.AVG)  # the loss of the whole batch: the mean of equal-sized halves
weight = sharded.model.embed_tokens.weight
json.dump({{
    "single": [loss.item() for loss in single], "fsdp": [loss.item() for loss in local],
    "sharded": isinstance(weight, DTensor) and weight.to_local().shape[0] * world == weight.shape[0],
    "device": str(weight.device),
}}, open(f"rank{{rank}}.json", "w"))
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def curves(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("fsdp")
    succeeded(launch(directory, FSDP_CURVE))
    return rank_results(directory)


def test_fsdp2_loss_curve_matches_the_single_process_one(curves: list[dict[str, Any]]) -> None:
    for rank, curve in enumerate(curves):
        assert len(curve["fsdp"]) == STEPS
        assert max(abs(a - b) for a, b in zip(curve["fsdp"], curve["single"], strict=True)) <= 1e-5, f"rank {rank}"
        assert curve["single"][-1] < curve["single"][0], "the run does not train: the comparison would prove little"


def test_fsdp2_shards_the_parameters_on_each_device(curves: list[dict[str, Any]]) -> None:
    for rank, curve in enumerate(curves):
        assert curve["sharded"] is True
        assert curve["device"] == f"neuron:{rank}"
