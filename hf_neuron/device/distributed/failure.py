"""A rank that fails brings the whole run down at once, and the launcher names it as the root cause.

Why: a rank that ends while a collective of its own is in flight (DDP launches its gradient all-reduces
asynchronously during backward) blocks in gloo's teardown, waiting for that collective, while its peers wait for it
in another one: the run hangs until the process-group timeout (30 minutes by default), with plain gloo as with this
backend, and the launcher's summary says only "To enable traceback see ...".

What, in a process that has a ``neuron`` process group:

* On an uncaught exception in the main thread, after the usual traceback, the rank claims the run's failure record
  in the rendezvous store (the first rank to fail owns it) and writes its error to the launcher's error file
  (``TORCHELASTIC_ERROR_FILE``, the ``@record`` format, unless ``@record`` wrote it already). A rank that failed
  *after* another (typically "Connection closed by peer") says so in its message and dates its error after the first
  one, so torchrun and ``accelerate launch`` report the first failure as the root cause (they pick the earliest
  error, to the second). It then aborts its groups, runs the exit handlers (``atexit``: logging, trackers) and ends
  with status 1 without the teardown that blocks. Its connections close, its peers' collectives fail at once, they
  go the same way, and the launcher stops the rest (NCCL's asynchronous error handling does the same on CUDA).
* On any other exit (``sys.exit(3)``, the end of the script) with collectives still in flight, the rank gives its
  peers :data:`EXIT_GRACE_S` seconds to join them, then reports "exited with N collectives in flight" the same way
  and ends with status 1. With none in flight, each group drops its gloo backend while Python still runs normally:
  a gloo thread left for the interpreter's finalization can abort the process as it ends.
"""

from __future__ import annotations

import atexit
import dataclasses
import datetime
import json
import os
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

import torch.distributed as dist

__all__ = ["EXIT_GRACE_S", "EXIT_STATUS", "FAILURE_KEY", "Failure", "on_uncaught", "watch"]

#: The exit status of a rank that failed (Python's own for an uncaught exception).
EXIT_STATUS = 1
#: Seconds a rank exiting with collectives in flight waits for its peers to join them.
EXIT_GRACE_S = 30.0
#: The store key holding the first failure of the run (JSON of :class:`Failure`).
FAILURE_KEY = "hf_neuron/first_failure"
_STORE_TIMEOUT = datetime.timedelta(seconds=5)

ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]


@dataclasses.dataclass(frozen=True)
class Failure:
    """Which rank failed, with what (``"RuntimeError: ..."``), and when (seconds since the epoch)."""

    rank: int
    error: str
    timestamp: int


_groups: weakref.WeakSet[Any] = weakref.WeakSet()
_store: dist.Store | None = None
_rank = 0
_lock = threading.Lock()
_installed = False
_failed = False


def _first_failure(mine: Failure) -> Failure:
    """Claim the run's failure record in the store; the failure that claimed it first (``mine`` if unreachable)."""
    if _store is None:
        return mine
    try:
        _store.set_timeout(_STORE_TIMEOUT)
        claimed = _store.compare_set(FAILURE_KEY, "", json.dumps(dataclasses.asdict(mine)))
        return Failure(**json.loads(claimed))
    except Exception:  # noqa: BLE001 - the store's host is gone: this rank cannot know, it reports itself
        return mine


def _record(message: str, callstack: str, timestamp: int) -> None:
    """Write the launcher's error file (torchelastic's ``@record`` format) unless one is there already."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path or os.path.exists(path):
        return
    extra = {"py_callstack": callstack, "timestamp": str(timestamp)}
    with open(path, "w") as file:
        json.dump({"message": {"message": message, "extraInfo": extra}}, file)


def _report(error: str, callstack: str) -> None:
    """Report this rank's ``error`` to the launcher, as the run's first failure or as one after it."""
    global _failed
    _failed = True
    mine = Failure(_rank, error, int(time.time()))
    first = _first_failure(mine)
    if first == mine:
        _record(error, callstack, mine.timestamp)
        return
    print(f"hf-neuron: rank {_rank} stops: rank {first.rank} failed first: {first.error}", file=sys.stderr)
    _record(f"{error} (after rank {first.rank} failed: {first.error})", callstack,
            max(mine.timestamp, first.timestamp + 1))


def _abort() -> None:
    """Abort every ``neuron`` group: their collectives fail instead of blocking (exit handlers may use them)."""
    for group in list(_groups):
        group.abort()


def _end() -> None:
    """End the process now, with :data:`EXIT_STATUS`."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(EXIT_STATUS)


def on_uncaught(error: BaseException) -> None:
    """Report ``error`` and make the exit quick; the process ends once the excepthooks and exit handlers ran."""
    _report(f"{type(error).__name__}: {error}", "".join(traceback.format_exception(error)))
    _abort()
    atexit.register(_end_after_exit_handlers)


def _end_after_exit_handlers() -> None:
    """Registered last, so run first: run the other exit handlers, then end without the blocking teardown."""
    atexit.unregister(_end_after_exit_handlers)
    atexit._run_exitfuncs()
    _end()


def _on_exit() -> None:
    """At a normal exit: end the process if collectives stay in flight past :data:`EXIT_GRACE_S`; else release every
    group's gloo threads before the interpreter finalizes."""
    if _failed:
        return
    deadline = time.monotonic() + EXIT_GRACE_S
    while (pending := sum(group.in_flight() for group in list(_groups))) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pending:
        error = f"exited with {pending} collective(s) in flight that its peers did not join within {EXIT_GRACE_S:g} s"
        print(f"hf-neuron: rank {_rank} {error}: ending the process", file=sys.stderr)
        _report(error, f"rank {_rank} {error}")
        _abort()
        _end()
    for group in list(_groups):
        group.release_at_exit()


def _excepthook(previous: ExceptHook) -> ExceptHook:
    def excepthook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        previous(kind, error, tb)
        if _groups and not isinstance(error, KeyboardInterrupt):
            on_uncaught(error)

    return excepthook


def watch(group: Any, store: dist.Store) -> None:
    """Apply the above to this process while ``group`` (a ``NeuronProcessGroup``) lives.

    The first group watched while none lives (the default group) provides the store and rank of the failure record.
    """
    global _store, _rank, _installed
    with _lock:
        if not _groups:
            _store, _rank = store, group.rank()
        _groups.add(group)
        if not _installed:
            sys.excepthook = _excepthook(sys.excepthook)
            atexit.register(_on_exit)
            _installed = True
