"""One case inside a worker: :mod:`~.execute` runs the scenario on the device (and on the CPU when it does not pass)
under :mod:`~.isolation`'s time limit and crash forensics; :mod:`~.fingerprint` describes a failure,
:mod:`~.classify` names its class, :mod:`~.verdict` turns what happened into the record."""
