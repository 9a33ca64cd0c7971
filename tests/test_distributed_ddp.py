"""DDP on 2 reference devices: the gradients of one step equal a single-process step on the concatenated batch."""

from __future__ import annotations

import pytest
from _helpers_distributed import launch, rank_results, succeeded

pytestmark = pytest.mark.distributed

# Each rank: the single-process gradients on the whole batch (on its device), then DDP's on its half of the batch.
DDP_STEP = """
import copy, json, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from hf_neuron.tiny.transformers.models import build_model

dist.init_process_group("neuron")
rank, world = dist.get_rank(), dist.get_world_size()
dev = torch.device("neuron", torch.neuron.current_device())
torch.manual_seed(0)

def mlp_loss(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)

def lm_loss(model, ids):
    return model(input_ids=ids, labels=ids).loss

mlp = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
cases = {
    "mlp": (mlp, mlp_loss, (torch.randn(4 * world, 8), torch.randn(4 * world, 4))),
    "llama": (build_model("llama", seed=0), lm_loss, (torch.randint(0, 100, (2 * world, 16)),)),
}
out = {}
for name, (model, loss_of, batch) in cases.items():
    single = copy.deepcopy(model).to(dev)
    loss_of(single, *(b.to(dev) for b in batch)).backward()
    expected = [p.grad.cpu() for p in single.parameters()]
    ddp = DistributedDataParallel(copy.deepcopy(model).to(dev))
    loss_of(ddp, *(b.chunk(world)[rank].to(dev) for b in batch)).backward()
    actual = [p.grad for p in ddp.parameters()]
    out[name] = {
        "max_abs_diff": max((a.cpu() - e).abs().max().item() for a, e in zip(actual, expected)),
        "grad_scale": max(e.abs().max().item() for e in expected),
        "devices": sorted({str(a.device) for a in actual}),
    }
json.dump(out, open(f"rank{rank}.json", "w"))
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def ddp_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    directory = tmp_path_factory.mktemp("ddp")
    succeeded(launch(directory, DDP_STEP))
    return rank_results(directory)


@pytest.mark.parametrize("model", ["mlp", "llama"])
def test_ddp_gradients_equal_a_single_process_step_on_the_whole_batch(model: str, ddp_results: list[dict]) -> None:
    for rank, result in enumerate(ddp_results):
        step = result[model]
        assert step["grad_scale"] > 1e-3, "the reference gradients are too small to compare"
        assert step["max_abs_diff"] <= 1e-6, f"rank {rank}: {step}"
        assert step["devices"] == [f"neuron:{rank}"]
