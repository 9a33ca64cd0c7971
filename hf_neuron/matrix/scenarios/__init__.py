"""Scenarios: what a case runs. :mod:`~.contract` says what a scenario receives and returns and how results are
compared with the CPU; :mod:`~.registry` how a scenario is declared (its kind, whether it trains, what it requires,
which groups run it) and how a set of them is loaded; :mod:`~.builtin` is the set the matrix runs by default, one
module per kind: :mod:`~.text` (inference of transformers models), :mod:`~.training` (full and LoRA fine-tuning),
:mod:`~.ddp` (two processes), :mod:`~.diffusion` (denoisers and pipelines); :mod:`~.text_models` is what the
transformers scenarios share."""
