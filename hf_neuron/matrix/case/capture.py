"""Capturing a failure: the :class:`~hf_neuron.vocabulary.failures.Failure` of an exception or of a stuck or
interrupted stack, with only paths a published record may hold.

Records are published, so a failure's message and traceback never carry the paths of the machine that ran it
(:func:`relative_paths`): a file of an installed library reads ``transformers/models/llama/modeling_llama.py``
(relative to site-packages), one of hf-neuron ``hf_neuron/matrix/case/execute.py``, one of the standard library
``threading.py``, and any other absolute path keeps only its file name (``<path>/config.json``). The fingerprint and
the class are the vocabulary's (:func:`hf_neuron.vocabulary.failures.failure`).
"""

from __future__ import annotations

import functools
import itertools
import re
import site
import sysconfig
import traceback
from collections.abc import Iterable
from pathlib import PurePath
from types import CodeType, FrameType, TracebackType

from hf_neuron.compat.files import REPO_ROOT
from hf_neuron.vocabulary.failures import Failure, cut_paths, failure

__all__ = ["MESSAGE_CHARS", "describe_exception", "describe_stack", "frame_name", "relative_paths"]

#: Longest message kept in a record; the traceback keeps its last :data:`_TRACEBACK_CHARS` characters.
MESSAGE_CHARS = 2000
_TRACEBACK_CHARS = 8000


def _library_roots() -> tuple[str, ...]:
    """The directories files are named relative to: hf-neuron's checkout or site-packages, every site-packages of
    this interpreter (the virtual environment's and the user's), and the standard library."""
    paths = sysconfig.get_paths()
    roots = {
        str(REPO_ROOT),  # the directory holding hf_neuron/: the checkout, or site-packages
        paths["purelib"],
        paths["platlib"],
        paths["stdlib"],
        paths["platstdlib"],
        *site.getsitepackages(),
        site.getusersitepackages(),
    }
    return tuple(root.rstrip("/") for root in roots if root.startswith("/") and root.rstrip("/"))


@functools.lru_cache(maxsize=4)
def _roots_pattern(roots: tuple[str, ...]) -> re.Pattern[str]:
    # Longest first: the checkout may hold the virtual environment, whose site-packages must win.
    ordered = sorted(set(roots), key=len, reverse=True)
    return re.compile(r"(?<![\w.:/])(?:" + "|".join(map(re.escape, ordered)) + r")/")


def relative_paths(text: str, roots: Iterable[str] | None = None) -> str:
    """``text`` with no absolute path of this machine: a path under one of ``roots`` (default: hf-neuron's
    checkout, site-packages and the standard library) made relative to it, any other one cut to ``<path>/name``.
    """
    chosen = _library_roots() if roots is None else tuple(root.rstrip("/") for root in roots)
    if chosen:
        text = _roots_pattern(chosen).sub("", text)
    return cut_paths(text)


def frame_name(filename: str, function: str) -> str:
    """``"modeling_llama.py:forward"``: the file's base name and the function."""
    return f"{PurePath(filename).name}:{function}"


def _innermost(tb: TracebackType | None) -> str:
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return frame_name(tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name)


def describe_exception(exc: BaseException, *, outcome: str = "error") -> Failure:
    """The failure of a raised exception: its qualified type, message, the frame that raised it and the traceback."""
    kind = type(exc)
    module = kind.__module__
    name = kind.__qualname__ if module in ("builtins", "__main__") else f"{module}.{kind.__qualname__}"
    text = relative_paths("".join(traceback.format_exception(exc)))
    return failure(name, relative_paths(str(exc))[:MESSAGE_CHARS], _innermost(exc.__traceback__),
                   text[-_TRACEBACK_CHARS:], outcome=outcome)


def describe_stack(
    type_name: str, message: str, frame: FrameType | None, *, outcome: str, stop_at: CodeType | None = None
) -> Failure:
    """The failure of a case that came to ``outcome`` (interrupted or stuck), by the stack ``frame`` is in,
    innermost frame last. The stack is cut below the first caller running ``stop_at`` (the runner's own frames are
    not the case's)."""
    message = relative_paths(message)[:MESSAGE_CHARS]
    if frame is None:
        return failure(type_name, message, outcome=outcome)
    frames = list(itertools.takewhile(lambda item: item[0].f_code is not stop_at, traceback.walk_stack(frame)))
    stack = relative_paths("".join(traceback.format_list(traceback.StackSummary.extract(reversed(frames)))))
    return failure(type_name, message, frame_name(frame.f_code.co_filename, frame.f_code.co_name),
                   stack[-_TRACEBACK_CHARS:], outcome=outcome)
