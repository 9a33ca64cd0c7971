"""Tiny local models, tokenizers and datasets built from configs: no hub.

- :mod:`~hf_neuron.tiny.config`: a tiny config for any transformers ``model_type``, derived generically
  (exceptions only from the reviewed ``compat/tiny_overrides.toml``, read by :mod:`~hf_neuron.tiny.overrides`)
- :mod:`~hf_neuron.tiny.registry`: the generative model types and the class that builds each
- :mod:`~hf_neuron.tiny.models`: build a tiny model with seeded weights; probe that it runs on the CPU
- :mod:`~hf_neuron.tiny.tokenizer`: a byte-level BPE tokenizer with a chat template, trained on the fly
- :mod:`~hf_neuron.tiny.checkpoint`: write a loadable checkpoint directory (weights, tokenizer, configs)
- :mod:`~hf_neuron.tiny.dataset`: a few dozen short chats, as files ``datasets.load_dataset`` reads, or in memory

Importing this package imports nothing heavy; each module imports transformers when it is used.
"""
