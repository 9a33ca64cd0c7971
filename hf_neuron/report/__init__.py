"""The compatibility report: tables from matrix records, rendered as a static site.

One module per job: :mod:`~hf_neuron.report.load` reads and checks records, :mod:`~hf_neuron.compat.baselines` the
baseline, ranking and catalog, :mod:`~hf_neuron.report.status` says how an outcome counts,
:mod:`~hf_neuron.report.tables` computes the numbers with pandas (:mod:`~hf_neuron.report.checkpoints` those of the
checkpoints' cases, which :mod:`~hf_neuron.report.load` splits from the tiny models'),
:mod:`~hf_neuron.report.history` keeps one summary per run, :mod:`~hf_neuron.report.chart` lays out the trend,
:mod:`~hf_neuron.report.render` writes HTML from templates, :mod:`~hf_neuron.report.downloads` the data files, and
:func:`hf_neuron.report.site.build_site` runs them in order; :mod:`~hf_neuron.report.markdown` writes a run's
Markdown summary (GitHub's job summary) and :mod:`~hf_neuron.report.screenshot` a picture of a built site. Importing
this package imports none of them.
"""
