"""Scenarios: what a case runs. :mod:`~hf_neuron.matrix.scenarios.contract` says what a scenario receives and
returns and how results are compared with the CPU; :mod:`~hf_neuron.matrix.scenarios.builtin` is the set the matrix
runs by default, one module per kind: :mod:`~.text` (inference of text models), :mod:`~.training` (full and LoRA
fine-tuning), :mod:`~.ddp` (two processes), :mod:`~.diffusion` (denoisers and pipelines)."""
