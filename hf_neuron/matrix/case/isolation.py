"""How one case is kept from taking the run down: worker processes, a per-case watchdog, crash forensics.

Design. Cases run in pytest-xdist worker processes (``-n N``), several cases per worker, not one process per case:

* a **crash** (segfault, ``os.abort()``, the kernel's out-of-memory kill) ends only the worker. The controller's
  ``pytest_handlecrashitem`` records the case it was running as ``crashed`` (with the fatal signal, and the Python
  stack :mod:`faulthandler` wrote to the worker's crash log), xdist starts a replacement worker and gives it the
  rest of the dead worker's cases (the runner allows one restart per case: ``--max-worker-restart``);
* a **hang** is cut by :class:`TimeLimit`: ``SIGALRM`` raises :class:`CaseTimeout` in the case's thread after the
  limit (the case is recorded as ``timeout`` and the worker goes on); if the thread is stuck in native code and does
  not come back within a grace period, a watchdog thread records the timeout itself, with the stack it is stuck in,
  and ends the process: the controller then finds the record and does not count a crash;
* a worker **dies with the controller** (``PR_SET_PDEATHSIG``), so a killed run leaves no orphan that could
  write a record after a resumed run has started the same case again; workers write no core dumps.

Why not a process per case: a fresh process pays for ``import torch, transformers`` and the reference device on
every case. Measured on the 2-core machine this was built on (shared, so loaded): the runner's own cost per case
in a worker is 5-8 ms (``scripts/bench_matrix.py --work 0 --archs 200``: 400 no-op cases in 3.1 s with ``-n 1``,
start-up included), while a Python process that imports torch and transformers and touches the reference device
takes 1.3 s idle and about 5 s under load, more than a tiny model's ``load`` or ``forward`` case (0.1-0.3 s).
A crash costs one replacement worker (under a second, plus torch's import on its first real case), and crashes
are rare. The price of sharing a worker, state leaking from one case into the next, is bounded by giving every
case freshly loaded models and a fixed seed, and by starting and ending every attempt with autocast off on every
device type (:func:`autocast_off`): a ``torch.autocast`` instance saves the state it replaces on itself, so one
instance entered twice (a model's autocast-wrapped forward calling itself again: TRL's fused LM head through
``base_model`` on Llama 4, where ``base_model`` is the model) leaves autocast on when the inner call raises, and the
worker's next case computed its float32 reference under bf16 autocast.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import itertools
import os
import re
import resource
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, Any, NamedTuple

from hf_neuron.matrix.case.capture import frame_name, relative_paths

__all__ = [
    "STUCK_EXIT_CODE",
    "CaseTimeout",
    "FatalError",
    "TimeLimit",
    "autocast_off",
    "describe_exit",
    "grace_seconds",
    "harden_worker",
    "read_fatal_error",
]

#: Exit status of a worker that the watchdog ended after recording a stuck case as ``timeout``.
STUCK_EXIT_CODE = 75
_PR_SET_PDEATHSIG = 1
_FAULTHANDLER_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+ in (?P<function>\S+)')


class CaseTimeout(BaseException):
    """The case ran past its time limit (a BaseException, so that ``except Exception`` in a scenario cannot eat it).

    ``frame`` is where the case was when the alarm went off.
    """

    def __init__(self, frame: FrameType | None = None) -> None:
        super().__init__()
        self.frame = frame


def grace_seconds(limit: float) -> float:
    """How long after the limit the watchdog waits for :class:`CaseTimeout` to land before ending the process."""
    return min(30.0, max(1.0, 0.1 * limit))


def _raise_timeout(signum: int, frame: FrameType | None) -> None:
    raise CaseTimeout(frame)


class TimeLimit:
    """``with TimeLimit(seconds, on_stuck):`` raises :class:`CaseTimeout` in this thread after ``seconds``.

    If the thread is still inside the block :func:`grace_seconds` later (stuck in native code, or it swallowed the
    exception), ``on_stuck`` is called from a watchdog thread with the frame the thread is in, and the process
    ends with :data:`STUCK_EXIT_CODE`. ``SIGALRM`` is only used from the main thread; elsewhere only the
    watchdog acts.
    """

    def __init__(self, seconds: float, on_stuck: Callable[[FrameType | None], None]) -> None:
        self._seconds = seconds
        self._on_stuck = on_stuck
        self._use_alarm = threading.current_thread() is threading.main_thread()
        self._caller = threading.get_ident()
        self._finished = threading.Event()
        self._verdict = threading.Lock()  # whoever takes it first decides: the block finished, or the process ends
        self._previous: Any = None
        self._watchdog = threading.Thread(target=self._watch, name="hf-neuron-matrix-watchdog", daemon=True)

    def _watch(self) -> None:
        if self._finished.wait(self._seconds + grace_seconds(self._seconds)):
            return
        with self._verdict:
            if self._finished.is_set():
                return
            self._on_stuck(sys._current_frames().get(self._caller))
            os._exit(STUCK_EXIT_CODE)

    def __enter__(self) -> TimeLimit:
        self._watchdog.start()
        if self._use_alarm:
            self._previous = signal.signal(signal.SIGALRM, _raise_timeout)
            signal.setitimer(signal.ITIMER_REAL, self._seconds)
        return self

    def _disarm(self) -> None:
        if self._use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        late: CaseTimeout | None = None
        while True:  # the alarm may go off while disarming it: finish disarming, then report it
            try:
                self._disarm()
                break
            except CaseTimeout as exc:
                late = exc
        with self._verdict:
            self._finished.set()
        self._watchdog.join()
        if late is not None and kind is None:
            raise late


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def harden_worker(crash_log: Path) -> IO[str]:
    """Prepare a worker process: die with its controller, no core dumps, fatal-signal stacks to ``crash_log``.

    Returns the open crash log (keep it open for the life of the process).
    """
    _die_with_parent()
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    crash_log.parent.mkdir(parents=True, exist_ok=True)
    stream = open(crash_log, "w")  # noqa: SIM115 - faulthandler needs it open until the process dies
    faulthandler.enable(file=stream, all_threads=True)
    return stream


class FatalError(NamedTuple):
    """What :mod:`faulthandler` wrote of a worker's death: the message, the crashing frame, the dump."""

    message: str
    frame: str
    dump: str


def read_fatal_error(crash_log: Path) -> FatalError | None:
    """The fatal error :mod:`faulthandler` wrote to ``crash_log``, if any."""
    try:
        dump = crash_log.read_text(errors="replace").strip()
    except FileNotFoundError:
        return None
    if not dump:
        return None
    lines = dump.splitlines()
    message = next((line for line in lines if line.startswith("Fatal Python error")), lines[0])
    current = list(itertools.dropwhile(lambda line: not line.startswith("Current thread"), lines))
    current = list(itertools.takewhile(str.strip, current))  # the crashing thread's block ends at a blank line
    frame = next(
        (frame_name(m["file"], m["function"]) for line in current if (m := _FAULTHANDLER_FRAME.match(line))), ""
    )
    message = relative_paths(message)
    dump_text = relative_paths("\n".join([message, *current]))
    return FatalError(message, frame, dump_text)


def describe_exit(returncode: int | None) -> str:
    """A worker's exit status in words, e.g. ``"killed by signal SIGABRT"``."""
    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        if name == "SIGKILL":
            return "killed by signal SIGKILL (the kernel's out-of-memory killer sends it)"
        return f"killed by signal {name}"
    return f"exited with status {returncode}"


@contextlib.contextmanager
def autocast_off(device: str) -> Iterator[None]:
    """Autocast off on the CPU and on ``device``'s type while the block runs and after it, however it ends (a case
    that raised inside a re-entered ``torch.autocast`` instance left it on), its cached casts dropped. A worker that
    has not imported torch has no autocast state, and is not made to import it."""

    def off() -> None:
        torch = sys.modules.get("torch")
        if torch is None:
            return
        for device_type in sorted({"cpu", torch.device(device).type}):
            torch.set_autocast_enabled(device_type, False)
        torch.clear_autocast_cache()

    off()
    try:
        yield
    finally:
        off()
