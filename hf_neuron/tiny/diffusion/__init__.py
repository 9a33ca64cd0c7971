"""Tiny diffusers denoiser backbones and two-step pipelines around them, built locally: no hub."""
