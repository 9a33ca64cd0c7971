"""A user's checkpoint, planned and sliced: what ``hf-neuron check`` and the matrix's checkpoint cases work from.

:mod:`~hf_neuron.checkpoint.source` finds a checkpoint's config (a ``config.json``, a model folder, a Hub id in the
local Hugging Face cache, a diffusers ``model_index.json``) and what it is; :mod:`~hf_neuron.checkpoint.plan` sizes it
at full size on the meta device (parameters, memory by use, NeuronCores by instance family, from the facts of
:mod:`~hf_neuron.compat.hardware`, placed by :mod:`~hf_neuron.checkpoint.instances`); :mod:`~hf_neuron.checkpoint.cost`
estimates its price-performance on Trainium and GPUs; :mod:`~hf_neuron.checkpoint.quantization` says what a quantized
one does on neuron; :mod:`~hf_neuron.checkpoint.slice` cuts it to a few layers at real width, inside a memory budget,
through the tiny models' one shrinker, and writes it where a matrix case loads it.

Importing this package imports nothing heavy.
"""
