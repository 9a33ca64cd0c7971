"""The one error type for bad input, whatever its source: an environment variable, a reviewed data file in
``compat/``, a command-line option, a results directory or a record.

Every message says what was wrong and what to do instead. The command-line tools print it and exit with their
bad-input status; the matrix's pytest plugin turns it into a usage error. Subclasses add where it came from.
"""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """Input from a user, the environment or a data file is wrong; the message says what, and what to do."""
