"""The words every layer of hf-neuron shares, defined once: the closed sets, the record schema and the rules built on
them. Below everything that uses it (``compat``, ``tiny``, ``matrix``, ``report``, ``upstream``, ``cli``), it imports
nothing of hf-neuron but :mod:`hf_neuron.errors`, and nothing heavy (no torch, no pandas, no Hugging Face library).

- :mod:`~.outcomes`: what a case or a test came to (:data:`~.outcomes.OUTCOMES`), the CPU's verdict, a case's and an
  architecture's verdict, the report's cell statuses, each with its label.
- :mod:`~.gaps`: why the harness could not test a case.
- :mod:`~.failures`: one failure shape, its fingerprint, the failure classes with the rules that assign them, and the
  one rule of whether the CPU fails the same way (:func:`~.failures.cpu_verdict`).
- :mod:`~.groups`: the model groups, each declared once (the registry), with the names old records and baselines used.
- :mod:`~.scenarios`: what kinds a scenario can be and what the records of each schema say of theirs.
- :mod:`~.records`: the matrix record schema (fields, the typed ``env`` block, validation, how a case counts, which of
  two records of one case wins).
- :mod:`~.jsonl`: the one reader of record files (``*.jsonl`` and ``*.jsonl.gz``, strict or lenient).
- :mod:`~.exits`: the exit statuses of every ``hf-neuron`` command.
"""
