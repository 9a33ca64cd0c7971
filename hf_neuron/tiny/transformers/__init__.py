"""Tiny transformers models (the text groups of the catalog), built from each config class's own defaults: no hub."""
