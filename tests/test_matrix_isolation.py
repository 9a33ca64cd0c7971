"""Isolation pieces: the per-case time limit (interrupt, then end a stuck process after recording it), reading a
crashed worker's fatal-error dump, and describing how a worker died."""

from __future__ import annotations

import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from hf_neuron.matrix.case.isolation import (
    STUCK_EXIT_CODE,
    CaseTimeout,
    TimeLimit,
    autocast_off,
    describe_exit,
    read_fatal_error,
)


def _never_stuck(frame: object) -> None:
    raise AssertionError("the watchdog should not act")


def test_a_slow_block_is_interrupted_where_it_was() -> None:
    start = time.monotonic()
    with pytest.raises(CaseTimeout) as caught, TimeLimit(0.2, _never_stuck):
        time.sleep(5)
    assert 0.2 <= time.monotonic() - start < 1.0
    assert caught.value.frame is not None
    assert caught.value.frame.f_code.co_name == "test_a_slow_block_is_interrupted_where_it_was"


def test_a_quick_block_leaves_no_alarm_behind() -> None:
    previous = signal.getsignal(signal.SIGALRM)
    with TimeLimit(0.2, _never_stuck):
        pass
    time.sleep(0.4)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is previous


def test_except_exception_in_a_scenario_cannot_swallow_the_timeout() -> None:
    with pytest.raises(CaseTimeout), TimeLimit(0.1, _never_stuck):  # noqa: PT012 - the scenario is the block
        try:
            time.sleep(5)
        except Exception:  # noqa: BLE001 - what careless scenario code does
            print("swallowed")


STUCK = textwrap.dedent(
    """
    import signal, sys, time
    from hf_neuron.matrix.case.isolation import TimeLimit

    def on_stuck(frame):
        print("stuck in", frame.f_code.co_name, flush=True)

    def native_wait():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # as if inside a C call
        time.sleep(30)

    with TimeLimit(0.2, on_stuck):
        native_wait()
    print("not reached")
    """
)


def test_a_stuck_block_is_reported_then_its_process_ends() -> None:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", STUCK], capture_output=True, text=True, timeout=30)
    assert done.returncode == STUCK_EXIT_CODE
    assert done.stdout == "stuck in native_wait\n"
    assert time.monotonic() - start < 10


ABORT = textwrap.dedent(
    """
    import faulthandler, os, sys
    faulthandler.enable(file=open(sys.argv[1], "w"), all_threads=True)

    def load_weights():
        os.abort()

    load_weights()
    """
)


def test_a_fatal_error_dump_gives_message_and_crashing_frame(tmp_path: Path) -> None:
    log = tmp_path / "gw0.log"
    done = subprocess.run([sys.executable, "-c", ABORT, str(log)], capture_output=True, timeout=30)
    assert done.returncode == -signal.SIGABRT
    info = read_fatal_error(log)
    assert info is not None
    assert info.frame == "<string>:load_weights"
    assert info.message == "Fatal Python error: Aborted"
    assert info.dump.startswith("Fatal Python error: Aborted\nCurrent thread")
    assert read_fatal_error(tmp_path / "missing.log") is None


def test_a_fatal_error_dump_names_files_without_this_machines_paths(tmp_path: Path) -> None:
    site_packages = sysconfig.get_paths()["purelib"]
    log = tmp_path / "gw1.log"
    log.write_text(
        "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n"
        f'  File "{site_packages}/torch/nn/functional.py", line 12 in linear\n'
        f'  File "{tmp_path}/scenario.py", line 3 in forward\n'
    )
    info = read_fatal_error(log)
    assert info is not None and info.frame == "functional.py:linear"
    assert 'File "torch/nn/functional.py", line 12 in linear' in info.dump
    assert 'File "<path>/scenario.py", line 3 in forward' in info.dump
    assert str(tmp_path) not in info.dump and site_packages not in info.dump


@pytest.mark.parametrize(
    ("returncode", "words"),
    [(-6, "killed by signal SIGABRT"), (-11, "killed by signal SIGSEGV"), (3, "exited with status 3"),
     (-9, "killed by signal SIGKILL (the kernel's out-of-memory killer sends it)"), (None, "exit status unknown")],
)
def test_describe_exit(returncode: int | None, words: str) -> None:
    assert describe_exit(returncode) == words


@pytest.mark.usefixtures("neuron")
def test_autocast_left_on_by_a_raising_case_is_off_for_the_next() -> None:
    """One ``torch.autocast`` instance entered twice restores the inner state on the outer exit: a forward that
    re-enters its own autocast-wrapped self and raises leaves autocast on, as TRL's fused head on Llama 4 did (the
    next case's float32 reference then ran under bf16). Each attempt starts and ends with it off."""
    import torch

    instance = torch.autocast("neuron", dtype=torch.bfloat16)

    def reentering(depth: int) -> None:
        with instance:
            if depth:
                reentering(depth - 1)
            raise ValueError("the inner call raised")

    with pytest.raises(ValueError, match="the inner call raised"):
        reentering(1)
    assert torch.is_autocast_enabled("neuron"), "the leak this guards against: autocast stays on"

    def case() -> None:
        assert not torch.is_autocast_enabled("neuron")
        torch.set_autocast_enabled("cpu", True)
        raise ValueError("the case raised")

    with pytest.raises(ValueError, match="the case raised"), autocast_off("neuron:0"):
        case()
    assert not torch.is_autocast_enabled("neuron") and not torch.is_autocast_enabled("cpu")
