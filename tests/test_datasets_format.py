"""`datasets` hands out tensors on neuron with `with_format("torch", device="neuron")` (no patch needed)."""

from __future__ import annotations

import pytest
import torch


@pytest.mark.usefixtures("neuron")
def test_with_format_torch_on_neuron() -> None:
    from datasets import Dataset

    dataset = Dataset.from_dict({"x": [[1.0, 2.0], [3.0, 4.0]], "y": [0, 1]}).with_format("torch", device="neuron")
    batch = dataset[:2]
    assert batch["x"].device == batch["y"].device == torch.device("neuron:0")
    assert torch.equal(batch["x"].cpu(), torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
