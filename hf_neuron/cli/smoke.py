"""``hf-neuron smoke``: train a tiny model for a few steps on ``neuron`` and print device, backend and loss."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "smoke"]


def smoke(steps: int, model_type: str) -> int:
    """Train a tiny ``model_type`` for ``steps`` AdamW steps on ``neuron:0``; 0 when the loss went down."""
    import torch

    import hf_neuron
    from hf_neuron.backends import NO_NEURON_DEVICE
    from hf_neuron.tiny.transformers.models import build_model

    info = hf_neuron.backend()
    if info.kind == "none":
        print(f"{NO_NEURON_DEVICE} ({info.reason})", file=sys.stderr)
        return 1
    model = build_model(model_type, seed=0)
    torch.nn.Module.to(model, "neuron").train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    torch.manual_seed(0)
    batch = torch.randint(4, model.config.vocab_size, (4, 32), device="neuron")
    device = next(model.parameters()).device
    print(f"backend: {info}")
    print(f"model: tiny {model_type} ({sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters) on {device}")
    losses = []
    for step in range(1, steps + 1):
        loss = model(batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        print(f"step {step}: loss {losses[-1]:.4f}")
    went_down = losses[-1] < losses[0]
    print("loss went down: " + ("yes" if went_down else "NO"))
    return 0 if went_down else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``smoke`` command."""
    parser = subparsers.add_parser("smoke", help="train a tiny model for a few steps on the neuron device")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--model-type", default="llama")
    parser.set_defaults(func=lambda args: smoke(args.steps, args.model_type))
