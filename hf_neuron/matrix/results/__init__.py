"""A run's results: :mod:`~.store` writes and reads the results directory (manifest, one JSON line per case),
:mod:`~.environment` computes the records' environment block, :mod:`~.merge` joins shards, :mod:`~.summary` says
what a run came to."""
