"""The matrix suite: ``pytest matrix`` (or ``hf-neuron matrix run``) — see :mod:`hf_neuron.matrix.plugin`."""

pytest_plugins = ("hf_neuron.matrix.plugin",)
