"""Perturbed rank steps and DDP parts for tests/test_diffusion_distributed.py, imported by the ranks (other
processes): rank 1's gradient scaled, both ranks given rank 0's rows, a loss scaled by a random draw (a training step
that draws random numbers), rank 1's shard of a tensor-parallel weight changed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hf_neuron.matrix.scenarios import diffusion

if TYPE_CHECKING:
    import torch


class _ScaledRank(type(diffusion.DDP_PARTS)):  # type: ignore[misc]
    """Diffusion's DDP parts, but rank 1's loss (so its gradient) is scaled by 1.01."""

    def loss(self, replica: torch.nn.Module, model: torch.nn.Module, batch: Any) -> torch.Tensor:
        import torch.distributed as dist

        loss = super().loss(replica, model, batch)
        return loss * 1.01 if dist.is_initialized() and dist.get_rank() == 1 else loss


class _SameRows(type(diffusion.DDP_PARTS)):  # type: ignore[misc]
    """Diffusion's DDP parts, but every rank takes rank 0's rows (a wrong batch split)."""

    def rows(self, batch: Any, rank: int, world: int) -> Any:
        return super().rows(batch, 0, world)


class _NoisyLoss(type(diffusion.DDP_PARTS)):  # type: ignore[misc]
    """Diffusion's DDP parts, but the loss is scaled by a random draw between 1 and 2 (a training step that draws
    random numbers, as a flow-matching head's noise does)."""

    def loss(self, replica: torch.nn.Module, model: torch.nn.Module, batch: Any) -> torch.Tensor:
        import torch

        loss = super().loss(replica, model, batch)
        return loss * (1 + torch.rand((), device=loss.device))


#: DDP parts (``data_parallel(ctx, "_diffusion_perturbed_ranks:scaled_rank")``).
scaled_rank = _ScaledRank()
same_rows = _SameRows()
noisy_loss = _NoisyLoss()


def _perturb_rank_one(model: torch.nn.Module, rank: int) -> None:
    """Rank 1's local shards of the sharded weights, scaled by 1.01 (not the query projection alone: Flux's QK
    RMSNorm normalizes a scaled query away)."""
    import torch
    from torch.distributed.tensor import DTensor

    if rank != 1:
        return
    with torch.no_grad():
        for parameter in model.parameters():
            if isinstance(parameter, DTensor) and parameter.dim() == 2:
                parameter.to_local().mul_(1.01)


def perturbed_shard(request: dict[str, Any], device: str) -> dict[str, Any]:
    """:func:`~hf_neuron.matrix.scenarios.diffusion.tp_rank_step` with rank 1's shard perturbed."""
    return diffusion.tp_rank_step(request, device, change_shard=_perturb_rank_one)
