"""The exit statuses of every ``hf-neuron`` command, defined once.

====  =========================================================================================================
0     done, and nothing it judged failed
1     done, and something failed: a matrix case or an upstream test on neuron that the CPU does not fail the same
      way, a stale catalog under ``--check``, a broken setup (``doctor``), a smoke run whose loss did not go down
2     bad input: an unknown name, a bad option or environment value, a malformed data file or record, a results
      directory that holds another run; the message says what was wrong and what to do, and nothing was written
3     the run did not finish: some selected cases have no record (``hf-neuron matrix run --resume`` continues it)
4     nothing to run, as configured: ``hf-neuron upstream --configured`` found no source tree of the suite's tests in
      the settings (the message names the setting that would give one); nothing was written
====  =========================================================================================================
"""

from __future__ import annotations

__all__ = ["EXIT_FAILURES", "EXIT_INCOMPLETE", "EXIT_OK", "EXIT_SKIPPED", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
EXIT_SKIPPED = 4
