"""diffusers: a pipeline from tiny local configs runs on neuron (`.to("neuron")`, model offload) like the CPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.usefixtures("neuron")




def _pipeline() -> Any:
    from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

    torch.manual_seed(0)
    unet = UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"),
                       norm_num_groups=4)
    return DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=10))


def _images(pipe: Any) -> np.ndarray:
    return pipe(num_inference_steps=3, generator=torch.Generator().manual_seed(0), output_type="np").images


def test_pipeline_moved_to_neuron_matches_the_cpu() -> None:
    pipe = _pipeline()
    on_cpu = _images(pipe)
    pipe.to("neuron")
    assert pipe.device == torch.device("neuron:0")
    assert next(pipe.unet.parameters()).device == torch.device("neuron:0")
    assert np.abs(_images(pipe) - on_cpu).max() < 1e-5


def test_model_offload_runs_on_the_detected_accelerator() -> None:
    pipe = _pipeline()
    on_cpu = _images(pipe)
    pipe.enable_model_cpu_offload()  # the device comes from diffusers' own detection
    assert pipe._execution_device == torch.device("neuron:0")
    assert np.abs(_images(pipe) - on_cpu).max() < 1e-5
