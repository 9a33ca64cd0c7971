"""One case inside a worker: :mod:`~.execute` runs the scenario on the device (and on the CPU when it does not pass)
under :mod:`~.isolation`'s time limit and crash forensics, observed by :mod:`~.observe`; :mod:`~.capture` describes a
failure, :mod:`~.verdict` turns what happened into the record (the rules are the vocabulary's)."""
