"""Tiny local models, tokenizers and datasets built from configs: no hub."""
