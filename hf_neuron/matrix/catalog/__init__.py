"""Generating the reviewed catalog data from the installed libraries: the architectures (checked with tiny models on
the CPU) and the ranking (from the Hub). :mod:`hf_neuron.compat` reads and writes the files."""
