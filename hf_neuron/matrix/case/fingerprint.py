"""Failure fingerprints: the same failure gets the same short hash in every run, on every machine.

A fingerprint hashes three things: the exception type, its message with everything that varies between runs or
devices normalised away (file paths, addresses, device names, tensor shapes, numbers), and the frame that raised it
(``file basename:function``), so that the same failure on neuron and on the CPU has the same fingerprint. Two
architectures that fail in the same library function with the same message share a fingerprint; the report groups by
it.

Records are published, so a failure's message and traceback never carry the paths of the machine that ran it
(:func:`relative_paths`): a file of an installed library reads ``transformers/models/llama/modeling_llama.py``
(relative to site-packages), one of hf-neuron ``hf_neuron/matrix/case/execute.py``, one of the standard library
``threading.py``, and any other absolute path keeps only its file name (``<path>/config.json``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import re
import site
import sysconfig
import traceback
from collections.abc import Iterable
from pathlib import PurePath
from types import CodeType, FrameType, TracebackType

from hf_neuron.compat.files import REPO_ROOT

__all__ = [
    "FailureInfo",
    "describe_exception",
    "describe_stack",
    "fingerprint",
    "frame_name",
    "normalise",
    "relative_paths",
]

#: Longest message kept in a record; the traceback keeps its last :data:`_TRACEBACK_CHARS` characters.
_MESSAGE_CHARS = 2000
_TRACEBACK_CHARS = 8000

# Order matters: paths and addresses contain digits, shapes contain numbers.
_PATH = re.compile(r"(?<![\w.:/])(?:/[^\s/'\"`:,;()\[\]{}<>]+)+/")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_DEVICE = re.compile(r"\b(?:neuron|cpu|cuda|xpu|mps|xla|hpu|npu|privateuseone)(?::\d+)?\b")
_SHAPE_LIST = re.compile(r"[\[(]\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*[\])]")
_SHAPE_X = re.compile(r"\b\d+(?:x\d+)+\b")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.]*\w)")
_SPACE = re.compile(r"\s+")


@dataclasses.dataclass(frozen=True)
class FailureInfo:
    """What a failure was, before it is classified: ``type``, ``message``, raising ``frame``, ``traceback``."""

    type: str
    message: str
    frame: str
    traceback: str

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.type, self.message, self.frame)

    @property
    def text(self) -> str:
        """``"Type: message"``, what classification rules and known-failure patterns are matched against."""
        return f"{self.type}: {self.message}"


def normalise(message: str) -> str:
    """The message with paths, addresses, device names, shapes and numbers replaced by placeholders, whitespace
    collapsed."""
    text = _PATH.sub("<path>/", message)
    text = _ADDRESS.sub("0x<addr>", text)
    text = _DEVICE.sub("<device>", text)
    text = _SHAPE_LIST.sub("<shape>", text)
    text = _SHAPE_X.sub("<shape>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()


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
    return _PATH.sub("<path>/", text)


def fingerprint(type_name: str, message: str, frame: str) -> str:
    """16 hex digits identifying a failure across runs: hash of type, normalised message and raising frame."""
    key = "\x1f".join((type_name, normalise(message), frame))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def frame_name(filename: str, function: str) -> str:
    """``"modeling_llama.py:forward"``: the file's base name and the function."""
    return f"{PurePath(filename).name}:{function}"


def _innermost(tb: TracebackType | None) -> str:
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return frame_name(tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name)


def describe_exception(exc: BaseException) -> FailureInfo:
    """Describe a raised exception: its qualified type, message, the frame that raised it and the traceback."""
    kind = type(exc)
    module = kind.__module__
    name = kind.__qualname__ if module in ("builtins", "__main__") else f"{module}.{kind.__qualname__}"
    text = relative_paths("".join(traceback.format_exception(exc)))
    return FailureInfo(
        type=name,
        message=relative_paths(str(exc))[:_MESSAGE_CHARS],
        frame=_innermost(exc.__traceback__),
        traceback=text[-_TRACEBACK_CHARS:],
    )


def describe_stack(
    type_name: str, message: str, frame: FrameType | None, *, stop_at: CodeType | None = None
) -> FailureInfo:
    """Describe a failure by the stack ``frame`` is in (a case interrupted or stuck), innermost frame last.

    The stack is cut below the first caller running ``stop_at`` (the runner's own frames are not the case's).
    """
    message = relative_paths(message)[:_MESSAGE_CHARS]
    if frame is None:
        return FailureInfo(type_name, message, "", "")
    frames = list(itertools.takewhile(lambda item: item[0].f_code is not stop_at, traceback.walk_stack(frame)))
    stack = relative_paths("".join(traceback.format_list(traceback.StackSummary.extract(reversed(frames)))))
    return FailureInfo(
        type=type_name,
        message=message,
        frame=frame_name(frame.f_code.co_filename, frame.f_code.co_name),
        traceback=stack[-_TRACEBACK_CHARS:],
    )
