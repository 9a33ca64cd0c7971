"""The ``audio`` group: transformers' speech-to-text, audio-text-to-text and text-to-audio models, built tiny with
their own feature extractor and fed deterministic synthetic sounds (:mod:`.group` is what the scenarios ask)."""
