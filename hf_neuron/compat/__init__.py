"""The only code that reads or writes the repository's reviewed data in ``compat/``: one module per file.

:mod:`~.catalog` (the architectures and the catalog groups), :mod:`~.ranking` (which matter most),
:mod:`~.baselines` (what Optimum Neuron supports), :mod:`~.known_failures`, :mod:`~.library_bugs` (bugs of the
libraries that fail cases on every device), :mod:`~.slices` (named selections), :mod:`~.tiny_overrides` and
:mod:`~.tiny_diffusion` (exceptions to the tiny-model rules), :mod:`~.checkpoints` (real checkpoints' configs and
where each was copied from). A malformed file raises an
:class:`~hf_neuron.errors.InputError` naming the file and the problem; :mod:`~.files` says where the folder is.
"""
