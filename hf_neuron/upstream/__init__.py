"""The libraries' own test suites on neuron: ``hf-neuron upstream transformers --source DIR --arch ...``.

The stages of a run: :mod:`~.source` (a source tree, checked, fetched, laid out to test the installed library) →
:mod:`~.runner` (one pytest process per architecture and device, the CPU then neuron, with the device plug-ins of
:mod:`hf_neuron.testing`) → :mod:`~.plugin` (inside each, one record per test) → :mod:`~.records` (their schema
and reader) → :mod:`~.summary` (per architecture: counts on each device, neuron-only failures by fingerprint, tests
not applicable on neuron and those that could come off that list). ``hf-neuron upstream`` prints the summaries
(:mod:`hf_neuron.cli.upstream`); the report shows them (:mod:`hf_neuron.report.upstream`).
"""
