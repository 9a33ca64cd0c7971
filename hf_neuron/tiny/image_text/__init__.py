"""Tiny image-text-to-text models (the catalog's ``image-text`` group), built locally: no hub.

One mechanism for every architecture: the tiny config is the generic shrinker's (:mod:`.config`), the image processor
is the architecture's own, sized to the tiny vision tower (:mod:`.image_processor`), the images are synthetic
(:mod:`.images`), and the inputs expand each image placeholder to as many image tokens as the model computes
features (:mod:`.inputs`). The architecture's own processor, when it builds here, is saved for users' pipelines
(:mod:`.processor`). :mod:`.checkpoint` writes it all; :mod:`.decoding` decodes with the reviewed generation
settings. What the generic rules cannot know is reviewed data in
``compat/tiny_image_text.toml`` (:mod:`hf_neuron.compat.tiny_image_text`).
"""
