"""The one error type of the matrix library for bad input: unknown names, malformed data files, bad options."""

from __future__ import annotations

__all__ = ["MatrixInputError"]


class MatrixInputError(ValueError):
    """Input from a user or a reviewed data file is wrong; the message says what and what to do instead.

    The CLI prints it and exits with status 2; the pytest plugin turns it into a ``pytest.UsageError``.
    """
